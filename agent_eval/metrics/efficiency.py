"""ADK 2.x's informational efficiency metrics: tool calls, inference calls, tokens and seconds per turn.

Rules (google-adk 2.13, `_efficiency_evaluators.py`): each metric is computed per actual invocation (turn), is
reference-free and never gates (the registry rejects a threshold on it; a value's status is INFORMATIONAL). The
overall value is a per-turn average, never a per-case total:

- `tool_call_count_v1`: tool calls of the turn, for both intermediate-data shapes; a turn without intermediate
  data has 0 calls (as in ADK). Overall: mean over turns.
- `inference_call_count_v1`: events that record a model call (`usage_metadata` or `model_version` set). Only
  event-shaped data (`InvocationEvents`) records them; any other turn is n/a. Overall: mean over the known turns.
- `token_usage_v1`: the turn's tokens summed over its model events' `usage_metadata`: input = prompt + tool-use
  prompt tokens, output = candidates + thoughts tokens, total = input + output (the reported total is not used).
  A count no call reported stays n/a, not 0. Overall: each count averaged over *every* turn (a turn that did not
  report it counts 0) when at least one turn reported it, as ADK does.
- `invocation_duration_v1`: the turn's `duration` in seconds, split into model, tool and framework seconds
  (framework = total - model - tool, clamped at 0, rounded to ms; n/a when a part is). Overall: each part
  averaged over the timed turns, rounded to ms.

A turn whose value is n/a is NOT_EVALUATED with the reason; when no turn has a value the metric is NOT_EVALUATED
for the case with that reason (never 0). The breakdowns ADK reports as `EvalMetricResultDetails` land in
`EvaluationResult.details`: `token_usage_details` / `duration_details` (overall averages) and
`per_invocation_token_usage_details` / `per_invocation_duration_details` (one dict per turn).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeAlias

from google.genai import types as genai_types

from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.registry import MetricContext, metric
from agent_eval.schema import (
    EvalStatus,
    EvaluationResult,
    Invocation,
    InvocationEvents,
    PerInvocationResult,
    tool_calls_of,
)

__all__ = [
    "duration_details",
    "inference_call_count",
    "inference_call_count_v1",
    "invocation_duration_v1",
    "token_usage_details",
    "token_usage_v1",
    "tool_call_count_v1",
]

Details: TypeAlias = dict[str, float | None]

UNBOUNDED = (0.0, math.inf)
TOKEN_FIELDS = (
    "total_tokens",
    "input_tokens",
    "prompt_tokens",
    "cached_tokens",
    "tool_use_tokens",
    "output_tokens",
    "candidates_tokens",
    "reasoning_tokens",
)
DURATION_FIELDS = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")

NO_MODEL_EVENTS = "no model-call data: only event-shaped intermediate data (InvocationEvents) records model calls"
NO_USAGE = "no token counts: no model event of the invocation carries usage_metadata"
NO_TIMING = "no timing: the invocation carries no duration"


# ------------------------------------------------------------------------------------------ per invocation
def inference_call_count(invocation: Invocation) -> float | None:
    """The model calls of one invocation, or None when its intermediate data cannot tell."""
    data = invocation.intermediate_data
    if not isinstance(data, InvocationEvents):
        return None
    calls = [e for e in data.invocation_events if e.usage_metadata is not None or e.model_version is not None]
    return float(len(calls))


def _sum_reported(*counts: float | None) -> float | None:
    """The sum of the reported counts; None when none was reported (n/a is not 0)."""
    reported = [count for count in counts if count is not None]
    return float(sum(reported)) if reported else None


def _call_counts(usage: genai_types.GenerateContentResponseUsageMetadata) -> Details:
    prompt, tool_use = usage.prompt_token_count, usage.tool_use_prompt_token_count
    candidates, thoughts = usage.candidates_token_count, usage.thoughts_token_count
    return {
        "input_tokens": _sum_reported(prompt, tool_use),
        "prompt_tokens": _sum_reported(prompt),
        "cached_tokens": _sum_reported(usage.cached_content_token_count),
        "tool_use_tokens": _sum_reported(tool_use),
        "output_tokens": _sum_reported(candidates, thoughts),
        "candidates_tokens": _sum_reported(candidates),
        "reasoning_tokens": _sum_reported(thoughts),
    }


def token_usage_details(invocation: Invocation) -> Details:
    """Every token count of one invocation, summed over its model events (None: not reported)."""
    totals: Details = dict.fromkeys(TOKEN_FIELDS)
    data = invocation.intermediate_data
    events = data.invocation_events if isinstance(data, InvocationEvents) else []
    for event in events:
        if event.usage_metadata is not None:
            for name, count in _call_counts(event.usage_metadata).items():
                totals[name] = _sum_reported(totals[name], count)
    totals["total_tokens"] = _sum_reported(totals["input_tokens"], totals["output_tokens"])
    return totals


def duration_details(invocation: Invocation) -> Details:
    """The invocation's seconds: total, model, tool and the framework's remainder (None: not measured)."""
    total = invocation.duration
    if total is None:
        return dict.fromkeys(DURATION_FIELDS)
    model, tool = invocation.model_duration, invocation.tool_duration
    framework = None if model is None or tool is None else round(max(total - model - tool, 0.0), 3)
    return {"total_seconds": total, "model_seconds": model, "tool_seconds": tool, "framework_seconds": framework}


# ------------------------------------------------------------------------------------------------ overall
def _mean_of_present(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def _average_tokens(per_invocation: list[Details]) -> Details:
    """Each count averaged over every invocation (missing = 0), None when no invocation reported it."""
    averaged: Details = {}
    for name in TOKEN_FIELDS:
        total = _sum_reported(*(details[name] for details in per_invocation))
        averaged[name] = None if total is None else total / len(per_invocation)
    return averaged


def _average_durations(per_invocation: list[Details]) -> Details:
    """Each part averaged over the invocations that measured it, rounded to milliseconds."""
    averaged: Details = {}
    for name in DURATION_FIELDS:
        mean = _mean_of_present([details[name] for details in per_invocation])
        averaged[name] = None if mean is None else round(mean, 3)
    return averaged


def _efficiency_result(
    actual_invocations: list[Invocation],
    values: list[float | None],
    overall: float | None,
    missing: str,
    details: dict[str, Any] | None = None,
) -> EvaluationResult:
    """Per-invocation values (n/a ones NOT_EVALUATED with `missing`) and the overall value, INFORMATIONAL."""
    if not actual_invocations:
        raise MetricNotApplicable("the agent produced no invocations")
    results = [
        PerInvocationResult(actual_invocation=invocation, explanation=missing)
        if value is None
        else PerInvocationResult(actual_invocation=invocation, score=value, eval_status=EvalStatus.INFORMATIONAL)
        for invocation, value in zip(actual_invocations, values, strict=True)
    ]
    if overall is None:
        return EvaluationResult(per_invocation_results=results, explanation=missing, details=details or {})
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.INFORMATIONAL,
        per_invocation_results=results,
        details=details or {},
    )


# ------------------------------------------------------------------------------------------------ metrics
@metric(
    "tool_call_count_v1",
    description="Tool calls per invocation (ADK efficiency metric, informational; lower is better).",
    interval=UNBOUNDED,
    requires_expected=False,
    informational=True,
    needs_content=False,
)
def tool_call_count_v1(ctx: MetricContext[None]) -> EvaluationResult:
    """ADK's tool call count: the mean number of tool calls per actual invocation."""
    values: list[float | None] = [float(len(tool_calls_of(invocation))) for invocation in ctx.actual]
    return _efficiency_result(ctx.actual, values, _mean_of_present(values), "")


@metric(
    "inference_call_count_v1",
    description="Model (inference) calls per invocation (ADK efficiency metric, informational; lower is better).",
    interval=UNBOUNDED,
    requires_expected=False,
    informational=True,
    needs_content=False,
)
def inference_call_count_v1(ctx: MetricContext[None]) -> EvaluationResult:
    """ADK's inference call count: the mean number of model calls per invocation that recorded them."""
    values = [inference_call_count(invocation) for invocation in ctx.actual]
    return _efficiency_result(ctx.actual, values, _mean_of_present(values), NO_MODEL_EVENTS)


@metric(
    "token_usage_v1",
    description="Tokens per invocation, with the per-type breakdown (ADK efficiency metric, informational).",
    interval=UNBOUNDED,
    requires_expected=False,
    informational=True,
    needs_content=False,
)
def token_usage_v1(ctx: MetricContext[None]) -> EvaluationResult:
    """ADK's token usage: total tokens per invocation; the breakdown is in `details`."""
    per_invocation = [token_usage_details(invocation) for invocation in ctx.actual]
    overall = _average_tokens(per_invocation)
    details = {"token_usage_details": overall, "per_invocation_token_usage_details": per_invocation}
    values = [d["total_tokens"] for d in per_invocation]
    return _efficiency_result(ctx.actual, values, overall["total_tokens"], NO_USAGE, details)


@metric(
    "invocation_duration_v1",
    description="Seconds per invocation, split into model, tool and framework time (ADK efficiency metric, "
    "informational).",
    interval=UNBOUNDED,
    requires_expected=False,
    informational=True,
    needs_content=False,
)
def invocation_duration_v1(ctx: MetricContext[None]) -> EvaluationResult:
    """ADK's invocation duration: wall-clock seconds per invocation; the split is in `details`."""
    per_invocation = [duration_details(invocation) for invocation in ctx.actual]
    overall = _average_durations(per_invocation)
    details = {"duration_details": overall, "per_invocation_duration_details": per_invocation}
    values = [d["total_seconds"] for d in per_invocation]
    return _efficiency_result(ctx.actual, values, overall["total_seconds"], NO_TIMING, details)
