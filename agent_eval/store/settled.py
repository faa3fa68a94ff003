"""Where the adaptive limits of earlier runs settled, for the next run to start there.

A run stores where its limit on case runs in flight settled (`RunSummary.invocations["concurrency"]`) and
where its limit on judge calls settled (`RunSummary.judge["concurrency"]`). The next run of the same agent
reference starts each limit at the value of the latest run that recorded it (among its last
`LOOKBACK` finished runs), instead of at 16: a provider's limits belong to its key, which one agent's runs share,
whatever eval sets they evaluate. A run still `running` is never read; nor one that recorded no value (a run
without judged criteria has no judge value; a sharded run has no case-run value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.store.engine import get_engine
from agent_eval.store.models import Run, RunStatus

__all__ = ["LOOKBACK", "SettledLimits", "settled_limits"]

LOOKBACK = 20


@dataclass(frozen=True)
class SettledLimits:
    """Where earlier runs' limits settled: case runs in flight, and judge calls in flight (`None`: no record)."""

    case_runs: int | None = None
    judge_calls: int | None = None


def settled_limits(agent_reference: str, engine: Engine | None = None) -> SettledLimits:
    """Where the latest finished runs of `agent_reference` left their limits (module docstring)."""
    statement = (
        select(Run.summary)
        .where(col(Run.agent_reference) == agent_reference, col(Run.status) != RunStatus.RUNNING)
        .order_by(col(Run.started_at).desc())
        .limit(LOOKBACK)
    )
    with Session(engine or get_engine()) as session:
        summaries = [dict(summary or {}) for summary in session.exec(statement).all()]
    return SettledLimits(
        case_runs=_latest(summaries, "invocations"),
        judge_calls=_latest(summaries, "judge"),
    )


def _latest(summaries: list[dict[str, Any]], section: str) -> int | None:
    for summary in summaries:
        value = (summary.get(section) or {}).get("concurrency")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None
