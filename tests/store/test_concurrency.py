"""Two processes evaluating at once into one store: both migrate a new database at the same moment, then
write runs incrementally, interleaved. No row is lost, every run completes. On SQLite (one file, WAL) and
PostgreSQL."""

from __future__ import annotations

import multiprocessing
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from agent_eval.store import CaseRecord, MetricRecord, Run, complete_run, get_engine, record_case_run, start_run
from tests.store.builders import eval_set, make_report, run_start

RUNS_PER_PROCESS = 10
SCORES = {"m": {"a": 0.9, "b": 0.2, "c": 0.6}, "n": {"a": 1.0, "b": 1.0, "c": 1.0}}


def write_runs(url: str, prefix: str, barrier: Any) -> None:
    """One evaluating process: start, record each case run, complete; `RUNS_PER_PROCESS` times."""
    barrier.wait()  # both processes open (and so migrate) the new store at the same moment
    engine = get_engine(url)
    for index in range(RUNS_PER_PROCESS):
        report = make_report(f"{prefix}-{index}", [eval_set()], SCORES)
        start_run(run_start(report), [eval_set()], engine)
        for case in report.cases:
            record_case_run(report.run_id, case.agent_run, engine)
        complete_run(report, engine)


def test_two_processes_write_runs_to_one_store_without_losing_rows(store_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [context.Process(target=write_runs, args=(store_url, name, barrier)) for name in ("p", "q")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)

    assert [worker.exitcode for worker in workers] == [0, 0]
    with Session(get_engine(store_url)) as session:
        statuses = session.exec(select(Run.status, func.count()).group_by(Run.status)).all()
        assert statuses == [("completed", 2 * RUNS_PER_PROCESS)]
        assert session.exec(select(func.count()).select_from(CaseRecord)).one() == 2 * RUNS_PER_PROCESS * 3
        assert session.exec(select(func.count()).select_from(MetricRecord)).one() == 2 * RUNS_PER_PROCESS * 6
