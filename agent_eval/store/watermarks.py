"""Watermarks of scheduled evaluations of recorded traffic (the `agent-eval/traces` deployment).

A watermark moves only forward, and only when a run that scored everything up to its new position completed:
a run that fails, is cancelled or is killed leaves it where it was, so the next run scores every turn the
failed one did not finish, and no turn before the watermark is scored again.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from agent_eval.store.engine import get_engine
from agent_eval.store.models import Watermark, as_utc

__all__ = ["advance_watermark", "read_watermark"]


def read_watermark(name: str, engine: Engine | None = None) -> datetime | None:
    """The position of watermark `name` (UTC), None when no run has set it."""
    with Session(engine or get_engine()) as session:
        row = session.get(Watermark, name)
        return as_utc(row.position) if row is not None else None


def advance_watermark(name: str, position: datetime, run_id: str | None, engine: Engine | None = None) -> bool:
    """Move watermark `name` to `position` if that is later than where it is; returns whether it moved."""
    with Session(engine or get_engine()) as session:
        row = session.get(Watermark, name)
        current = as_utc(row.position) if row is not None else None
        if current is not None and current >= position:
            return False
        now = datetime.now(UTC)
        if row is None:
            row = Watermark(name=name, position=position, run_id=run_id, updated_at=now)
        else:
            row.position, row.run_id, row.updated_at = position, run_id, now
        session.add(row)
        session.commit()
        return True
