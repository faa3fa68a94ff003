"""The report model every renderer reads: metric results, case results, the run summary."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.schema import AgentRun, EvalStatus, Invocation, RubricScore

__all__ = ["CaseResult", "InvocationScore", "JsonFormat", "MetricResult", "RunReport", "RunSummary"]

JsonFormat: TypeAlias = Literal["report", "vertex", "adk", "rust"]
"""The shapes `RunReport.to_json` writes: ours, Vertex AI's, ADK's eval history, ADK-Rust's report."""


class InvocationScore(BaseModel):
    """A metric's score on one invocation (turn) of a case run."""

    model_config = ConfigDict(extra="forbid")

    score: float | None = None
    status: EvalStatus = EvalStatus.NOT_EVALUATED
    explanation: str | None = None
    rubric_scores: list[RubricScore] | None = None


class MetricResult(BaseModel):
    """One metric on one case run: the score, its status against the threshold, and why."""

    model_config = ConfigDict(extra="forbid")

    metric_name: str
    eval_set_id: str
    eval_id: str
    run_index: int = 0
    score: float | None = None
    status: EvalStatus = EvalStatus.NOT_EVALUATED
    threshold: float | None = None
    explanation: str | None = None
    error: str | None = None
    per_invocation: list[InvocationScore] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def gates(self) -> bool:
        """Whether this result can fail its case: a FAILED status, or a metric that raised."""
        return self.status is EvalStatus.FAILED or (self.status is EvalStatus.NOT_EVALUATED and self.error is not None)


class CaseResult(BaseModel):
    """One run of one eval case: what the agent did, every metric on it, and whether it passed."""

    model_config = ConfigDict(extra="forbid")

    eval_set_id: str
    eval_id: str
    run_index: int = 0
    status: EvalStatus
    agent_run: AgentRun
    expected_invocations: list[Invocation] | None = Field(
        default=None, description="The case's conversation (None for a conversation_scenario case)."
    )
    metrics: list[MetricResult] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Whether the case run passed (no agent error, no failing metric)."""
        return self.status is EvalStatus.PASSED

    @property
    def failure(self) -> int:
        """Vertex AI's `failure` column: 1 when the agent itself failed on this case run."""
        return 1 if self.agent_run.failed else 0


class RunSummary(BaseModel):
    """Totals of a run, as ADK-Rust's report summary: one row per case run."""

    model_config = ConfigDict(extra="forbid")

    total: int
    passed: int
    failed: int
    not_evaluated: int = 0
    pass_rate: float
    avg_scores: dict[str, float] = Field(default_factory=dict)
    agent_failures: int = 0
    mean_latency_seconds: float = 0.0


class RunReport(BaseModel):
    """A whole evaluation run: what was evaluated, with what, the results and the summary."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    eval_set_ids: list[str]
    agent_reference: str
    agent_fingerprint: str
    config: dict[str, Any]
    config_hash: str
    num_runs: int
    started_at: datetime
    completed_at: datetime
    flow_run_id: str | None = None
    source_run_id: str | None = Field(default=None, description="The run a re-run or re-score came from.")
    cases: list[CaseResult]
    summary: RunSummary
    regression: dict[str, Any] | None = Field(
        default=None, description="The comparison with the baseline run (RegressionReport.to_payload), if any."
    )

    @property
    def regressed(self) -> bool:
        """Whether the comparison with the baseline found a regression."""
        return bool(self.regression and self.regression.get("regressed"))

    def failed_cases(self) -> list[CaseResult]:
        """The case runs that did not pass (failed or not evaluated), in report order."""
        return [case for case in self.cases if not case.passed]

    def failures(self) -> list[CaseResult]:
        """The case runs that failed (an agent error or a failing metric), in report order."""
        return [case for case in self.cases if case.status is EvalStatus.FAILED]

    def all_passed(self) -> bool:
        """Whether no case run failed (ADK-Rust's `all_passed`; the CLI exits 0 exactly then)."""
        return not self.failures()

    @property
    def metrics_table(self) -> Any:
        """Vertex AI's `metrics_table`: a pandas DataFrame, one row per case run (see `report.tables`)."""
        from agent_eval.report.tables import metrics_table

        return metrics_table(self)

    @property
    def summary_metrics(self) -> Any:
        """Vertex AI's `summary_metrics`: a one-row pandas DataFrame (see `report.tables`)."""
        from agent_eval.report.tables import summary_metrics

        return summary_metrics(self)

    def to_json(self, format: JsonFormat = "report") -> str:
        """The run as indented JSON.

        Args:
            format: `report` (this model), `vertex` (`{summary_metrics, metrics_table}`), `adk` (a list of ADK
                `EvalSetResult`s) or `rust` (ADK-Rust's `EvaluationReport`).

        Raises:
            ValueError: an unknown format.
        """
        from agent_eval.report.export import report_json

        return report_json(self, format)
