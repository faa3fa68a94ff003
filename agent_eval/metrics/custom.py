"""Custom metrics: ADK custom metric functions, Vertex AI `CustomMetric`s and this project's per-invocation metrics.

Every custom metric ends up in the one registry with ADK's metric signature:

- **ADK** (`custom_metrics.<name>.code_config.name = "pkg.module.function"` in an `EvalConfig`, resolved by the
  registry): `call_metric` calls the function as ADK does, positionally, sync or async, with
  `eval_metric.threshold` cleared (the threshold is in `eval_metric.criterion.threshold`). A function whose
  module uses `google.adk` objects (e.g. `from google.adk.evaluation.eval_case import Invocation`) gets ADK's own
  pydantic models, converted through JSON, and may return ADK's `EvaluationResult`; any other function gets ours.
- **Vertex AI**: `register_custom_metric(CustomMetric(name, metric_function))`, where the function takes a
  dataset row and returns `{name: score, ...}` (see `CustomMetric`).
- **This project**: the `invocation_metric` decorator over a function that scores one invocation.

Options (see `agent_eval.metrics.registry`): an ADK custom metric named in `custom_metrics` accepts any
criterion key, as ADK passes the whole criterion to the function; a Vertex `CustomMetric` takes a dataset row,
not options, so it accepts none besides `threshold` (and ADK's common `include_intermediate_responses_in_final`);
an `invocation_metric` accepts the options it declares. Any other key fails when the config is resolved.
"""

from __future__ import annotations

import importlib
import inspect
import numbers
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, alias_generators

from agent_eval.metrics.common import (
    COMMON_OPTIONS,
    MetricNotApplicable,
    criterion_options,
    overall_result,
    require_expected,
    status_for,
)
from agent_eval.metrics.registry import REGISTRY, MetricFunction, MetricRegistry, MetricSpec, metric
from agent_eval.schema import (
    ConversationScenario,
    EvalMetric,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    content_text,
    tool_calls_of,
)

__all__ = ["CustomMetric", "call_metric", "invocation_metric", "register_custom_metric", "vertex_row"]

F = TypeVar("F", bound=Callable[..., Any])

_ADK_PACKAGE = "google.adk"
_ADK_MODELS = {
    "EvalMetric": "google.adk.evaluation.eval_metrics",
    "Invocation": "google.adk.evaluation.eval_case",
    "ConversationScenario": "google.adk.evaluation.conversation_scenarios",
}


# --------------------------------------------------------------------------------------------- ADK bridge
def call_metric(
    function: MetricFunction,
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: list[Invocation] | None,
    conversation_scenario: ConversationScenario | None,
) -> object:
    """Call a metric function positionally, as ADK does; the result may be awaitable.

    A custom metric declared in the config (one with a `custom_function_path`) gets a copy of `eval_metric`
    without the deprecated top-level threshold, as in ADK, and ADK's own models when its module uses
    google.adk's types. Built-in and registered metrics are called with ours, unchanged.
    """
    if eval_metric.custom_function_path is None:
        return function(eval_metric, actual_invocations, expected_invocations, conversation_scenario)
    eval_metric = eval_metric.model_copy(update={"threshold": None})
    if not uses_adk_types(function):
        return function(eval_metric, actual_invocations, expected_invocations, conversation_scenario)
    expected = None if expected_invocations is None else [_to_adk(i) for i in expected_invocations]
    scenario = None if conversation_scenario is None else _to_adk(conversation_scenario)
    return function(_to_adk(eval_metric), [_to_adk(i) for i in actual_invocations], expected, scenario)


def uses_adk_types(function: Callable[..., Any]) -> bool:
    """Whether the function's module refers to objects from google.adk (so it expects ADK's models)."""
    module = inspect.getmodule(inspect.unwrap(function))
    return module is not None and any(_from_adk(value) for value in vars(module).values())


def _from_adk(value: object) -> bool:
    name = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
    return isinstance(name, str) and (name == _ADK_PACKAGE or name.startswith(f"{_ADK_PACKAGE}."))


def _to_adk(model: BaseModel) -> Any:
    """Our model as google.adk's model of the same name (through JSON, so bytes and enums survive)."""
    name = type(model).__name__
    adk_model = getattr(importlib.import_module(_ADK_MODELS[name]), name)
    return adk_model.model_validate_json(model.model_dump_json(exclude_none=True))


# ----------------------------------------------------------------------------------- per-invocation core
@dataclass(frozen=True)
class _Outcome:
    """What a per-invocation scorer found: the score, why, and extra values kept in `details`."""

    score: float
    explanation: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)


_ScoreOne = Callable[[EvalMetric, Invocation, Invocation | None], Awaitable[_Outcome]]


def _per_invocation_metric(score_one: _ScoreOne, requires_expected: bool) -> MetricFunction:
    """An ADK-signature metric that scores each invocation; overall = mean, statuses against the threshold."""

    async def evaluate(
        eval_metric: EvalMetric,
        actual_invocations: list[Invocation],
        expected_invocations: list[Invocation] | None,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        pairs = _pairs(actual_invocations, expected_invocations, requires_expected)
        threshold = eval_metric.effective_threshold
        outcomes = [await score_one(eval_metric, actual, expected) for actual, expected in pairs]
        results = [
            PerInvocationResult(
                actual_invocation=actual,
                expected_invocation=expected,
                score=outcome.score,
                eval_status=status_for(outcome.score, threshold),
                explanation=outcome.explanation,
            )
            for (actual, expected), outcome in zip(pairs, outcomes, strict=True)
        ]
        return overall_result(results, threshold).model_copy(update={"details": _extras_by_key(outcomes)})

    return evaluate


def _pairs(
    actual: list[Invocation], expected: list[Invocation] | None, requires_expected: bool
) -> list[tuple[Invocation, Invocation | None]]:
    if not actual:
        raise MetricNotApplicable("the agent produced no invocations")
    if expected is None and not requires_expected:
        return [(invocation, None) for invocation in actual]
    return list(zip(actual, require_expected(actual, expected), strict=True))


def _extras_by_key(outcomes: list[_Outcome]) -> dict[str, list[Any]]:
    """`{key: [value per invocation]}`, None where an invocation did not report the key."""
    keys = dict.fromkeys(key for outcome in outcomes for key in outcome.extras)
    return {key: [outcome.extras.get(key) for outcome in outcomes] for key in keys}


async def _resolved(value: object) -> object:
    return await value if inspect.isawaitable(value) else value


def _as_score(value: object, source: str) -> float:
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{source} must give a number as the score, got {type(value).__name__}: {value!r}")
    return float(value)


# ------------------------------------------------------------------------------------- our own style
def invocation_metric(
    name: str,
    *,
    description: str,
    interval: tuple[float, float] = (0.0, 1.0),
    requires_expected: bool = True,
    options: type[BaseModel] | None = None,
    option_keys: Iterable[str] | None = None,
    registry: MetricRegistry = REGISTRY,
) -> Callable[[F], F]:
    """Register a function that scores one invocation as a metric (decorator); returns the function unchanged.

    The function is called once per actual invocation as `function(actual, expected, **options)`, sync or async:
    `expected` is the paired expected invocation (None for a conversation scenario, which only reaches the
    function when `requires_expected=False`). It returns the score or `(score, explanation)`. Each invocation's
    status is PASSED when `score >= threshold`; the overall score is the mean. A function that raises or returns
    anything else makes the metric NOT_EVALUATED for that case run, with the error recorded.

    Options: the criterion's options (besides `threshold`) are checked when the config is resolved, before any
    work starts; an unknown key is an `EvalInputError` naming the accepted ones. They are declared by, in order:
    - `options`, a pydantic model (e.g. a `CriterionOptions` subclass): its fields and aliases are the accepted
      keys, it checks the values, and the function gets every field it takes, validated, defaults filled in;
    - `option_keys`, the accepted keys (snake_case): the function gets the given ones, as written in the config;
    - else the function's signature: its keyword parameters after `(actual, expected)` are the accepted keys.
      A function with `**kwargs` must declare its keys with `options` or `option_keys` (a TypeError otherwise).
    Keys are snake_case or camelCase in the config and reach the function in snake_case. ADK's common
    `include_intermediate_responses_in_final` is accepted everywhere and passed only to a function that takes it.

    Example:
        ```python
        @invocation_metric("response_within_words", description="1 when the response has at most max_words words.")
        def response_within_words(actual: Invocation, expected: Invocation | None, *, max_words: int = 50):
            words = len(content_text(actual.final_response).split())
            return 1.0 if words <= max_words else (0.0, f"{words} words, more than {max_words}")
        ```
        used with `{"criteria": {"response_within_words": {"threshold": 1.0, "max_words": 30}}}`.

    Raises:
        TypeError: the function takes `**kwargs` and declares neither `options` nor `option_keys`.
    """

    def register(function: F) -> F:
        parameters, takes_any = _declared_parameters(name, function, options, option_keys)
        score_one = _invocation_scorer(name, function, _options_reader(options, parameters, takes_any))
        keys = parameters if options is None and option_keys is None else set(option_keys or ())
        metric(
            name,
            description=description,
            interval=interval,
            requires_expected=requires_expected,
            options=options,
            option_keys=keys,
            registry=registry,
        )(_per_invocation_metric(score_one, requires_expected))
        return function

    return register


def _invocation_scorer(
    name: str, function: Callable[..., Any], read_options: Callable[[EvalMetric], dict[str, Any]]
) -> Callable[[EvalMetric, Invocation, Invocation | None], Awaitable[_Outcome]]:
    """Scores one invocation with `function` (sync or async): its score, or `(score, explanation)`."""

    async def score_one(eval_metric: EvalMetric, actual: Invocation, expected: Invocation | None) -> _Outcome:
        value = await _resolved(function(actual, expected, **read_options(eval_metric)))
        if isinstance(value, tuple) and len(value) == 2:
            score, explanation = value
            return _Outcome(_as_score(score, name), None if explanation is None else str(explanation))
        return _Outcome(_as_score(value, name))

    return score_one


def _declared_parameters(
    name: str, function: Callable[..., Any], options: type[BaseModel] | None, option_keys: Iterable[str] | None
) -> tuple[set[str], bool]:
    """The function's option parameters and whether it takes **kwargs, checked against what it declares.

    Raises:
        TypeError: a `**kwargs` function declares no options, or it declares an option (besides ADK's common
            ones) that it does not take.
    """
    parameters, takes_any = _option_parameters(function)
    where = f"invocation_metric {name!r} ({getattr(function, '__name__', function)!r})"
    if takes_any and options is None and option_keys is None:
        raise TypeError(f"{where} takes **kwargs: declare its options with options=<model> or option_keys={{...}}")
    declared = set(option_keys or ()) | (set(options.model_fields) if options is not None else set())
    if not takes_any and (missing := sorted(declared - COMMON_OPTIONS - parameters)):
        raise TypeError(f"{where} declares options {missing} that the function does not take")
    return parameters, takes_any


def _option_parameters(function: Callable[..., Any]) -> tuple[set[str], bool]:
    """The option names a per-invocation function takes after (actual, expected), and whether it takes **kwargs."""
    parameters = list(inspect.signature(function).parameters.values())[2:]
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return names, any(p.kind is p.VAR_KEYWORD for p in parameters)


def _options_reader(
    model: type[BaseModel] | None, parameters: set[str], takes_any: bool
) -> Callable[[EvalMetric], dict[str, Any]]:
    """How the keyword arguments of a per-invocation function are read from a (resolved, checked) criterion."""

    def read(eval_metric: EvalMetric) -> dict[str, Any]:
        if model is not None:
            parsed = criterion_options(eval_metric, model)
            given = {key: getattr(parsed, key) for key in type(parsed).model_fields}
        else:
            extras = (eval_metric.criterion.model_extra or {}) if eval_metric.criterion is not None else {}
            given = {alias_generators.to_snake(key): value for key, value in extras.items()}
        return {key: value for key, value in given.items() if takes_any or key in parameters}

    return read


# ------------------------------------------------------------------------------------------- Vertex AI
@dataclass(frozen=True)
class CustomMetric:
    """Vertex AI's computation-based custom metric, scored per invocation on a dataset row.

    `metric_function(row)` gets the row of one invocation (`vertex_row`) and returns a dict with the score under
    `name`, e.g. `{"my_metric": 1.0, "explanation": "..."}`; an `explanation` key becomes the invocation's
    explanation and any other key is kept in `details[key]` (one value per invocation, as Vertex keeps
    `<name>/<key>` columns). The overall score is the mean; pass means `score >= threshold`.

    Attributes:
        name: the metric name used in `criteria`.
        metric_function: `row -> {name: score, ...}`, sync or async.
        description: what the metric measures.
        interval: the range of valid scores (default [0, 1]).

    The function gets a row, not options: a criterion for it accepts `threshold` (and ADK's common
    `include_intermediate_responses_in_final`) only; any other key fails when the config is resolved.
    """

    name: str
    metric_function: Callable[[dict[str, Any]], Any]
    description: str = ""
    interval: tuple[float, float] = (0.0, 1.0)


def register_custom_metric(custom_metric: CustomMetric, *, registry: MetricRegistry = REGISTRY) -> MetricSpec:
    """Add a Vertex-style `CustomMetric` to the registry; it needs no expected invocations.

    Raises:
        ValueError: a metric of that name is already registered.
    """
    name = custom_metric.name

    async def score_one(eval_metric: EvalMetric, actual: Invocation, expected: Invocation | None) -> _Outcome:
        returned = await _resolved(custom_metric.metric_function(vertex_row(actual, expected)))
        if not isinstance(returned, Mapping) or name not in returned:
            raise TypeError(f"CustomMetric {name!r} must return a dict with the score under {name!r}, got {returned!r}")
        extras = {key: value for key, value in returned.items() if key not in (name, "explanation")}
        explanation = returned.get("explanation")
        return _Outcome(_as_score(returned[name], name), None if explanation is None else str(explanation), extras)

    evaluate = _per_invocation_metric(score_one, requires_expected=False)
    description = custom_metric.description or f"Vertex AI custom metric {name!r}"
    metric(name, description=description, interval=custom_metric.interval, requires_expected=False, registry=registry)(
        evaluate
    )
    return registry.get(name)


def vertex_row(actual: Invocation, expected: Invocation | None) -> dict[str, Any]:
    """The Vertex AI dataset row of one invocation.

    Keys: `prompt` (user text), `response` (final response text), `predicted_trajectory`
    (`[{tool_name, tool_input}]`), `latency_in_seconds` when the invocation was timed, and with an expected
    invocation `reference_trajectory` and `reference` (when it has a final response).
    """
    row: dict[str, Any] = {
        "prompt": content_text(actual.user_content),
        "response": content_text(actual.final_response),
        "predicted_trajectory": _trajectory(actual),
    }
    if actual.duration is not None:
        row["latency_in_seconds"] = actual.duration
    if expected is not None:
        row["reference_trajectory"] = _trajectory(expected)
        if expected.final_response is not None:
            row["reference"] = content_text(expected.final_response)
    return row


def _trajectory(invocation: Invocation) -> list[dict[str, Any]]:
    return [{"tool_name": call.name, "tool_input": dict(call.args or {})} for call in tool_calls_of(invocation)]
