"""The flow writes its run as it goes: `running` with each case run stored as soon as it finished, then
`completed` with its metric results; a flow that fails before the end leaves its run `crashed`."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.agents import AgentSession, AgentTurn
from agent_eval.io import load_eval_sets
from agent_eval.schema import content_hash
from agent_eval.store import (
    CaseRecord,
    EvalSetVersion,
    MetricRecord,
    Run,
    RunEvalSet,
    get_engine,
    get_run,
    load_report,
)
from tests.conftest import REPO_ROOT
from tests.flows import agents_for_tests
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.test_incremental:observing_agent"
STORE: dict[str, Any] = {}
"""The store URL the observing agent reads (set by the test), and what it saw."""


def _store_now(url: str) -> dict[str, Any]:
    with Session(get_engine(url)) as session:
        run = session.exec(select(Run)).one()
        cases = session.exec(select(CaseRecord.eval_id, CaseRecord.status).order_by(CaseRecord.eval_id)).all()
        metrics = session.exec(select(func.count()).select_from(MetricRecord)).one()
    return {"status": run.status, "completed_at": run.completed_at, "cases": list(cases), "metrics": metrics}


def observing_agent(message: str, session: AgentSession) -> AgentTurn:
    """The echo agent; on the `observe` case it first waits until the two other case runs are stored."""
    if message.startswith("observe"):
        deadline = time.monotonic() + 20
        while len(_store_now(STORE["url"])["cases"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        STORE["seen"] = _store_now(STORE["url"])
    return agents_for_tests.echo_agent(message, session)


def test_case_runs_are_stored_while_the_run_is_running(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["first", "second", "observe"])
    STORE["url"] = sqlite_url

    report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url, max_concurrency=1)

    not_evaluated = 3
    assert STORE["seen"] == {
        "status": "running",
        "completed_at": None,
        "cases": [("first", not_evaluated), ("second", not_evaluated)],
        "metrics": 0,
    }
    assert _store_now(sqlite_url) | {"completed_at": None} == {
        "status": "completed",
        "completed_at": None,
        "cases": [("first", 1), ("observe", 1), ("second", 1)],
        "metrics": 6,
    }
    assert load_report(report.run_id, get_engine(sqlite_url)) == report


def counting_agent(message: str, session: AgentSession) -> AgentTurn:
    """The echo agent, noting how many case runs the store held when it was called."""
    STORE.setdefault("stored_at_call", []).append(len(_store_now(STORE["url"])["cases"]))
    return agents_for_tests.echo_agent(message, session)


def test_a_case_run_keeps_its_place_until_it_is_stored(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one place and a slow store, the next case run starts only once the previous one is stored, so a
    worker killed at any moment has no finished case run that the store does not hold."""
    eval_file, _ = write_echo_set(tmp_path, ["a", "b", "c"])
    STORE.clear()
    STORE["url"] = sqlite_url
    from agent_eval.flows import invoke

    def slow_record(*args: Any) -> None:
        time.sleep(0.3)
        record(*args)

    record = invoke.record_case_run
    monkeypatch.setattr(invoke, "record_case_run", slow_record)

    evaluate(eval_file, agent="tests.flows.test_incremental:counting_agent", db_url=sqlite_url, max_concurrency=1)

    assert STORE["stored_at_call"] == [0, 1, 2]


def test_the_run_records_where_it_came_from(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["only"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)

    report = evaluate(eval_file, agent="tests.flows.agents_for_tests:echo_agent", db_url=sqlite_url)

    run = get_run(report.run_id, get_engine(sqlite_url))
    assert run.flow_run_id == report.flow_run_id is not None
    assert run.git_commit == (head.stdout.strip() or None)
    assert (run.deployment_name, run.tags, run.agent_reference) == (None, [], "tests.flows.agents_for_tests:echo_agent")
    (eval_set,) = load_eval_sets([str(eval_file)])
    with Session(get_engine(sqlite_url)) as session:
        link = session.exec(select(RunEvalSet)).one()
        version = session.get(EvalSetVersion, content_hash(eval_set))
    assert link.eval_set_hash == content_hash(eval_set)
    assert version is not None and version.content["eval_cases"][0]["eval_id"] == "only"


def test_a_flow_failing_before_completion_leaves_its_run_crashed(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["one", "two"])

    def store_gone(*_args: object, **_kwargs: object) -> str:
        raise ConnectionError("the store went away")

    monkeypatch.setattr("agent_eval.flows.evaluate.persist_report", store_gone)

    with pytest.raises(ConnectionError, match="the store went away"):
        evaluate(eval_file, agent="tests.flows.agents_for_tests:echo_agent", db_url=sqlite_url)

    seen = _store_now(sqlite_url)
    assert (seen["status"], seen["completed_at"], seen["metrics"]) == ("crashed", None, 0)
    assert seen["cases"] == [("one", 3), ("two", 3)]
