"""SQLModel tables: runs, case results (with the actual invocations as JSON) and metric results."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["CaseRecord", "MetricRecord", "Run", "RunBase", "RunStatus"]


class RunStatus:
    """Lifecycle of a run row."""

    RUNNING = "running"
    COMPLETED = "completed"
    CRASHED = "crashed"


def _json_column() -> Any:
    return Field(default=None, sa_column=Column(JSON))


class RunBase(SQLModel):
    """What identifies and summarises an evaluation run."""

    flow_run_id: str | None = Field(default=None, index=True)
    agent_reference: str = Field(index=True)
    agent_fingerprint: str
    config_hash: str
    num_runs: int = 1
    status: str = Field(default=RunStatus.RUNNING, index=True)
    started_at: datetime = Field(sa_type=DateTime(timezone=True))
    completed_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    total: int = 0
    passed: int = 0
    failed: int = 0
    pass_rate: float = 0.0


class Run(RunBase, table=True):
    """One evaluation run (one flow run of `agent-eval`)."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=64)
    eval_set_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    summary: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class CaseRecord(SQLModel, table=True):
    """One run of one eval case: what the agent did, and whether the case passed."""

    __tablename__ = "case_results"
    __table_args__ = (UniqueConstraint("run_id", "eval_set_id", "eval_id", "run_index"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True, max_length=64)
    eval_set_id: str = Field(index=True)
    eval_id: str = Field(index=True)
    run_index: int = 0
    status: int
    failure: int = 0
    error: str | None = None
    latency_seconds: float = 0.0
    attempts: int = 1
    actual_invocations: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    token_usage: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class MetricRecord(SQLModel, table=True):
    """One metric on one case run: score, status against the threshold, explanation, per-turn details."""

    __tablename__ = "metric_results"

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True, max_length=64)
    case_result_id: int = Field(foreign_key="case_results.id", index=True)
    metric_name: str = Field(index=True)
    score: float | None = None
    status: int
    threshold: float | None = None
    explanation: str | None = None
    error: str | None = None
    per_invocation: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
