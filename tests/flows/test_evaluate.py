"""The `agent-eval` flow end to end on the real Prefect engine: demo, cache, failures, retries, store rows."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.schema import EvalStatus
from agent_eval.store import CaseRecord, MetricRecord, Run, get_engine
from tests.flows import agents_for_tests
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

DEMO_FAILURES = {
    "set_living_room_temperature_lowercase": "tool_trajectory_avg_score",
    "preferred_temperature_as_usual": "tool_trajectory_avg_score",
    "evening_routine_as_usual": "tool_trajectory_avg_score",
    "turn_on_garage_device": "tool_trajectory_avg_score",
    "office_temperature_query": "response_match_score",
    "office_morning": "response_match_score",
}
AGENTS = "tests.flows.agents_for_tests"


def _count(url: str, table: type, **where: object) -> int:
    with Session(get_engine(url)) as session:
        statement = select(func.count()).select_from(table)
        for column, value in where.items():
            statement = statement.where(getattr(table, column) == value)
        return int(session.exec(statement).one())


def test_demo_runs_end_to_end_with_the_designed_failures(demo_dir: Path, sqlite_url: str) -> None:
    report = evaluate(demo_dir, db_url=sqlite_url)

    assert report.summary.total == 33
    assert report.summary.failed == len(DEMO_FAILURES)
    assert report.summary.passed == 33 - len(DEMO_FAILURES)
    failed = {case.eval_id: [m.metric_name for m in case.metrics if m.gates] for case in report.failed_cases()}
    assert failed == {case: [metric] for case, metric in DEMO_FAILURES.items()}
    lowercase = next(c for c in report.cases if c.eval_id == "set_living_room_temperature_lowercase")
    trajectory = next(m for m in lowercase.metrics if m.metric_name == "tool_trajectory_avg_score")
    assert trajectory.score == 0.0
    assert trajectory.threshold == 1.0
    assert "location='living room'" in (trajectory.explanation or "")

    assert _count(sqlite_url, Run) == 1
    assert _count(sqlite_url, CaseRecord, run_id=report.run_id) == 33
    assert _count(sqlite_url, MetricRecord, run_id=report.run_id) == 66
    assert _count(sqlite_url, CaseRecord, run_id=report.run_id, status=int(EvalStatus.FAILED)) == 6
    with Session(get_engine(sqlite_url)) as session:
        run = session.get(Run, report.run_id)
        assert run is not None
        assert (run.status, run.total, run.passed, run.failed) == ("completed", 33, 27, 6)
        assert run.flow_run_id == report.flow_run_id is not None
        stored = session.exec(select(CaseRecord).where(CaseRecord.eval_id == "turn_on_garage_device")).one()
        calls = [use["name"] for use in stored.actual_invocations[0]["intermediate_data"]["tool_uses"]]
        assert calls == ["set_device_info", "get_device_info"]


def test_every_evaluation_invokes_the_agent_unless_reuse_is_asked(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["first", "second", "third"])

    first = evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url)
    second = evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url)

    assert [agents_for_tests.CALLS[m] for m in messages.values()] == [2, 2, 2]  # tonight's agent, not the cache
    assert first.summary.passed == second.summary.passed == 3
    assert [c.agent_run.cached_from for c in second.cases] == [None, None, None]

    reused = evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url, reuse_max_age_hours=1)

    assert [agents_for_tests.CALLS[m] for m in messages.values()] == [2, 2, 2]
    origins = [c.agent_run.cached_from for c in reused.cases]
    assert [o.run_id if o else None for o in origins] == [second.run_id] * 3
    with Session(get_engine(sqlite_url)) as session:
        stored = session.exec(select(CaseRecord).where(CaseRecord.run_id == reused.run_id)).all()
        assert {(r.cached_from_run_id, r.cached_at is not None) for r in stored} == {(second.run_id, True)}
    assert _count(sqlite_url, Run) == 3

    evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url, reuse_max_age_hours=1, refresh_cache=True)
    assert [agents_for_tests.CALLS[m] for m in messages.values()] == [3, 3, 3]


def test_answers_older_than_the_maximum_age_are_not_reused(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["old"])
    evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url)
    time.sleep(1.5)

    again = evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url, reuse_max_age_hours=1 / 3600)

    assert agents_for_tests.CALLS[messages["old"]] == 2
    assert again.cases[0].agent_run.cached_from is None


def test_num_runs_invokes_each_case_once_per_run_index(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["alpha", "beta"])

    report = evaluate(eval_file, agent=f"{AGENTS}:echo_agent", db_url=sqlite_url, num_runs=3)

    assert report.summary.total == 6
    assert sorted((c.eval_id, c.run_index) for c in report.cases) == [
        ("alpha", 0),
        ("alpha", 1),
        ("alpha", 2),
        ("beta", 0),
        ("beta", 1),
        ("beta", 2),
    ]
    assert [agents_for_tests.CALLS[m] for m in messages.values()] == [3, 3]


def test_a_raising_agent_is_a_recorded_failure_and_the_run_goes_on(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["fine", "boom", "also_fine"])

    report = evaluate(eval_file, agent=f"{AGENTS}:raising_agent", db_url=sqlite_url)

    by_id = {case.eval_id: case for case in report.cases}
    boom = by_id["boom"]
    assert boom.failure == 1
    assert boom.status is EvalStatus.FAILED
    assert boom.agent_run.error is not None and "ValueError: cannot handle" in boom.agent_run.error
    assert all(m.status is EvalStatus.NOT_EVALUATED and m.score is None for m in boom.metrics)
    assert by_id["fine"].passed and by_id["also_fine"].passed
    assert agents_for_tests.CALLS[messages["boom"]] == 1  # the agent's own error is not retried
    assert boom.agent_run.attempts == 1
    assert (report.summary.passed, report.summary.failed, report.summary.agent_failures) == (2, 1, 1)
    assert _count(sqlite_url, CaseRecord, run_id=report.run_id) == 3
    assert _count(sqlite_url, CaseRecord, run_id=report.run_id, failure=1) == 1


def test_transient_errors_are_retried_with_backoff(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["wobbly"])

    report = evaluate(eval_file, agent=f"{AGENTS}:flaky_agent", db_url=sqlite_url)

    assert agents_for_tests.CALLS["flaky:" + messages["wobbly"]] == 3
    assert report.cases[0].passed
    assert report.cases[0].agent_run.attempts == 3


def test_an_agent_failing_after_all_retries_is_recorded(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["hopeless"])

    report = evaluate(eval_file, agent=f"{AGENTS}:always_transient_agent", db_url=sqlite_url)

    assert agents_for_tests.CALLS["transient:" + messages["hopeless"]] == 4  # 1 try + 3 retries
    case = report.cases[0]
    assert case.failure == 1
    assert case.agent_run.error == "TransientAgentError: 429 rate limited"
    assert case.agent_run.attempts == 4
    assert _count(sqlite_url, CaseRecord, run_id=report.run_id, failure=1) == 1


def test_a_hanging_agent_is_interrupted_retried_and_recorded(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["hang_forever", "quick"])

    report = evaluate(eval_file, agent=f"{AGENTS}:hanging_agent", db_url=sqlite_url, turn_timeout_seconds=0.2)

    by_id = {case.eval_id: case for case in report.cases}
    assert agents_for_tests.CALLS["hang:" + messages["hang_forever"]] == 4  # 1 try + 3 retries, each cut off
    assert by_id["hang_forever"].failure == 1
    assert by_id["hang_forever"].agent_run.error == "TurnTimeoutError: turn 1 took longer than 0.2 s"
    assert by_id["hang_forever"].agent_run.error_kind == "timeout"
    assert by_id["quick"].passed
