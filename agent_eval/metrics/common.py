"""Small helpers shared by the built-in metrics: statuses, overall results, readable calls."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, alias_generators

from agent_eval.errors import EvalInputError
from agent_eval.schema import (
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    close_match,
    model_key_spellings,
)

__all__ = [
    "COMMON_OPTIONS",
    "NO_EXPECTED_INVOCATIONS",
    "CriterionOptions",
    "MetricNotApplicable",
    "below_threshold",
    "bool_option",
    "criterion_options",
    "model_option_keys",
    "model_option_spellings",
    "needs_explanation",
    "overall_result",
    "require_expected",
    "status_for",
    "unknown_option_message",
]

OptionsT = TypeVar("OptionsT", bound=BaseModel)

NO_EXPECTED_INVOCATIONS = "the case has no expected invocations (conversation_scenario)"
"""Why a metric that compares against expected invocations does not apply to a conversation-scenario case."""
NO_REFERENCE_FOR_RECORDED = (
    "the recorded session has no expected invocations (give an eval set with its case id through --reference)"
)
"""Why a metric that compares against expected invocations does not apply to a recorded case without one."""
CONTENT_NOT_CAPTURED = (
    "content not captured: the recorded spans hold no message text or tool arguments (set "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY where the agent runs)"
)
"""Why a metric that reads text or tool arguments does not apply to a recorded case without them."""

COMMON_OPTIONS = frozenset({"include_intermediate_responses_in_final"})
"""Options every criterion accepts besides `threshold`: the other field of ADK's `BaseCriterion`."""


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
            owner = _model_at(model, first["loc"][:-1])
            top_level = {"threshold"} if len(first["loc"]) == 1 else set()
            message = unknown_option_message(str(first["loc"][-1]), model_option_keys(owner) | top_level)
        raise EvalInputError(message, field=field_name) from None


def model_option_keys(model: type[BaseModel]) -> frozenset[str]:
    """The option names an options model declares (its field names)."""
    return frozenset(model.model_fields)


def model_option_spellings(model: type[BaseModel]) -> frozenset[str]:
    """Every key that sets a field of `model`: its names, aliases (camelCase ones included) and alias choices."""
    return model_key_spellings(model)


def unknown_option_message(key: str, accepted: Iterable[str]) -> str:
    """`unknown option 'algoritm' (did you mean 'algorithm'?); accepted options: algorithm, ...`.

    The close match (`close_match`: difflib, on the snake_case spelling) is given in the key's own style:
    camelCase for a camelCase key. The accepted options are listed sorted, snake_case (camelCase is accepted too).
    """
    names = sorted(set(accepted))
    shown = ", ".join(names) or "none"
    suggestion = close_match(key, names)
    if suggestion is None:
        return f"unknown option {key!r}; accepted options: {shown}"
    return f"unknown option {key!r} (did you mean {suggestion!r}?); accepted options: {shown}"


def _model_at(model: type[BaseModel], location: Iterable[int | str]) -> type[BaseModel]:
    """The model that holds the field at `location` inside `model` (through lists, dicts and optionals)."""
    for part in location:
        info = model.model_fields.get(str(part))
        if info is None:
            continue  # a list index or a dict key: the model stays the item's model
        inner = _inner_model(info.annotation)
        if inner is None:
            return model
        model = inner
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds: itself, or inside `list[...]`, `dict[..., ...]`, `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (list, dict, typing.Union, types.UnionType):
        for argument in reversed(typing.get_args(annotation)):
            found = _inner_model(argument)
            if found is not None:
                return found
    return None


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
        raise MetricNotApplicable(NO_EXPECTED_INVOCATIONS)
    if len(actual) != len(expected):
        raise ValueError(f"{len(actual)} actual invocation(s) but {len(expected)} expected")
    return expected


def below_threshold(score: float, threshold: float | None) -> bool:
    """Whether a turn fails: a threshold is set and the score is below it."""
    return threshold is not None and score < threshold


def needs_explanation(score: float, threshold: float | None) -> bool:
    """Whether a turn deserves an explanation: imperfect, and failing when there is a threshold."""
    return score < 1.0 and (threshold is None or score < threshold)


def bool_option(eval_metric: EvalMetric, name: str, default: bool) -> bool:
    """The boolean option `name` of a criterion, `default` when unset.

    Raises:
        EvalInputError: the value is not a boolean.
    """
    value = eval_metric.option(name, default)
    if not isinstance(value, bool):
        raise EvalInputError(
            f"{name} must be true or false, got {value!r}", field=f"criteria.{eval_metric.metric_name}.{name}"
        )
    return value
