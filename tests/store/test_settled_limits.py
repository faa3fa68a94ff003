"""Where earlier runs' limits settled (`store.settled_limits`), read from real SQLite rows written as the flow writes
them: the latest finished run of the agent that recorded a value wins; running runs, other agents and runs
without the section are passed over; a new limit on case runs starts there, within its ceiling."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from agent_eval.flows.case_limit import CaseRunLimit
from agent_eval.results.model import RunReport
from agent_eval.store import get_engine, start_run
from agent_eval.store.models import Run
from agent_eval.store.settled import LOOKBACK, SettledLimits, settled_limits
from tests.store.builders import AGENT, START, eval_set, make_report, run_start, save_report

OTHER_AGENT = "pkg.other:agent"


def finished(
    engine: Engine,
    run_id: str,
    hours: int,
    *,
    invocations: dict[str, int] | None = None,
    judge: dict[str, int] | None = None,
    agent: str = AGENT,
    status: str = "completed",
) -> RunReport:
    """A run of `agent` started `hours` after START, stored finished with these summary sections."""
    report = make_report(
        run_id,
        [eval_set()],
        {"m": {"a": 1.0, "b": 1.0, "c": 1.0}},
        started_at=START + timedelta(hours=hours),
        agent=agent,
    )
    summary = report.summary.model_copy(update={"invocations": invocations or {}, "judge": judge or {}})
    report = report.model_copy(update={"summary": summary, "status": status})
    save_report(report, engine, eval_sets=[eval_set()])
    return report


def running(engine: Engine, run_id: str, hours: int, summary: dict[str, Any]) -> None:
    """A run of AGENT started `hours` after START and still running, its row holding `summary` (the flow writes
    none before the end: set here so that only the status can pass it over)."""
    report = make_report(run_id, [eval_set()], {}, started_at=START + timedelta(hours=hours))
    start_run(run_start(report).model_copy(update={"git_commit": None}), [eval_set()], engine)
    with Session(engine) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == run_id).values(summary=summary))


def test_no_earlier_run(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    finished(engine, "other", 1, invocations={"concurrency": 9}, judge={"concurrency": 7}, agent=OTHER_AGENT)

    assert settled_limits(AGENT, engine) == SettledLimits(None, None)


def test_the_latest_finished_run_with_a_value_wins(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    finished(engine, "old", 1, invocations={"concurrency": 4, "concurrency_max": 8}, judge={"concurrency": 3})
    finished(engine, "newer", 2, invocations={"concurrency": 12, "concurrency_max": 16}, judge={"concurrency": 20})
    finished(engine, "errored", 3, invocations={"concurrency": 5}, status="errored")  # finished too, no judge value

    assert settled_limits(AGENT, engine) == SettledLimits(case_runs=5, judge_calls=20)


def test_running_runs_and_other_agents_are_ignored(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    finished(engine, "mine", 1, invocations={"concurrency": 6}, judge={"concurrency": 10})
    running(engine, "still-running", 5, {"invocations": {"concurrency": 30}, "judge": {"concurrency": 30}})
    finished(engine, "theirs", 6, invocations={"concurrency": 40}, judge={"concurrency": 50}, agent=OTHER_AGENT)

    assert settled_limits(AGENT, engine) == SettledLimits(case_runs=6, judge_calls=10)
    assert settled_limits(OTHER_AGENT, engine) == SettledLimits(case_runs=40, judge_calls=50)


def test_a_run_without_the_section_is_skipped(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    finished(engine, "both", 1, invocations={"concurrency": 6}, judge={"concurrency": 10})
    finished(engine, "sharded", 2, judge={"concurrency": 24})  # a sharded run has no case-run value
    finished(engine, "unjudged", 3, invocations={"concurrency": 14})  # no judged criteria: no judge value
    finished(engine, "uncounted", 4, invocations={"rate_limited": 2})  # counted, but no concurrency

    assert settled_limits(AGENT, engine) == SettledLimits(case_runs=14, judge_calls=24)


def test_only_the_last_runs_are_read(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    finished(engine, "long-ago", 0, invocations={"concurrency": 6}, judge={"concurrency": 10})
    for hours in range(1, LOOKBACK + 1):
        finished(engine, f"later-{hours}", hours)  # LOOKBACK (20) later runs that recorded nothing

    assert settled_limits(AGENT, engine) == SettledLimits(None, None)


def test_a_new_limit_on_case_runs_starts_where_the_last_run_settled(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    finished(engine, "last", 1, invocations={"concurrency": 40})
    settled = settled_limits(AGENT, engine)

    assert CaseRunLimit(64, initial=settled.case_runs).limit().limit == 40
    assert CaseRunLimit(24, initial=settled.case_runs).limit().limit == 24  # within the ceiling
    assert CaseRunLimit(64, initial=settled_limits(OTHER_AGENT, engine).case_runs).limit().limit == 16  # none: 16
