"""An evaluation from the Python API (and so the CLI) reads its inputs once: the plan checked before Prefect
starts is handed over to the flow that runs in the same process (`agent_eval.plan.eval_plan.HandOver`); a flow
that Prefect starts itself loads its own."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

import pytest

from agent_eval import api, evaluate
from agent_eval.flows import agent_eval_flow
from agent_eval.flows import evaluate as flows_evaluate
from agent_eval.plan import eval_plan as plan
from agent_eval.plan.eval_plan import EvalPlan, EvalRequest, HandOver, prepared
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.agents_for_tests:echo_agent"


@pytest.fixture
def plans_made(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[EvalPlan]]:
    """Every plan `prepare` makes from now on (weakly: a test can see it freed)."""
    made: list[weakref.ref[EvalPlan]] = []
    real = plan.prepare

    def counting(request: EvalRequest) -> EvalPlan:
        result = real(request)
        made.append(weakref.ref(result))
        return result

    for module in (plan, api, flows_evaluate):  # wherever a `prepare` is called from
        monkeypatch.setattr(module, "prepare", counting, raising=False)
    return made


def test_an_evaluation_loads_its_inputs_once_and_frees_them_with_the_run(
    plans_made: list[weakref.ref[EvalPlan]], tmp_path: Path, sqlite_url: str
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "beta"])
    report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    assert (report.summary.total, report.summary.passed) == (2, 2)
    assert len(plans_made) == 1  # it was twice: once to check the input, once more in the flow
    assert plan._HANDED_OVER == {}
    gc.collect()
    assert plans_made[0]() is None  # nothing kept it after the run


def test_a_flow_without_a_handed_over_plan_loads_its_own(
    plans_made: list[weakref.ref[EvalPlan]], tmp_path: Path, sqlite_url: str
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha"])
    request = EvalRequest(paths=[str(eval_file)], agent=AGENT, db_url=sqlite_url)
    report = asyncio.run(agent_eval_flow(request))
    assert report.summary.total == 1
    assert len(plans_made) == 1


def test_a_plan_goes_only_to_its_own_request_object_and_only_once(
    plans_made: list[weakref.ref[EvalPlan]], tmp_path: Path, sqlite_url: str
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha"])
    request = EvalRequest(paths=[str(eval_file)], agent=AGENT, db_url=sqlite_url)
    checked = plan.prepare(request)
    twin = request.model_copy()  # equal, but another object: a flow run Prefect started with the same JSON
    with HandOver(checked):
        assert prepared(twin) is not checked
        assert prepared(request) is checked
        assert prepared(request) is not checked  # taken once
    assert plan._HANDED_OVER == {}
    assert len(plans_made) == 3
