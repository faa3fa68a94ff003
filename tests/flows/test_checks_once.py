"""The checks before a run happen once per run: the agent's preflight (a round trip to its server) is run by
the API before Prefect starts, and the flow it hands the plan to does not repeat it; a flow that Prefect
starts itself (a deployment) runs it; a rescore, which calls no agent, runs none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_eval import evaluate, history, rerun, rescore
from agent_eval.flows import agent_eval_flow, rerun_flow
from agent_eval.plan.eval_plan import EvalRequest
from agent_eval.plan.stored import RerunRequest
from tests.flows.agents_for_tests import CALLS
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.agents_for_tests:preflight_counting_agent"


@pytest.fixture
def preflights() -> None:
    CALLS["preflight"] = 0


@pytest.mark.usefixtures("preflights")
def test_run_and_rerun_check_the_agent_once_each_and_rescore_not_at_all(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "beta"])

    report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    assert (report.summary.total, report.summary.passed, CALLS["preflight"]) == (2, 2, 1)

    again = rerun(report.run_id, db_url=sqlite_url)
    assert (again.summary.total, again.summary.passed, CALLS["preflight"]) == (2, 2, 2)

    rescored = rescore(report.run_id, db_url=sqlite_url)
    assert (rescored.summary.total, rescored.summary.passed, CALLS["preflight"]) == (2, 2, 2)


@pytest.mark.usefixtures("preflights")
def test_a_flow_started_without_the_api_checks_the_agent_itself(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha"])

    report = asyncio.run(agent_eval_flow(EvalRequest(paths=[str(eval_file)], agent=AGENT, db_url=sqlite_url)))

    assert (report.summary.total, CALLS["preflight"]) == (1, 1)


@pytest.mark.usefixtures("preflights")
def test_a_rerun_flow_started_without_the_api_takes_a_run_id_prefix(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha"])
    source = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)

    again = asyncio.run(rerun_flow(RerunRequest(run_id=source.run_id[:8], db_url=sqlite_url)))

    assert (again.summary.total, again.summary.passed, CALLS["preflight"]) == (1, 1, 2)
    assert history(db_url=sqlite_url).set_index("run_id").loc[again.run_id, "source_run_id"] == source.run_id
