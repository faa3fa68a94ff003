"""A budgeted run's spend in the store, one row per process of the run (`run_spend`), so that its budget holds
across shards and workers: each process rewrites its own row after every call it starts or finishes
(`publish_spend`) and reads the others' before each call it starts (`others_spend`); `run_spend_of` sums them
all (`agent_eval.results.budget` has the rule that uses them).

A row is written in a transaction of its own, outside any other session of the process (SQLite allows one
writer at a time)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.results.budget import SpendTotals
from agent_eval.store.models import RunSpendRecord

__all__ = ["others_spend", "publish_spend", "run_spend_of"]


def publish_spend(run_id: str, worker: str, totals: SpendTotals, engine: Engine) -> None:
    """Store this process's spend of the run (its row replaced)."""
    with Session(engine) as session, session.begin():
        row = session.get(RunSpendRecord, (run_id, worker))
        if row is None:
            row = RunSpendRecord(run_id=run_id, worker=worker, updated_at=datetime.now(UTC))
        row.totals = totals.model_dump(mode="json", exclude_none=True)
        row.updated_at = datetime.now(UTC)
        session.add(row)


def others_spend(run_id: str, worker: str, engine: Engine) -> SpendTotals:
    """The spend of the run's other processes, summed."""
    return _summed(run_id, engine, but=worker)


def run_spend_of(run_id: str, engine: Engine) -> SpendTotals:
    """The spend of every process of the run, summed (nothing: an empty total)."""
    return _summed(run_id, engine, but=None)


def _summed(run_id: str, engine: Engine, *, but: str | None) -> SpendTotals:
    statement = select(RunSpendRecord.totals).where(col(RunSpendRecord.run_id) == run_id)
    if but is not None:
        statement = statement.where(col(RunSpendRecord.worker) != but)
    total = SpendTotals()
    with Session(engine) as session:
        for totals in session.exec(statement).all():
            total = total.plus(SpendTotals.model_validate(totals))
    return total
