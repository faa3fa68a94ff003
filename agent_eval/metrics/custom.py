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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from agent_eval.metrics.per_invocation import ExplainWhen, InvocationRules, Score, per_invocation_metric, score_value
from agent_eval.metrics.registry import REGISTRY, MetricFunction, MetricRegistry, MetricSpec, OptionsCheck, metric
from agent_eval.schema import (
    ConversationScenario,
    EvalMetric,
    Invocation,
    content_text,
    tool_calls_of,
)

__all__ = ["CustomMetric", "Score", "call_metric", "invocation_metric", "register_custom_metric", "vertex_row"]

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


# ------------------------------------------------------------------------------------- our own style
def invocation_metric(
    name: str,
    *,
    description: str,
    interval: tuple[float, float] = (0.0, 1.0),
    requires_expected: bool = True,
    uses_expected: bool = True,
    options: OptionsCheck | None = None,
    option_keys: Iterable[str] | None = None,
    explain_when: ExplainWhen | None = None,
    details: Callable[[Any], Mapping[str, Any]] | None = None,
    registry: MetricRegistry = REGISTRY,
) -> Callable[[F], F]:
    """Register a function that scores one invocation as a metric (decorator); returns the function unchanged.

    The function is called once per actual invocation as `function(actual, expected, **options)`, sync or async:
    `expected` is the paired expected invocation (None for a conversation scenario, which only reaches the
    function when `requires_expected=False`; always None with `uses_expected=False`, a reference-free metric
    whose case's expected invocations are never paired). It returns the score, `(score, explanation)`, or a
    `Score(value, explanation, details)` whose `details` keys land in the result's `details` as one value per
    invocation. Each invocation's status is PASSED when `score >= threshold`; the overall score is the mean. A
    function that raises or returns anything else makes the metric NOT_EVALUATED for that case run, with the
    error recorded. `explain_when(score, threshold)` keeps only the explanations it accepts (e.g.
    `needs_explanation`: imperfect and failing); `details(options)` adds case-level `details` from the parsed
    options. It is `@metric(..., per_invocation=True)`, the way the built-ins are written, which returns the
    registered metric instead (`metrics.per_invocation` has every rule).

    Options: the criterion's options (besides `threshold`) are checked when the config is resolved, before any
    work starts; an unknown key is an `EvalInputError` naming the accepted ones. They are declared by, in order:
    - `options`, a pydantic model (e.g. a `CriterionOptions` subclass): its fields and aliases are the accepted
      keys, it checks the values, and the function gets every field it takes, validated, defaults filled in;
    - `options`, a parser function `(EvalMetric) -> value` raising `EvalInputError` on a bad value, with its keys
      in `option_keys`: the function gets the value as `options=`;
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
        TypeError: the function takes `**kwargs` and declares neither `options` nor `option_keys`, declares an
            option it does not take, has an options parser but no `options` parameter, or requires expected
            invocations with `uses_expected=False`.
    """

    def register(function: F) -> F:
        metric(
            name,
            description=description,
            interval=interval,
            requires_expected=requires_expected,
            options=options,
            option_keys=option_keys,
            per_invocation=True,
            uses_expected=uses_expected,
            explain_when=explain_when,
            details=details,
            registry=registry,
        )(function)
        return function

    return register


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

    def score_row(actual: Invocation, expected: Invocation | None) -> object:
        return custom_metric.metric_function(vertex_row(actual, expected))

    def interpret(returned: object) -> Score:
        if not isinstance(returned, Mapping) or name not in returned:
            raise TypeError(f"CustomMetric {name!r} must return a dict with the score under {name!r}, got {returned!r}")
        details = {key: value for key, value in returned.items() if key not in (name, "explanation")}
        explanation = returned.get("explanation")
        return Score(score_value(returned[name], name), None if explanation is None else str(explanation), details)

    evaluate = per_invocation_metric(score_row, _no_options, interpret, InvocationRules(requires_expected=False))
    description = custom_metric.description or f"Vertex AI custom metric {name!r}"
    metric(name, description=description, interval=custom_metric.interval, requires_expected=False, registry=registry)(
        evaluate
    )
    return registry.get(name)


def _no_options(eval_metric: EvalMetric) -> tuple[object, dict[str, Any]]:
    return None, {}


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
