"""ADK-compatible evaluation models, the evaluation config, and agent-eval's own run records.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Field names, defaults and enum values follow google-adk 2.x: every model accepts
snake_case and camelCase keys and writes snake_case. Contents, function calls and function responses are
`google.genai.types` objects, so files written by any ADK version (including the ones full of `null`s) load
unchanged.

The modules: `eval_sets` (eval sets, cases, invocations), `metrics` (criteria and metric results, as ADK's),
`config` (the evaluation config and what it measures), `runs` (agent-eval's run records), `base` (the base
model and the content hash) and `suggestions` (close matches for misspelled keys, in configs and eval files).
Import every name from `agent_eval.schema` itself.
"""

from __future__ import annotations

from agent_eval.schema.base import EvalBaseModel, content_hash
from agent_eval.schema.config import (
    DEFAULT_CRITERIA,
    JUDGE_RETRY_LIMITS,
    BudgetConfig,
    CodeConfig,
    CustomMetricConfig,
    EvalConfig,
    JudgeConfig,
    LimitsConfig,
    ModelPrice,
    RegressionConfig,
    judge_retry_expected,
    judge_retry_valid,
    scoring_fingerprint,
)
from agent_eval.schema.eval_sets import (
    ConversationScenario,
    EvalCase,
    EvalSet,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    RecordedOrigin,
    Rubric,
    RubricContent,
    RubricScore,
    SessionInput,
    ToolMock,
    content_text,
    tool_calls_of,
)
from agent_eval.schema.metrics import (
    BaseCriterion,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Interval,
    MetricInfo,
    MetricValueInfo,
    PerInvocationResult,
)
from agent_eval.schema.runs import (
    SERVER_SESSION_KEY,
    UNKNOWN_MODEL,
    AgentRun,
    CacheOrigin,
    ErrorKind,
    ModelUsage,
    TokenUsage,
    add_usage,
    merged_usage,
)
from agent_eval.schema.suggestions import (
    close_match,
    misspelled_key_message,
    model_key_spellings,
    validation_input_error,
)

__all__ = [
    "DEFAULT_CRITERIA",
    "JUDGE_RETRY_LIMITS",
    "SERVER_SESSION_KEY",
    "UNKNOWN_MODEL",
    "AgentRun",
    "BaseCriterion",
    "BudgetConfig",
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
    "ModelPrice",
    "ModelUsage",
    "PerInvocationResult",
    "RecordedOrigin",
    "RegressionConfig",
    "Rubric",
    "RubricContent",
    "RubricScore",
    "SessionInput",
    "TokenUsage",
    "ToolMock",
    "add_usage",
    "close_match",
    "content_hash",
    "content_text",
    "judge_retry_expected",
    "judge_retry_valid",
    "merged_usage",
    "misspelled_key_message",
    "model_key_spellings",
    "scoring_fingerprint",
    "tool_calls_of",
    "validation_input_error",
]
