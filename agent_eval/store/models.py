"""SQLModel tables: eval set versions, runs, case results (with the actual invocations) and metric results.

One model family per entity (`RunBase` → `Run(table=True)` / `RunCreate` / `RunRead`). The tables are created
and changed by the Alembic migrations in `agent_eval/store/migrations` only, never by `create_all`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import field_validator
from sqlalchemy import JSON, DateTime, Index, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from agent_eval.schema import EvalSet, content_hash

__all__ = [
    "CaseRecord",
    "EvalSetVersion",
    "JudgeCheckRecord",
    "JudgeProfileRecord",
    "JudgedItemRecord",
    "LabelRecord",
    "MetricRecord",
    "Run",
    "RunBase",
    "RunCreate",
    "RunEvalSet",
    "RunRead",
    "RunStatus",
    "Watermark",
    "as_utc",
    "comparable_version",
    "eval_set_version",
]


class RunStatus:
    """Lifecycle of a run row: `running` from the flow's start, then one of the end states.

    `completed`: every case run was invoked and scored. `errored`: it finished, but too many case runs could
    not reach the agent (an outage, not a result: never a baseline, never compared). `cancelled`: stopped by
    a signal or from the UI. `crashed`: the process died or the flow failed (also set on runs left `running`
    whose heartbeat stopped). `stopped`: its budget was reached (`agent_eval.results.budget`): the case runs it
    did not start are not evaluated; never a baseline, never compared; `rerun` finishes it.
    """

    RUNNING = "running"
    COMPLETED = "completed"
    ERRORED = "errored"
    STOPPED = "stopped"
    CANCELLED = "cancelled"
    CRASHED = "crashed"


def _timestamp(*, index: bool = False) -> Any:
    return Field(default=None, sa_type=DateTime(timezone=True), index=index)


def _json(factory: type[list[Any]] | type[dict[str, Any]]) -> Any:
    return Field(default_factory=factory, sa_type=JSON, nullable=True)


def as_utc(value: datetime | None) -> datetime | None:
    """A timestamp in UTC: SQLite hands them back naive (they were written in UTC), PostgreSQL in the
    session's time zone."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


RECORDED_VERSION_PREFIX = "recorded:"
"""How the version (content hash) of an eval set of recorded traffic starts: every window of recorded traffic is
other content, yet its runs are comparable with each other (as samples, `agent_eval.compare.regression`)."""


def eval_set_version(eval_set: EvalSet) -> str:
    """The eval set's content hash; for recorded traffic (every case recorded) prefixed `recorded:`, cut to 64."""
    digest = content_hash(eval_set)
    if eval_set.eval_cases and all(case.recorded is not None for case in eval_set.eval_cases):
        return RECORDED_VERSION_PREFIX + digest[: 64 - len(RECORDED_VERSION_PREFIX)]
    return digest


def comparable_version(version: str | None) -> str | None:
    """The version two runs must share to be compared: every recorded-traffic version counts as one."""
    return RECORDED_VERSION_PREFIX if version and version.startswith(RECORDED_VERSION_PREFIX) else version


class EvalSetVersion(SQLModel, table=True):
    """One content version of an eval set, kept whole so that runs can be compared on the same cases."""

    __tablename__ = "eval_set_versions"

    content_hash: str = Field(primary_key=True, max_length=64)
    eval_set_id: str = Field(index=True)
    content: dict[str, Any] = _json(dict)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))


class RunBase(SQLModel):
    """What identifies and summarises an evaluation run."""

    flow_run_id: str | None = Field(default=None, index=True)
    deployment_name: str | None = None
    agent_reference: str = Field(index=True)
    agent_fingerprint: str
    git_commit: str | None = None
    config_hash: str
    num_runs: int = 1
    status: str = Field(default=RunStatus.RUNNING, index=True)
    started_at: datetime = Field(sa_type=DateTime(timezone=True), index=True)
    completed_at: datetime | None = _timestamp()
    updated_at: datetime | None = _timestamp()
    total: int = 0
    passed: int = 0
    failed: int = 0
    pass_rate: float = 0.0
    eval_set_ids: list[str] = _json(list)
    tags: list[str] = Field(default_factory=list, sa_type=JSON, sa_column_kwargs={"server_default": text("'[]'")})
    config: dict[str, Any] = _json(dict)
    summary: dict[str, Any] = _json(dict)
    source_run_id: str | None = Field(default=None, max_length=64, index=True)
    baseline_run_id: str | None = Field(default=None, max_length=64)
    regressed: bool | None = None
    regression: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    error: str | None = Field(default=None, sa_type=Text)
    host: str | None = Field(default=None, max_length=255)
    pid: int | None = None
    store_url: str | None = Field(default=None, sa_type=Text)
    judges: dict[str, Any] | None = Field(default=None, sa_type=JSON)


class Run(RunBase, table=True):
    """One evaluation run (one flow run of `agent-eval`); `updated_at` is its heartbeat while running."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_agent_reference_status", "agent_reference", "status"),)

    id: str = Field(primary_key=True, max_length=64)


class RunCreate(RunBase):
    """A run as the flow starts it (status `running`)."""

    id: str


class RunRead(RunBase):
    """A run as read back, timestamps in UTC."""

    id: str

    @field_validator("started_at", "completed_at", "updated_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value)


class RunEvalSet(SQLModel, table=True):
    """Which eval sets a run evaluated, and which version of each (the order is the run's `eval_set_ids`).

    `eval_set_hash` is None for runs of the first release and runs saved without their eval sets.
    """

    __tablename__ = "run_eval_sets"

    run_id: str = Field(foreign_key="runs.id", primary_key=True, max_length=64)
    eval_set_id: str = Field(primary_key=True, index=True)
    eval_set_hash: str | None = Field(default=None, foreign_key="eval_set_versions.content_hash", max_length=64)


class CaseRecord(SQLModel, table=True):
    """One run of one eval case: what the agent did, and whether the case passed.

    Written as soon as the agent's invocation finishes (status FAILED when the agent failed, else
    NOT_EVALUATED); the final status is set when the run completes.
    """

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
    error_kind: str | None = Field(default=None, max_length=16)
    error_traceback: str | None = Field(default=None, sa_type=Text)
    latency_seconds: float = 0.0
    attempts: int = 1
    cached_from_run_id: str | None = Field(default=None, max_length=64)
    cached_at: datetime | None = _timestamp()
    actual_invocations: list[dict[str, Any]] = _json(list)
    token_usage: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    final_session_state: dict[str, Any] | None = Field(default=None, sa_type=JSON)


class MetricRecord(SQLModel, table=True):
    """One metric on one case run: score, status against the threshold, explanation, per-turn details.

    `details` is the metric's free-form JSON (alignments, judge samples and their verdicts).
    """

    __tablename__ = "metric_results"
    __table_args__ = (Index("ix_metric_results_case_metric", "case_result_id", "metric_name", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True, max_length=64)
    case_result_id: int = Field(foreign_key="case_results.id", index=True)
    metric_name: str = Field(index=True)
    score: float | None = None
    status: int
    threshold: float | None = None
    explanation: str | None = None
    error: str | None = None
    per_invocation: list[dict[str, Any]] = _json(list)
    details: dict[str, Any] = _json(dict)


class Watermark(SQLModel, table=True):
    """How far a scheduled evaluation of recorded traffic has scored: every turn that started before `position`
    was scored by a completed run (`run_id`), none after it."""

    __tablename__ = "watermarks"

    name: str = Field(primary_key=True, max_length=255)
    position: datetime = Field(sa_type=DateTime(timezone=True))
    run_id: str | None = Field(default=None, max_length=64)
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))


class JudgedItemRecord(SQLModel, table=True):
    """One item an LLM judge scored in a run: a turn of a case run for a judged metric (and a rubric, for rubric
    metrics), keyed by the content that was judged (`agent_eval.results.judged_items`), so that a person's label
    of that content (`LabelRecord`) applies to every run that judged the same content."""

    __tablename__ = "judged_items"

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True, max_length=64)
    case_result_id: int = Field(foreign_key="case_results.id", index=True)
    metric_name: str = Field(index=True)
    rubric_id: str | None = Field(default=None, max_length=255)
    turn: int = 0
    item_key: str = Field(index=True, max_length=64)
    judge_score: float | None = None
    judge_passed: bool | None = None
    samples: list[Any] = _json(list)


class LabelRecord(SQLModel, table=True):
    """What a person decided about one judged item (by its content key): pass or fail, or a score for a scored
    metric; one label per item and labeller (a new one replaces the old)."""

    __tablename__ = "judge_labels"
    __table_args__ = (UniqueConstraint("item_key", "labeller"),)

    id: int | None = Field(default=None, primary_key=True)
    item_key: str = Field(index=True, max_length=64)
    metric_name: str = Field(index=True)
    rubric_id: str | None = Field(default=None, max_length=255)
    passed: bool | None = None
    score: float | None = None
    labeller: str = Field(max_length=255)
    labelled_at: datetime = Field(sa_type=DateTime(timezone=True))
    note: str | None = Field(default=None, sa_type=Text)
    run_id: str | None = Field(default=None, max_length=64)
    eval_set_id: str | None = None
    eval_id: str | None = None
    turn: int | None = None


class JudgeCheckRecord(SQLModel, table=True):
    """A re-check of a judge: every labelled item sent again to the judge as configured then (fresh calls), and
    its agreement with the labels (`agent_eval.judges.check`)."""

    __tablename__ = "judge_checks"

    id: int | None = Field(default=None, primary_key=True)
    metric_name: str = Field(index=True)
    judge_key: str = Field(index=True, max_length=12)
    judge: dict[str, Any] = _json(dict)
    checked_at: datetime = Field(sa_type=DateTime(timezone=True), index=True)
    labels: int = 0
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    agreement: dict[str, Any] = _json(dict)
    verdicts: dict[str, Any] = _json(dict)


class JudgeProfileRecord(SQLModel, table=True):
    """A versioned judge profile: few-shot examples for a judged metric chosen from people's labels by
    `agent-eval judges align`, with the held-out agreement before and after; only a `kept` version is used."""

    __tablename__ = "judge_profiles"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, max_length=255)
    version: int
    metric_name: str = Field(index=True)
    examples: list[dict[str, Any]] = _json(list)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    kept: bool = False
    evaluation: dict[str, Any] = _json(dict)


class RunSpendRecord(SQLModel, table=True):
    """What one process (`worker`: the flow run, or the process id) of a run with a budget has spent: its
    `agent_eval.results.budget.SpendTotals` as JSON, rewritten after each call, read by the run's other processes
    so that one budget holds across shards."""

    __tablename__ = "run_spend"

    run_id: str = Field(foreign_key="runs.id", primary_key=True, max_length=64)
    worker: str = Field(primary_key=True, max_length=64)
    totals: dict[str, Any] = _json(dict)
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))
