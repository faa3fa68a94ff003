"""Small helpers shared by the built-in metrics: statuses, overall results, readable calls."""

from __future__ import annotations

from typing import Any, TypeVar

from google.genai import types as genai_types
from pydantic import BaseModel, ConfigDict, ValidationError, alias_generators

from agent_eval.errors import EvalInputError
from agent_eval.schema import EvalMetric, EvalStatus, EvaluationResult, Invocation, PerInvocationResult

__all__ = [
    "CriterionOptions",
    "MetricNotApplicable",
    "criterion_options",
    "format_call",
    "overall_result",
    "require_expected",
    "status_for",
]

OptionsT = TypeVar("OptionsT", bound=BaseModel)


class CriterionOptions(BaseModel):
    """Base of a metric's options model: snake or camel keys, unknown options rejected.

    `include_intermediate_responses_in_final` is accepted on every criterion, as ADK's `BaseCriterion` has it.
    """

    model_config = ConfigDict(
        extra="forbid", alias_generator=alias_generators.to_camel, populate_by_name=True, loc_by_alias=False
    )

    include_intermediate_responses_in_final: bool = False


def criterion_options(eval_metric: EvalMetric, model: type[OptionsT]) -> OptionsT:
    """The criterion's options (everything but `threshold`) parsed with the metric's options model.

    Raises:
        EvalInputError: an unknown option or a bad value, naming `criteria.<metric>.<option>`.
    """
    given = eval_metric.criterion.model_extra if eval_metric.criterion is not None else None
    try:
        return model.model_validate(given or {})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        field_name = f"criteria.{eval_metric.metric_name}" + (f".{where}" if where else "")
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = f"unknown option; known options: {', '.join(model.model_fields)}"
        raise EvalInputError(message, field=field_name) from None


class MetricNotApplicable(Exception):
    """The metric cannot be computed on this case (e.g. no expected invocations); not an error of the metric."""


def status_for(score: float | None, threshold: float | None) -> EvalStatus:
    """PASSED when `score >= threshold` (ADK's rule), FAILED below, NOT_EVALUATED without a score."""
    if score is None:
        return EvalStatus.NOT_EVALUATED
    if threshold is None:
        return EvalStatus.INFORMATIONAL
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


def overall_result(results: list[PerInvocationResult], threshold: float | None) -> EvaluationResult:
    """The mean of the per-invocation scores, with its status; joined explanations of the failing turns."""
    scored = [r.score for r in results if r.score is not None]
    if not scored:
        return EvaluationResult(per_invocation_results=results)
    overall = sum(scored) / len(scored)
    reasons = [
        f"turn {i}: {r.explanation}" if len(results) > 1 else r.explanation
        for i, r in enumerate(results, start=1)
        if r.explanation
    ]
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=status_for(overall, threshold),
        per_invocation_results=results,
        explanation="; ".join(r for r in reasons if r) or None,
    )


def require_expected(actual: list[Invocation], expected: list[Invocation] | None) -> list[Invocation]:
    """The expected invocations, checked to pair one to one with the actual ones.

    Raises:
        MetricNotApplicable: the case has no expected invocations (a conversation scenario).
        ValueError: the agent produced a different number of invocations than expected.
    """
    if expected is None:
        raise MetricNotApplicable("the case has no expected invocations (conversation_scenario)")
    if len(actual) != len(expected):
        raise ValueError(f"{len(actual)} actual invocation(s) but {len(expected)} expected")
    return expected


def format_call(call: genai_types.FunctionCall) -> str:
    """`name(key=value, ...)` with values in Python repr, e.g. `set_temperature(location='Bedroom', temperature=23)`."""
    args: dict[str, Any] = call.args or {}
    shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
    return f"{call.name}({shown})"
