"""The per-invocation metric: a function that scores one invocation, made into a metric with ADK's signature.

`@metric(..., per_invocation=True)` (the built-ins) and `@invocation_metric` (users) register such functions;
Vertex AI's `CustomMetric` is one too. The rules, one for all of them:

- Calls: `function(actual, expected, **options)` once per actual invocation, one after another. `expected` is
  the paired expected invocation: always given when the metric `requires_expected`; given when the case has
  expected invocations (else None) when it does not; always None when it does not `use_expected` (a
  reference-free metric: a case's expected invocations, of any number, are then never paired).
- Options (keyword arguments), declared by the decorator's `options`, `option_keys` or the function's own
  keyword parameters: an options model gives every field the function takes (validated, defaults filled in);
  a parser function gives its value as `options=...`; declared keys (or the signature) give the keys the
  criterion sets, snake_case. The criterion's options are read once per call of the metric.
- Returns: a number, `(score, explanation)`, or a `Score` (value, explanation, per-invocation details); sync or
  async. A sync function makes a sync metric, an async one an awaitable.
- Turns: each gets its score, PASSED when `score >= threshold` (FAILED below, INFORMATIONAL without a
  threshold), and its explanation; with `explain_when`, only when `explain_when(score, threshold)` holds.
- The case: the mean score, its status against the threshold, the explanations of the turns that have one
  (`turn i: ...` when there are several), and `details`: the decorator's `details(options)` (case-level), then
  for each key of the turns' `Score.details` a list with one value per turn (None where a turn has none).
- Pairing: expected invocations that do not pair one to one with the actual ones are a `ValueError` (scoring
  records it as an error); none when the metric `requires_expected`: `MetricNotApplicable`.
- No actual invocations: unscored (no score, NOT_EVALUATED, no turns) when none were expected either (ADK's
  rule) and for a reference-free metric (nothing to score); with optional expected invocations that the case
  does not have, the metric does not apply (`MetricNotApplicable`: "the agent produced no invocations").
- A function that raises or returns anything else than the above makes the metric raise: scoring records that
  as NOT_EVALUATED with the error (`metrics.scoring`).
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic import BaseModel, alias_generators

from agent_eval.metrics.common import (
    COMMON_OPTIONS,
    MetricNotApplicable,
    criterion_options,
    overall_result,
    require_expected,
    status_for,
)
from agent_eval.schema import (
    ConversationScenario,
    EvalMetric,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
)

__all__ = [
    "NO_INVOCATIONS",
    "ExplainWhen",
    "InvocationRules",
    "Score",
    "as_score",
    "declared_option_keys",
    "per_invocation_metric",
    "score_value",
]

NO_INVOCATIONS = "the agent produced no invocations"
"""Why a per-invocation metric does not apply to a case run without invocations (while some were expected)."""

ExplainWhen: TypeAlias = Callable[[float, float | None], bool]
"""`(score, threshold) -> bool`: whether a turn keeps its explanation (e.g. `common.needs_explanation`)."""


@dataclass(frozen=True, slots=True)
class Score:
    """One invocation's score, as a per-invocation function may return it.

    Attributes:
        value: the score.
        explanation: why, or None.
        details: values kept in the result's `details`, each key as a list with one value per invocation.
    """

    value: float
    explanation: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


ReadOptions: TypeAlias = Callable[[EvalMetric], tuple[object, dict[str, Any]]]
"""A criterion's parsed options (the model instance, the parser's value, or None) and the function's keyword
arguments read from them."""
Interpret: TypeAlias = Callable[[object], Score]
"""A per-invocation function's returned value (awaited) as a `Score`; raises TypeError for anything else."""
AdkMetric: TypeAlias = Callable[
    [EvalMetric, list[Invocation], list[Invocation] | None, ConversationScenario | None],
    EvaluationResult | Awaitable[EvaluationResult],
]


def as_score(value: object, source: str) -> Score:
    """A number, `(score, explanation)` or a `Score` returned by the per-invocation function `source`, as a `Score`.

    Raises:
        TypeError: anything else.
    """
    if type(value) is float:  # the common case first: a metric's hot path
        return Score(value)
    if isinstance(value, Score):
        return Score(score_value(value.value, source), value.explanation, value.details)
    if isinstance(value, tuple) and len(value) == 2:
        score, explanation = value
        return Score(score_value(score, source), None if explanation is None else str(explanation))
    return Score(score_value(value, source))


def score_value(value: object, source: str) -> float:
    """`value` as a score: a real number returned by `source`.

    Raises:
        TypeError: anything else.
    """
    if type(value) is not float and not isinstance(value, numbers.Real):
        raise TypeError(f"{source} must give a number as the score, got {type(value).__name__}: {value!r}")
    return float(value)


# ------------------------------------------------------------------------------------------------- options
def declared_option_keys(
    name: str,
    function: Callable[..., Any],
    options: type[BaseModel] | Callable[[EvalMetric], object] | None,
    option_keys: Iterable[str] | None,
) -> tuple[frozenset[str], ReadOptions]:
    """The criterion keys a per-invocation function accepts (besides an options model's fields, which the spec
    adds) and how its keyword arguments are read from a resolved criterion.

    Raises:
        TypeError: a `**kwargs` function declares no options, a function declares an option (besides ADK's common
            ones) that it does not take, or a parser's function takes no `options` parameter.
    """
    parameters, takes_any = _option_parameters(function)
    where = f"per-invocation metric {name!r} ({getattr(function, '__name__', function)!r})"
    model = options if isinstance(options, type) and issubclass(options, BaseModel) else None
    if options is not None and model is None:
        if "options" not in parameters and not takes_any:
            raise TypeError(f"{where} has an options parser: the function must take its value as `options`")
        return frozenset(option_keys or ()), _parser_reader(options)
    if takes_any and options is None and option_keys is None:
        raise TypeError(f"{where} takes **kwargs: declare its options with options=<model> or option_keys={{...}}")
    declared = set(option_keys or ()) | (set(model.model_fields) if model is not None else set())
    if not takes_any and (missing := sorted(declared - COMMON_OPTIONS - parameters)):
        raise TypeError(f"{where} declares options {missing} that the function does not take")
    keys = parameters if options is None and option_keys is None else set(option_keys or ())
    return frozenset(keys), _options_reader(model, parameters, takes_any)


def _option_parameters(function: Callable[..., Any]) -> tuple[set[str], bool]:
    """The option names a per-invocation function takes after (actual, expected), and whether it takes **kwargs."""
    parameters = list(inspect.signature(function).parameters.values())[2:]
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return names, any(p.kind is p.VAR_KEYWORD for p in parameters)


def _parser_reader(parser: Callable[[EvalMetric], object]) -> ReadOptions:
    """A parser's value, passed as `options=`."""

    def read(eval_metric: EvalMetric) -> tuple[object, dict[str, Any]]:
        parsed = parser(eval_metric)
        return parsed, {"options": parsed}

    return read


def _options_reader(model: type[BaseModel] | None, parameters: set[str], takes_any: bool) -> ReadOptions:
    """How the keyword arguments of a per-invocation function are read from a (resolved, checked) criterion."""

    def read(eval_metric: EvalMetric) -> tuple[object, dict[str, Any]]:
        parsed: BaseModel | None = None
        if model is not None:
            parsed = criterion_options(eval_metric, model)
            given = {key: getattr(parsed, key) for key in type(parsed).model_fields}
        else:
            extras = (eval_metric.criterion.model_extra or {}) if eval_metric.criterion is not None else {}
            given = {alias_generators.to_snake(key): value for key, value in extras.items()}
        return parsed, {key: value for key, value in given.items() if takes_any or key in parameters}

    return read


# -------------------------------------------------------------------------------------------------- metric
@dataclass(frozen=True)
class InvocationRules:
    """What a per-invocation metric does around its function (see the module docstring).

    Attributes:
        requires_expected: the metric needs the case's expected invocations.
        uses_expected: False for a reference-free metric: `expected` is always None.
        informational: the metric never gates: statuses are INFORMATIONAL whatever the threshold.
        explain_when: which turns keep their explanation; None: every turn.
        details: the case-level details, a function of the parsed options (the options model's instance or the
            parser's value; None without either).

    Raises:
        TypeError: a metric that requires expected invocations cannot do without them (`uses_expected=False`).
    """

    requires_expected: bool = True
    uses_expected: bool = True
    informational: bool = False
    explain_when: ExplainWhen | None = None
    details: Callable[[Any], Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        if self.requires_expected and not self.uses_expected:
            raise TypeError(
                "a metric that does not use expected invocations cannot require them: requires_expected=False"
            )


def per_invocation_metric(
    function: Callable[..., Any], read_options: ReadOptions, interpret: Interpret, rules: InvocationRules
) -> AdkMetric:
    """`function` (one invocation's score) as a metric with ADK's signature (rules in the module docstring).

    Args:
        function: `function(actual, expected, **options)`, sync or async.
        read_options: its keyword arguments from a criterion (`declared_option_keys`).
        interpret: its returned value as a `Score` (e.g. `as_score`).
        rules: what the metric does around the function.
    """

    is_async = inspect.iscoroutinefunction(function)  # an awaitable even for a case run without turns

    def evaluate(
        eval_metric: EvalMetric,
        actual_invocations: list[Invocation],
        expected_invocations: list[Invocation] | None,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult | Awaitable[EvaluationResult]:
        turns = _turns(actual_invocations, expected_invocations, rules)
        parsed, options = read_options(eval_metric)
        returned = [function(actual, expected, **options) for actual, expected in turns]

        def finish(scores: list[Score]) -> EvaluationResult:
            return _assembled(eval_metric, turns, parsed, scores, rules)

        if is_async or any(_awaitable(value) for value in returned):
            return _finished_later(returned, interpret, finish)
        return finish([interpret(value) for value in returned])

    return evaluate


def _awaitable(value: object) -> bool:
    """`inspect.isawaitable`, answered at once for what sync functions return (it checks an ABC: slow)."""
    return not isinstance(value, float | int | tuple | Score) and inspect.isawaitable(value)


def _turns(
    actual: list[Invocation], expected: list[Invocation] | None, rules: InvocationRules
) -> list[tuple[Invocation, Invocation | None]]:
    if rules.uses_expected and (expected is not None or rules.requires_expected):
        return list(zip(actual, require_expected(actual, expected), strict=True))
    if not actual and rules.uses_expected:
        raise MetricNotApplicable(NO_INVOCATIONS)
    return [(invocation, None) for invocation in actual]


async def _finished_later(
    returned: list[object], interpret: Interpret, finish: Callable[[list[Score]], EvaluationResult]
) -> EvaluationResult:
    """Await the turns' values in order (an async function's turns run one after another), then assemble."""
    scores: list[Score] = []
    try:
        for value in returned:
            scores.append(interpret(await value if inspect.isawaitable(value) else value))
    finally:
        for value in returned[len(scores) + 1 :]:
            if inspect.iscoroutine(value):
                value.close()  # a turn failed: the later ones are never started
    return finish(scores)


def _assembled(
    eval_metric: EvalMetric,
    turns: list[tuple[Invocation, Invocation | None]],
    parsed: object,
    scores: list[Score],
    rules: InvocationRules,
) -> EvaluationResult:
    """The case's result from its turns' scores (see the module docstring)."""
    threshold = None if rules.informational else eval_metric.effective_threshold
    explain_when = rules.explain_when
    results = [
        PerInvocationResult(
            actual_invocation=actual,
            expected_invocation=expected,
            score=score.value,
            eval_status=status_for(score.value, threshold),
            explanation=score.explanation if explain_when is None or explain_when(score.value, threshold) else None,
        )
        for (actual, expected), score in zip(turns, scores, strict=True)
    ]
    case_details = dict(rules.details(parsed)) if rules.details is not None else {}
    result = overall_result(results, threshold)
    result.details = {**case_details, **_details_by_key(scores)}
    return result


def _details_by_key(scores: list[Score]) -> dict[str, list[Any]]:
    """`{key: [value per invocation]}`, None where an invocation did not report the key."""
    keys = dict.fromkeys(key for score in scores for key in score.details)
    return {key: [score.details.get(key) for score in scores] for key in keys}
