"""ADK-compatible evaluation models, the evaluation config, and agent-eval's own run records.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Field names, defaults and enum values follow google-adk 2.x: every model accepts
snake_case and camelCase keys and writes snake_case. Contents, function calls and function responses are
`google.genai.types` objects, so files written by any ADK version (including the ones full of `null`s) load
unchanged.
"""

from __future__ import annotations

import enum
import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from google.genai import types as genai_types
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    alias_generators,
    field_validator,
    model_validator,
)

__all__ = [
    "DEFAULT_CRITERIA",
    "JUDGE_RETRY_LIMITS",
    "SERVER_SESSION_KEY",
    "AgentRun",
    "BaseCriterion",
    "CacheOrigin",
    "CodeConfig",
    "ConversationScenario",
    "CustomMetricConfig",
    "ErrorKind",
    "EvalBaseModel",
    "EvalCase",
    "EvalConfig",
    "EvalMetric",
    "EvalSet",
    "EvalStatus",
    "EvaluationResult",
    "IntermediateData",
    "Interval",
    "Invocation",
    "InvocationEvent",
    "InvocationEvents",
    "JudgeConfig",
    "LimitsConfig",
    "MetricInfo",
    "MetricValueInfo",
    "PerInvocationResult",
    "RecordedOrigin",
    "RegressionConfig",
    "Rubric",
    "RubricContent",
    "RubricScore",
    "SessionInput",
    "TokenUsage",
    "ToolMock",
    "content_hash",
    "content_text",
    "judge_retry_expected",
    "judge_retry_valid",
    "scoring_fingerprint",
    "tool_calls_of",
]


class EvalBaseModel(BaseModel):
    """Base of every ADK-shaped model: camelCase or snake_case in, snake_case out."""

    model_config = ConfigDict(
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        extra="forbid",
        arbitrary_types_allowed=True,
        serialize_by_alias=False,
        loc_by_alias=False,  # errors name fields as files spell them on disk: snake_case
    )


# ----------------------------------------------------------------------------------------------- eval sets
class RubricContent(EvalBaseModel):
    """What a rubric asks the judge to check."""

    text_property: str | None = None


class Rubric(EvalBaseModel):
    """A yes/no property that a judge checks on a response or a tool use."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class RubricScore(EvalBaseModel):
    """A judge's verdict on one rubric."""

    rubric_id: str
    rationale: str | None = None
    score: float | None = None


class IntermediateData(EvalBaseModel):
    """Reference-shaped intermediate data: tool calls, tool responses and intermediate texts."""

    tool_uses: list[genai_types.FunctionCall] = Field(default_factory=list)
    tool_responses: list[genai_types.FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[genai_types.Part]]] = Field(default_factory=list)


class InvocationEvent(EvalBaseModel):
    """One event of an actual run, as ADK records it (unknown event fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    author: str
    content: genai_types.Content | None = None
    usage_metadata: genai_types.GenerateContentResponseUsageMetadata | None = None
    model_version: str | None = None


class InvocationEvents(EvalBaseModel):
    """Event-shaped intermediate data: what ADK records for actual invocations."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class Invocation(EvalBaseModel):
    """One turn: the user's content, what the agent did, and its final response."""

    invocation_id: str = ""
    user_content: genai_types.Content
    final_response: genai_types.Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: dict[str, Any] | None = None


class SessionInput(EvalBaseModel):
    """The session an eval case starts from."""

    model_config = ConfigDict(extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class ConversationScenario(EvalBaseModel):
    """A goal for a simulated user instead of a fixed conversation."""

    starting_prompt: str
    conversation_plan: str
    user_persona: str | dict[str, Any] | None = None


class ToolMock(EvalBaseModel):
    """agent-eval extension: a canned response for a tool, so an agent that calls live systems runs offline.

    Matches a call by tool name, and by arguments when `args` is given (every given key must be equal in the
    call; other keys are ignored).
    """

    tool_name: str
    args: dict[str, Any] | None = None
    response: Any = None


class RecordedOrigin(EvalBaseModel):
    """agent-eval extension: where a recorded case (a session of production traffic) came from."""

    sources: list[str] = Field(default_factory=list, description="`FILE:LINE` of each turn's first span, or URLs")
    content_captured: bool = Field(
        default=True, description="False: the spans carry no message text or tool arguments (ADK's default)"
    )
    service: str | None = None
    agent_name: str | None = None
    app_name: str | None = None
    user_id: str | None = None
    error: str | None = Field(default=None, description="the first failed turn's error, when one failed")
    state: dict[str, Any] = Field(default_factory=dict, description="the session's state, where recorded")


class EvalCase(EvalBaseModel):
    """One eval case: a fixed conversation or a conversation scenario, never both.

    `tags` and `description` are ADK-Rust's additions; unknown keys are kept (ADK allows extras).
    """

    model_config = ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = Field(default=None, min_length=1)
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    tool_mocks: list[ToolMock] = Field(
        default_factory=list,
        description="agent-eval extension: canned tool responses for this case (adapters that run tools use them).",
    )
    actual_conversation: list[Invocation] | None = Field(
        default=None,
        description="agent-eval extension: the agent's invocations, already made (a dataset with predictions). "
        "Such a case is scored as it is; no agent is called.",
    )
    recorded: RecordedOrigin | None = Field(
        default=None,
        description="agent-eval extension: set on a case read from recorded traces or sessions (where from).",
    )

    @model_validator(mode="after")
    def _one_conversation_kind(self) -> EvalCase:
        """Exactly one of `conversation` and `conversation_scenario`; a case that holds the agent's own
        invocations (`actual_conversation`, e.g. recorded traffic) may have neither: it has no reference."""
        if self.conversation is not None and self.conversation_scenario is not None:
            raise ValueError("exactly one of 'conversation' or 'conversation_scenario' must be given")
        if self.conversation is None and self.conversation_scenario is None and self.actual_conversation is None:
            raise ValueError("exactly one of 'conversation' or 'conversation_scenario' must be given")
        return self


class EvalSet(EvalBaseModel):
    """A named collection of eval cases (ADK `*.evalset.json`)."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


# ------------------------------------------------------------------------------------------------- metrics
class EvalStatus(enum.IntEnum):
    """Status of a metric or a case; written as ADK's integers."""

    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3
    INFORMATIONAL = 4


class BaseCriterion(BaseModel):
    """A criterion: a threshold plus metric-specific options (kept as extra fields, snake or camel case)."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True, extra="allow")

    threshold: float | None = None


class EvalMetric(EvalBaseModel):
    """A metric to compute, with its threshold and options."""

    metric_name: str
    threshold: float | None = None
    criterion: BaseCriterion | None = None
    custom_function_path: str | None = None

    @property
    def effective_threshold(self) -> float | None:
        """The criterion's threshold, else the deprecated top-level one."""
        if self.criterion is not None and self.criterion.threshold is not None:
            return self.criterion.threshold
        return self.threshold

    def option(self, name: str, default: Any = None) -> Any:
        """A criterion option by its snake_case name (camelCase input is accepted too)."""
        if self.criterion is None:
            return default
        extras = self.criterion.model_extra or {}
        camel = alias_generators.to_camel(name)
        return extras.get(name, extras.get(camel, default))


class PerInvocationResult(EvalBaseModel):
    """A metric's result on one invocation."""

    actual_invocation: Invocation
    expected_invocation: Invocation | None = None
    score: float | None = None
    eval_status: EvalStatus = EvalStatus.NOT_EVALUATED
    rubric_scores: list[RubricScore] | None = None
    explanation: str | None = None


class EvaluationResult(EvalBaseModel):
    """A metric's result on one case run: the overall score and the per-invocation scores."""

    overall_score: float | None = None
    overall_eval_status: EvalStatus = EvalStatus.NOT_EVALUATED
    per_invocation_results: list[PerInvocationResult] = Field(default_factory=list)
    overall_rubric_scores: list[RubricScore] | None = None
    explanation: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class Interval(EvalBaseModel):
    """The range a metric's value lives in."""

    min_value: float
    max_value: float
    open_at_min: bool = False
    open_at_max: bool = False

    def contains(self, value: float) -> bool:
        """Whether `value` lies in the interval."""
        above = value > self.min_value if self.open_at_min else value >= self.min_value
        below = value < self.max_value if self.open_at_max else value <= self.max_value
        return above and below


class MetricValueInfo(EvalBaseModel):
    """Information on a metric's values."""

    interval: Interval | None = None


class MetricInfo(EvalBaseModel):
    """A metric's name, description and value range (default [0, 1])."""

    metric_name: str
    description: str | None = None
    metric_value_info: MetricValueInfo = Field(
        default_factory=lambda: MetricValueInfo(interval=Interval(min_value=0.0, max_value=1.0))
    )


# -------------------------------------------------------------------------------------------------- config
class CodeConfig(EvalBaseModel):
    """Where a custom metric's function lives: `pkg.module.function`."""

    name: str
    args: list[Any] | None = None


class CustomMetricConfig(EvalBaseModel):
    """A custom metric declared in the config's `custom_metrics`."""

    code_config: CodeConfig
    metric_info: MetricInfo | None = None
    description: str = ""


class RegressionConfig(EvalBaseModel):
    """agent-eval extension (`regression` in the config): how a run is compared with its baseline.

    A metric regresses when its mean drops by more than `tolerance` (absolute; a dict gives per-metric
    values) and the paired bootstrap interval at `confidence` excludes zero (`agent_eval.compare.regression`).
    """

    tolerance: float | dict[str, float] = 0.05
    confidence: float = Field(default=0.95, gt=0, lt=1)
    fail_on_regression: bool = False
    alert_webhook: str | None = None


JUDGE_RETRY_LIMITS: dict[str, tuple[float, float]] = {
    "attempts": (1, 100),
    "initial_delay": (0, 3600),
    "max_delay": (0, 3600),
}
"""The valid range of each judge retry setting (config `judge.retry_<name>`, env `AGENT_EVAL_JUDGE_RETRY_<NAME>`):
attempts a whole number, delays in seconds."""


def judge_retry_expected(name: str) -> str:
    """What the judge retry setting `name` (a key of `JUDGE_RETRY_LIMITS`) must be, e.g. `a whole number from 1
    to 100`."""
    low, high = JUDGE_RETRY_LIMITS[name]
    kind = "a whole number" if name == "attempts" else "a number of seconds"
    return f"{kind} from {low:g} to {high:g}"


def judge_retry_valid(name: str, value: object) -> bool:
    """Whether `value` is a valid judge retry setting `name` (a key of `JUDGE_RETRY_LIMITS`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    low, high = JUDGE_RETRY_LIMITS[name]
    return low <= value <= high and (name != "attempts" or float(value).is_integer())


class JudgeConfig(EvalBaseModel):
    """agent-eval extension (`judge` in the config): how failed judge calls are retried.

    Each setting left out comes from the environment (`AGENT_EVAL_JUDGE_RETRY_ATTEMPTS`,
    `AGENT_EVAL_JUDGE_RETRY_INITIAL_DELAY`, `AGENT_EVAL_JUDGE_RETRY_MAX_DELAY`), else ADK's default (7 attempts,
    5 s doubling up to 120 s). Retry settings never change a judge answer's cache key nor what a run measured.

    Attributes:
        retry_attempts: calls in all, the first included (1 = no retry), 1..100.
        retry_initial_delay: seconds before the first retry, 0..3600.
        retry_max_delay: the longest wait between attempts, in seconds, 0..3600.
    """

    retry_attempts: int | None = None
    retry_initial_delay: float | None = None
    retry_max_delay: float | None = None

    @field_validator("retry_attempts", "retry_initial_delay", "retry_max_delay", mode="before")
    @classmethod
    def _in_range(cls, value: Any, info: ValidationInfo) -> Any:
        name = str(info.field_name).removeprefix("retry_")
        if value is not None and not judge_retry_valid(name, value):
            raise ValueError(f"must be {judge_retry_expected(name)}, got {value!r}")
        return value


class LimitsConfig(EvalBaseModel):
    """agent-eval extension (`limits` in the config): Prefect global concurrency or rate limits, by name, that
    hold across every run, shard and worker naming them (`prefect gcl create NAME --limit N`, plus
    `--slot-decay-per-second R` for a rate limit; see `agent_eval.tasks.limits`).

    Limits never change what a run measures: they are no part of the config's scoring fingerprint.

    Attributes:
        invocations: limits every agent invocation holds (with the run's `--concurrency-limit` names).
        judge_calls: limits every judge request holds, e.g. the judge's API key's requests per minute.
    """

    invocations: list[str] = Field(default_factory=list)
    judge_calls: list[str] = Field(default_factory=list)

    @field_validator("invocations", "judge_calls")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        if any(not name.strip() for name in names):
            raise ValueError("a limit name must not be empty")
        return names


DEFAULT_CRITERIA: dict[str, float] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""What ADK uses when no config file is given."""


class EvalConfig(EvalBaseModel):
    """Which metrics to compute and how (ADK `test_config.json`).

    A criterion is a bare threshold (`"response_match_score": 0.8`) or an object with `threshold` and options.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=alias_generators.to_camel)

    criteria: dict[str, BaseCriterion] = Field(
        default_factory=lambda: {k: BaseCriterion(threshold=v) for k, v in DEFAULT_CRITERIA.items()}
    )
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("user_simulator_config", "userSimulatorConfig")
    )
    regression: RegressionConfig | None = None
    judge: JudgeConfig | None = None
    limits: LimitsConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_thresholds(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("criteria"), dict):
            data = dict(data)
            data["criteria"] = {
                name: {"threshold": value} if isinstance(value, int | float) and not isinstance(value, bool) else value
                for name, value in data["criteria"].items()
            }
        return data

    def eval_metrics(self) -> list[EvalMetric]:
        """One `EvalMetric` per criterion, with the custom function path where one is declared."""
        customs = self.custom_metrics or {}
        return [
            EvalMetric(
                metric_name=name,
                threshold=criterion.threshold,
                criterion=criterion,
                custom_function_path=customs[name].code_config.name if name in customs else None,
            )
            for name, criterion in self.criteria.items()
        ]

    def fingerprint(self) -> str:
        """A stable hash of the config's whole content (`runs.config_hash`), regression settings included."""
        return content_hash(self)

    def scoring_fingerprint(self) -> str:
        """A stable hash of what the config measures: all but the `regression`, `judge` and `limits` sections (see
        `scoring_fingerprint`). Two runs with the same scoring fingerprint measured alike."""
        return scoring_fingerprint(self.model_dump(mode="json", exclude_none=True))


# ------------------------------------------------------------------------------------------------ run data
class TokenUsage(EvalBaseModel):
    """Tokens an agent reported for a case run (all optional: not every agent reports them)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None


ErrorKind = Literal["agent", "transport", "timeout"]
"""Why a case run failed: the agent's own error (a bug, a refusal, a 400), the agent could not be reached
(connection refused, DNS, TLS, 5xx or 429 after the retries, 401/403), or a turn ran out of time."""


class CacheOrigin(EvalBaseModel):
    """Where an invocation came from: the run (and Prefect flow run) that invoked the agent, and when."""

    run_id: str | None = None
    flow_run_id: str | None = None
    invoked_at: datetime | None = None


SERVER_SESSION_KEY = "agent_eval:server_session"
"""The key, in `AgentRun.final_session_state`, of the agent server's own session (`agent_eval.agents.http_agent`):
`{"base_url", "app_name", "user_id", "session_id", "kept"}`."""


class AgentRun(EvalBaseModel):
    """What one run of an agent over one eval case produced: the actual invocations and how it went."""

    eval_set_id: str
    eval_id: str
    run_index: int = 0
    invocations: list[Invocation] = Field(default_factory=list)
    latency_seconds: float = 0.0
    error: str | None = None
    error_kind: ErrorKind | None = None
    error_traceback: str | None = None
    attempts: int = 1
    token_usage: TokenUsage | None = None
    final_session_state: dict[str, Any] | None = None
    cached_from: CacheOrigin | None = None

    @property
    def failed(self) -> bool:
        """Whether the agent itself failed on this case run."""
        return self.error is not None


# ---------------------------------------------------------------------------------------------- helpers
def content_text(content: genai_types.Content | None) -> str:
    """The text of a content: its text parts joined with a newline, as ADK does."""
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)


def tool_calls_of(invocation: Invocation) -> list[genai_types.FunctionCall]:
    """Every tool call of an invocation, in order, for both intermediate-data shapes."""
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, IntermediateData):
        return list(data.tool_uses)
    return [
        part.function_call
        for event in data.invocation_events
        if event.content is not None
        for part in event.content.parts or []
        if part.function_call is not None
    ]


def scoring_fingerprint(config: dict[str, Any]) -> str:
    """The hash of what a config (as JSON: a `test_config.json`'s content, or `runs.config` of any release)
    measures: the criteria with their thresholds and options, the custom metrics' code and the user simulator.

    The `regression` section (tolerance, confidence, fail_on_regression, alert webhook), the `judge` section
    (retry settings) and the `limits` section (global limits) are left out: they say how runs are compared or
    calls are paced, not what a run measured. Bare thresholds count as `{"threshold": x}`, option keys
    as snake_case (`matchType` is `match_type`), and a config with no `criteria` as ADK's default criteria, so
    equal configs written differently hash alike.
    """
    data = {key: value for key, value in config.items() if key not in ("regression", "judge", "limits")}
    criteria = data.get("criteria", DEFAULT_CRITERIA)
    if isinstance(criteria, dict):
        data["criteria"] = {
            name: {"threshold": value} if isinstance(value, int | float) and not isinstance(value, bool) else value
            for name, value in criteria.items()
        }
    return content_hash(_snake_keys(data))


def _snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {alias_generators.to_snake(str(k)): _snake_keys(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_snake_keys(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)  # a threshold of 1 and of 1.0 is the same threshold
    return value


def content_hash(value: BaseModel | Any) -> str:
    """SHA-256 of a model's (or a JSON value's) canonical JSON: equal content, equal hash."""
    data = value.model_dump(mode="json", exclude_none=True) if isinstance(value, BaseModel) else value
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
