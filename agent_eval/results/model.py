"""The results model every stage shares: metric results, case results, the run summary, the run report.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

It imports no stage: metrics build its `MetricResult`s, aggregation its `RunReport`, the store saves it and the
renderers (`agent_eval.render`) read it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_eval.results.agreement_model import JudgeAgreement
from agent_eval.results.pricing import JUDGE_TOKENS, RunCost
from agent_eval.schema import AgentRun, EvalStatus, Invocation, ModelUsage, RubricScore
from agent_eval.secrets import redact_config, redact_text

__all__ = ["CacheSource", "CaseResult", "InvocationScore", "JsonFormat", "MetricResult", "RunReport", "RunSummary"]

NOT_APPLICABLE = "not applicable"
"""How the explanation of a result starts when its metric does not apply to the case (`metrics.scoring`)."""
SUMMARY_DETAILS = ("judge_mode", JUDGE_TOKENS)
"""The keys of `MetricResult.details` that the run's summary reads (`render.console.describe_judge_modes`, the
judge tokens of `agent_eval.results.aggregate.summarize`)."""
_SCORED = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.INFORMATIONAL)
_SUMMARY_FIELDS_SET: set[str] = set()
"""The `model_fields_set` all summaries share (`_summary`)."""
_Model = TypeVar("_Model", bound=BaseModel)

JsonFormat: TypeAlias = Literal["report", "vertex", "adk", "rust"]
"""The shapes `agent_eval.render.report_json` writes: ours, Vertex AI's, ADK's eval history, ADK-Rust's report.

Spelled out so that a caller's typo fails mypy; tests/render/test_formats.py checks it names exactly the output
formats of `agent_eval.render.formats` that have a `document`, in their order."""


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

    def summary_only(self) -> MetricResult:
        """This result without its per-turn scores and with only the details a summary reads
        (`SUMMARY_DETAILS`): see `CaseResult.summary_only`."""
        details = {key: self.details[key] for key in SUMMARY_DETAILS if key in self.details}
        return _summary(self, per_invocation=[], details=details)

    @property
    def gates(self) -> bool:
        """Whether this result fails its case: a FAILED status (a metric that could not score fails nothing)."""
        return self.status is EvalStatus.FAILED

    @property
    def scored(self) -> bool:
        """Whether the metric scored the case run: PASSED, FAILED or INFORMATIONAL."""
        return self.status in _SCORED

    @property
    def not_applicable(self) -> bool:
        """Whether the metric does not apply to the case (NOT_EVALUATED, explained as "not applicable: ...")."""
        return (
            self.status is EvalStatus.NOT_EVALUATED
            and self.error is None
            and (self.explanation or "").startswith(NOT_APPLICABLE)
        )

    @property
    def unscored(self) -> bool:
        """Whether the metric applies but could not score: the judge gave nothing usable, it raised, ..."""
        return self.status is EvalStatus.NOT_EVALUATED and not self.not_applicable

    @property
    def reason(self) -> str | None:
        """Why the result is what it is: the error the metric raised, else its explanation."""
        return self.error or self.explanation


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
    recorded_from: list[str] = Field(
        default_factory=list,
        description="Where a recorded case was read: `FILE:LINE` of each turn's first span, or session URLs.",
    )

    @property
    def passed(self) -> bool:
        """Whether the case run passed (no agent error, no failing metric)."""
        return self.status is EvalStatus.PASSED

    @property
    def failure(self) -> int:
        """Vertex AI's `failure` column: 1 when the agent itself failed on this case run."""
        return 1 if self.agent_run.failed else 0

    def summary_only(self) -> CaseResult:
        """This case run as a report evaluated a part at a time holds it (`RunReport.parts`): its status, scores,
        explanations and errors, without what the store keeps for it (the agent's invocations and final session
        state, the expected conversation, per-turn scores, and metric details but `SUMMARY_DETAILS`).

        A summary holds half the memory of a copy (~2.6 KB for a case run with two metrics): it is built without
        validation from this validated result, and shares one empty `model_fields_set` with every other summary
        (nothing here reads which fields were set)."""
        usage = self.agent_run.token_usage
        agent_run = _summary(
            self.agent_run,
            invocations=[],
            final_session_state=None,
            token_usage=None if usage is None else _summary(usage),
        )
        metrics = [metric.summary_only() for metric in self.metrics]
        return _summary(self, agent_run=agent_run, expected_invocations=None, metrics=metrics)


def _summary(model: _Model, **update: Any) -> _Model:
    """`model` with `update`, built unvalidated with the shared `_SUMMARY_FIELDS_SET` (see `CaseResult.summary_only`):
    a copy's own set of field names costs ~0.7 KB, more than most of its values."""
    return type(model).model_construct(_SUMMARY_FIELDS_SET, **{**model.__dict__, **update})


class CacheSource(BaseModel):
    """An earlier evaluation whose invocations a run reused: its id, its first reused invocation, how many."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(description="The run that invoked the agent (None: not recorded).")
    invoked_at: datetime | None = Field(default=None, description="The earliest reused invocation of that run.")
    case_runs: int = Field(description="How many case runs of this run came from that one.")


def case_anchor(case: CaseResult) -> str:
    """A case run's HTML anchor (without `case-`): its eval set, case and run index, other characters as `-`."""
    raw = f"{case.eval_set_id}--{case.eval_id}--{case.run_index}"
    return "".join(char if char.isalnum() or char in "-_" else "-" for char in raw)


class RunSummary(BaseModel):
    """Totals of a run, as ADK-Rust's report summary: one row per case run (rules in `agent_eval.results.aggregate`)."""

    model_config = ConfigDict(extra="forbid")

    total: int
    passed: int
    failed: int
    not_evaluated: int = 0
    pass_rate: float = Field(description="passed / (passed + failed): not-evaluated case runs are left out.")
    avg_scores: dict[str, float] = Field(default_factory=dict)
    agent_failures: int = 0
    mean_latency_seconds: float = 0.0
    pass_at_k: dict[int, float] = Field(
        default_factory=dict, description="Mean pass@k over cases, k = 1..num_runs (only when cases ran repeatedly)."
    )
    flaky_cases: list[str] = Field(
        default_factory=list, description="`eval_set_id/eval_id` of cases that both passed and failed across runs."
    )
    cached_case_runs: int = Field(0, description="Case runs whose invocations were reused from an earlier run.")
    cache_sources: list[CacheSource] = Field(default_factory=list, description="Where those came from.")
    uncalibrated_judges: dict[str, str] = Field(
        default_factory=dict,
        description="The judged criteria whose judge is not calibrated to the config's `judge.min_agreement`, with "
        "why: their results are informational, they neither fail a case nor regress (`agent_eval.judges.gate`).",
    )
    agent_tokens: dict[str, ModelUsage] = Field(
        default_factory=dict,
        description="Per model, the calls and tokens the agent's case runs reported, the LLM user simulator's "
        "included (empty: none reported).",
    )
    judge_tokens: dict[str, ModelUsage] = Field(
        default_factory=dict,
        description="Per judge model, the calls and tokens of the judges' calls while the run scored (retries and "
        "unusable samples included, cache hits cost none).",
    )
    cost: RunCost | None = Field(
        default=None,
        description="What the agent's and the judges' tokens cost (`agent_eval.results.pricing`); None: no tokens.",
    )
    judge: dict[str, int] = Field(
        default_factory=dict,
        description="What the LLM judges did while the run scored: samples, calls, cache_hits, retries, errors "
        "(unusable samples), rate_limited (calls refused by the provider and sent again), lost (samples given up "
        "on rate limiting), concurrency and concurrency_max (where the adaptive limit on judge calls settled, and "
        "its most in flight: `agent_eval.runtime.adaptive`); empty when not counted.",
    )
    invocations: dict[str, int] = Field(
        default_factory=dict,
        description="Where the adaptive limit on case runs in flight went (`agent_eval.flows.case_limit`): "
        "concurrency (where it settled) and concurrency_max (its most in flight), in case runs; rate_limited "
        "(case run tries answered 429 and tried again) and lost (case runs still rate limited at the deadline); "
        "empty when not counted (a sharded run's shards count their own).",
    )


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
    status: str = Field(
        default="completed",
        description="How the run ended (`agent_eval.store.RunStatus`): `errored` when too many case runs could "
        "not reach the agent (an outage: not compared, never a baseline); `stopped` when its budget was reached.",
    )
    error: str | None = Field(default=None, description="Why the run errored: the count and the first cause.")
    notes: list[str] = Field(
        default_factory=list,
        description="What the user must know about the input: recorded traces skipped, content not captured.",
    )
    store: str | None = Field(
        default=None, description="The store the run was written to (its URL, password hidden); None: not stored."
    )
    judges: dict[str, dict[str, dict[str, Any]]] | None = Field(
        default=None,
        description="Per eval set id and judged criterion, the identity of the judge that scored it "
        "(`agent_eval.metrics.judged.identity.JudgeIdentity`: model, mode, prompts, samples, config).",
    )
    judge_agreement: list[JudgeAgreement] = Field(
        default_factory=list,
        description="How far the judges that scored this run agree with human labels, per metric (filled when the "
        "run is read for `show` and `report`: `agent_eval.judges.agreement.run_judge_agreements`).",
    )
    parts: int = Field(
        default=1,
        description="How many parts the run was evaluated in: more than one for a large recorded input, whose case "
        "runs the report then holds as summaries (`CaseResult.summary_only`; the store has the rest: "
        "`agent_eval.store.load_report`).",
    )

    @field_validator("config")
    @classmethod
    def _config_without_secrets(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Every report, built or read back (even from a run stored before redaction), holds its config redacted
        (`agent_eval.secrets.redact_config`): a report is shown, exported and stored."""
        return redact_config(config)

    @field_validator("regression")
    @classmethod
    def _alerts_without_secrets(cls, regression: dict[str, Any] | None) -> dict[str, Any] | None:
        """The alert record's texts redacted too (a webhook error of an earlier release may hold the URL)."""
        alerts = (regression or {}).get("alerts")
        if regression is None or not isinstance(alerts, dict):
            return regression
        redacted = {key: redact_text(value) if isinstance(value, str) else value for key, value in alerts.items()}
        return {**regression, "alerts": redacted}

    @property
    def errored(self) -> bool:
        """Whether the run is an outage rather than a result (see `agent_eval.results.outage`)."""
        return self.status == "errored"

    @property
    def stopped(self) -> bool:
        """Whether the run's budget stopped it (`error` says why): what it did not start is not evaluated."""
        return self.status == "stopped"

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

    def not_evaluated_cases(self) -> list[CaseResult]:
        """The case runs that were not evaluated (no failure, some criterion could not score), in report order."""
        return [case for case in self.cases if case.status is EvalStatus.NOT_EVALUATED]

    def unscored_criteria(self) -> list[str]:
        """The criteria that scored no case run, in order of first appearance.

        Only case runs whose agent did not fail count: a criterion is listed when it has a result on at least one
        such case run and none of those results is scored (PASSED, FAILED or INFORMATIONAL).
        """
        seen: dict[str, bool] = {}
        for case in self.cases:
            if case.agent_run.failed:
                continue
            for result in case.metrics:
                seen[result.metric_name] = seen.get(result.metric_name, False) or result.scored
        return [name for name, scored in seen.items() if not scored]

    def all_passed(self) -> bool:
        """Whether no case run failed (ADK-Rust's `all_passed`; the CLI exits 0 exactly then)."""
        return not self.failures()

    def to_json(self) -> str:
        """The run as indented JSON (this model; `agent_eval.render.report_json` writes the other formats)."""
        return self.model_dump_json(indent=2)
