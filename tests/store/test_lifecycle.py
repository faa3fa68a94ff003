"""A run's life in the store: `running` at the start, case runs as they finish, `completed` in one final
transaction; crashed runs marked by the flow or by `mark_stale_runs`. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.results.model import RunReport
from agent_eval.schema import CacheOrigin, EvalStatus
from agent_eval.store import (
    CaseRecord,
    EvalSetVersion,
    MetricRecord,
    Run,
    RunEvalSet,
    case_run_outcomes,
    complete_run,
    get_engine,
    get_run,
    mark_run_crashed,
    mark_stale_runs,
    record_case_run,
    start_run,
)
from tests.store.builders import START, eval_set, make_report, run_start

SCORES = {"m": {"a": 0.9, "b": 0.2, "c": 0.6}}


def _cases(engine: Engine, run_id: str) -> list[tuple[str, int, int]]:
    with Session(engine) as session:
        rows = session.exec(select(CaseRecord).where(CaseRecord.run_id == run_id).order_by(col(CaseRecord.id)))
        return [(r.eval_id, r.status, r.failure) for r in rows.all()]


def _count(engine: Engine, table: type, run_id: str) -> int:
    with Session(engine) as session:
        statement = select(func.count()).select_from(table).where(table.run_id == run_id)  # type: ignore[attr-defined]
        return int(session.exec(statement).one())


def _start_and_record(engine: Engine, report: RunReport, upto: int | None = None) -> None:
    start_run(run_start(report, tags=["nightly"]), [eval_set()], engine)
    for case in report.cases[:upto]:
        record_case_run(report.run_id, case.agent_run, engine)


def test_a_started_run_is_running_with_its_eval_set_version(store_url: str) -> None:
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set()], SCORES)

    start_run(run_start(report, tags=["nightly", "gpu"]), [eval_set()], engine)

    run = get_run("r1", engine)
    assert (run.status, run.tags, run.total, run.completed_at) == ("running", ["nightly", "gpu"], 0, None)
    assert run.git_commit == "0123456789abcdef0123456789abcdef01234567"
    assert run.started_at == run.updated_at == START
    with Session(engine) as session:
        link = session.exec(select(RunEvalSet)).one()
        version = session.get(EvalSetVersion, link.eval_set_hash)
        assert version is not None
        assert (link.run_id, link.eval_set_id, version.eval_set_id) == ("r1", "set", "set")
        assert [case["eval_id"] for case in version.content["eval_cases"]] == ["a", "b", "c"]


def test_case_runs_are_written_as_they_finish_and_bump_the_heartbeat(store_url: str) -> None:
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set()], SCORES, errors={"b": "ValueError: nope"})
    before = datetime.now(UTC)

    _start_and_record(engine, report, upto=2)

    not_evaluated, failed = int(EvalStatus.NOT_EVALUATED), int(EvalStatus.FAILED)
    assert _cases(engine, "r1") == [("a", not_evaluated, 0), ("b", failed, 1)]
    assert _count(engine, MetricRecord, "r1") == 0
    run = get_run("r1", engine)
    assert run.status == "running"
    assert run.started_at == START
    assert run.updated_at is not None and run.updated_at >= before
    assert run.updated_at.tzinfo is UTC


def test_recording_a_case_run_twice_rewrites_it(store_url: str) -> None:
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set()], SCORES)
    _start_and_record(engine, report, upto=1)

    retried = report.cases[0].agent_run.model_copy(update={"attempts": 3, "latency_seconds": 9.0})
    record_case_run("r1", retried, engine)

    with Session(engine) as session:
        row = session.exec(select(CaseRecord)).one()
        assert (row.eval_id, row.attempts, row.latency_seconds) == ("a", 3, 9.0)


def test_completing_writes_statuses_metrics_and_summary(store_url: str) -> None:
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set()], SCORES, errors={"c": "RuntimeError: down"})
    _start_and_record(engine, report, upto=2)  # "c" was never recorded: completion writes it

    complete_run(report, engine)

    passed, failed = int(EvalStatus.PASSED), int(EvalStatus.FAILED)
    assert _cases(engine, "r1") == [("a", passed, 0), ("b", failed, 0), ("c", failed, 1)]
    assert _count(engine, MetricRecord, "r1") == 3
    run = get_run("r1", engine)
    assert (run.status, run.total, run.passed, run.failed) == ("completed", 3, 1, 2)
    assert run.pass_rate == pytest.approx(1 / 3)
    assert run.completed_at == run.updated_at == START + timedelta(seconds=2)
    assert run.summary["avg_scores"] == {"m": pytest.approx(0.55)}
    assert run.tags == ["nightly"]

    complete_run(report, engine)  # a repeated completion replaces, never duplicates
    assert _count(engine, MetricRecord, "r1") == 3
    assert len(_cases(engine, "r1")) == 3


def test_a_failing_completion_leaves_the_run_running_and_unscored(store_url: str) -> None:
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set()], SCORES)
    _start_and_record(engine, report)
    first = report.cases[0]
    broken = report.model_copy(  # the same metric twice on one case run: the unique index rejects it
        update={"cases": [first.model_copy(update={"metrics": first.metrics * 2}), *report.cases[1:]]}
    )

    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        complete_run(broken, engine)

    assert get_run("r1", engine).status == "running"
    assert [status for _, status, _ in _cases(engine, "r1")] == [int(EvalStatus.NOT_EVALUATED)] * 3
    assert _count(engine, MetricRecord, "r1") == 0


def test_mark_run_crashed_only_touches_a_running_run(store_url: str) -> None:
    engine = get_engine(store_url)
    running, done = make_report("running", [eval_set()], SCORES), make_report("done", [eval_set()], SCORES)
    _start_and_record(engine, running, upto=1)
    _start_and_record(engine, done)
    complete_run(done, engine)

    assert mark_run_crashed("running", engine) is True
    assert mark_run_crashed("done", engine) is False
    assert mark_run_crashed("running", engine) is False

    assert (get_run("running", engine).status, get_run("done", engine).status) == ("crashed", "completed")
    assert len(_cases(engine, "running")) == 1  # what was recorded stays


def test_mark_stale_runs_uses_the_last_write(store_url: str) -> None:
    engine = get_engine(store_url)
    reports = {name: make_report(name, [eval_set()], SCORES) for name in ("quiet", "busy", "done")}
    for report in reports.values():
        _start_and_record(engine, report, upto=0)  # heartbeat = start (12:00)
    complete_run(reports["done"], engine)
    with Session(engine) as session, session.begin():
        busy = session.get(Run, "busy")
        assert busy is not None
        busy.updated_at = START + timedelta(hours=2)

    now = START + timedelta(hours=2, minutes=30)
    assert mark_stale_runs(timedelta(hours=1), engine, now=now) == ["quiet"]
    assert mark_stale_runs(timedelta(hours=1), engine, now=now) == []
    assert mark_stale_runs(timedelta(minutes=10), engine, now=now) == ["busy"]
    statuses = {name: get_run(name, engine).status for name in reports}
    assert statuses == {"quiet": "crashed", "busy": "crashed", "done": "completed"}


def test_eval_set_versions_are_stored_once_per_content(store_url: str) -> None:
    engine = get_engine(store_url)
    same, changed = eval_set(), eval_set(version="-v2")
    for run_id, version in (("r1", same), ("r2", same), ("r3", changed)):
        start_run(run_start(make_report(run_id, [version], SCORES)), [version], engine)

    with Session(engine) as session:
        links = session.exec(select(RunEvalSet).order_by(col(RunEvalSet.run_id))).all()
        assert len(session.exec(select(EvalSetVersion)).all()) == 2
    hashes = [link.eval_set_hash for link in links]
    assert hashes[0] == hashes[1] != hashes[2]


def test_case_run_outcomes_count_the_stored_case_runs_of_one_run(store_url: str) -> None:
    """What a sharded run's parent shows as progress: invoked, cached (another run's answer), failed."""
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set(eval_ids=("a", "b", "c", "d"))], {"m": {}}, errors={"b": "boom"})
    other = make_report("r2", [eval_set()], SCORES)
    _start_and_record(engine, other)
    start_run(run_start(report), [eval_set(eval_ids=("a", "b", "c", "d"))], engine)
    assert case_run_outcomes("r1", engine) == {"invoked": 0, "cached": 0, "failed": 0}

    a, b, c, _ = (case.agent_run for case in report.cases)
    reused = c.model_copy(update={"cached_from": CacheOrigin(run_id="r0", invoked_at=START)})
    for run in (a, b, reused):
        record_case_run("r1", run, engine)

    assert case_run_outcomes("r1", engine) == {"invoked": 1, "cached": 1, "failed": 1}
    assert case_run_outcomes("r2", engine) == {"invoked": 3, "cached": 0, "failed": 0}
