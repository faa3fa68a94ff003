"""The per-invocation engine (`metrics.per_invocation`): one function that scores one invocation, made into a
metric with ADK's signature by `@metric(..., per_invocation=True)` or `@invocation_metric`.

Every test registers its metrics in a private `MetricRegistry()`, so nothing leaks into the global one; the
expected numbers are computed by hand in the comments."""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from google.genai.types import Content, Part

from agent_eval.metrics import REGISTRY
from agent_eval.metrics.common import CriterionOptions, MetricNotApplicable, below_threshold
from agent_eval.metrics.custom import invocation_metric
from agent_eval.metrics.per_invocation import NO_INVOCATIONS, Score, as_score
from agent_eval.metrics.registry import MetricContext, MetricRegistry, MetricSpec, metric
from agent_eval.metrics.scoring import score_case_run
from agent_eval.schema import (
    AgentRun,
    ConversationScenario,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
    content_text,
)

PASSED, FAILED = EvalStatus.PASSED, EvalStatus.FAILED
NOT_EVALUATED, INFORMATIONAL = EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL
SCENARIO = ConversationScenario(starting_prompt="Hi", conversation_plan="Say hi.")


# ------------------------------------------------------------------------------------------------ helpers
def turn(response: str, user: str = "q") -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        final_response=Content(role="model", parts=[Part(text=response)]),
    )


def text_of(invocation: Invocation | None) -> str | None:
    return None if invocation is None else content_text(invocation.final_response)


def resolve(registry: MetricRegistry, name: str, criterion: dict[str, Any]) -> tuple[EvalMetric, MetricSpec]:
    """The criterion resolved as a config's would be (option keys and values checked)."""
    [(eval_metric, spec)] = registry.resolve(EvalConfig.model_validate({"criteria": {name: criterion}}))
    return eval_metric, spec


def evaluate(
    registry: MetricRegistry,
    name: str,
    criterion: dict[str, Any],
    actual: list[Invocation],
    expected: list[Invocation] | None = None,
) -> EvaluationResult:
    """A sync metric called with ADK's signature."""
    eval_metric, spec = resolve(registry, name, criterion)
    outcome = spec.function(eval_metric, actual, expected, None)
    assert isinstance(outcome, EvaluationResult)
    return outcome


def awaited(outcome: object) -> EvaluationResult:
    assert inspect.iscoroutine(outcome), f"expected an awaitable, got {type(outcome).__name__}"
    result = asyncio.run(outcome)
    assert isinstance(result, EvaluationResult)
    return result


def turn_summary(result: EvaluationResult) -> list[tuple[float | None, EvalStatus, str | None]]:
    return [(r.score, r.eval_status, r.explanation) for r in result.per_invocation_results]


def unawaited_coroutine_warnings(action: Callable[[], object]) -> list[str]:
    """The "coroutine ... was never awaited" warnings `action` causes (garbage collected before looking)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
        gc.collect()
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, RuntimeWarning) and "was never awaited" in str(w.message)
    ]


# Scores and details by response text, for the three-turn metric below.
REPORTS: dict[str, Score] = {
    "one": Score(1.0, "perfect", {"words": 1}),
    "two": Score(0.25, "poor", {}),
    "three": Score(0.5, "half", {"words": 3, "tone": "dry"}),
}
THREE = [turn("one"), turn("two"), turn("three")]


def three_turn_registry(**decorator: Any) -> MetricRegistry:
    registry = MetricRegistry()

    @invocation_metric("reported", description="d", requires_expected=False, registry=registry, **decorator)
    def reported(actual: Invocation, expected: Invocation | None) -> Score:
        return REPORTS[text_of(actual) or ""]

    return registry


# -------------------------------------------------------------------------------- 1. scores and details
@pytest.mark.parametrize(
    ("threshold", "statuses", "overall_status"),
    [
        (0.5, [PASSED, FAILED, PASSED], PASSED),  # 0.5 >= 0.5 passes; mean 7/12 = 0.583 >= 0.5
        (0.6, [PASSED, FAILED, FAILED], FAILED),  # mean 7/12 = 0.583 < 0.6
    ],
)
def test_turns_are_scored_against_the_threshold_and_details_hold_one_value_per_turn(
    threshold: float, statuses: list[EvalStatus], overall_status: EvalStatus
) -> None:
    result = evaluate(three_turn_registry(), "reported", {"threshold": threshold}, THREE)

    assert [r.score for r in result.per_invocation_results] == [1.0, 0.25, 0.5]
    assert [r.eval_status for r in result.per_invocation_results] == statuses
    assert result.overall_score == pytest.approx(7 / 12)  # (1.0 + 0.25 + 0.5) / 3
    assert result.overall_eval_status is overall_status
    # One list per key, in the order the keys first appear; None where a turn did not report the key.
    assert list(result.details.items()) == [("words", [1, None, 3]), ("tone", [None, None, "dry"])]
    assert [text_of(r.actual_invocation) for r in result.per_invocation_results] == ["one", "two", "three"]
    assert [r.expected_invocation for r in result.per_invocation_results] == [None, None, None]


def test_without_a_threshold_every_status_is_informational() -> None:
    registry = three_turn_registry()
    outcome = registry.get("reported").function(EvalMetric(metric_name="reported"), THREE, None, None)
    assert isinstance(outcome, EvaluationResult)
    assert [r.eval_status for r in outcome.per_invocation_results] == [INFORMATIONAL] * 3
    assert outcome.overall_score == pytest.approx(7 / 12)
    assert outcome.overall_eval_status is INFORMATIONAL


# ------------------------------------------------------------------------------------- 2. explain_when
def test_explain_when_keeps_only_the_explanations_of_turns_below_the_threshold() -> None:
    result = evaluate(three_turn_registry(explain_when=below_threshold), "reported", {"threshold": 0.5}, THREE)

    assert turn_summary(result) == [(1.0, PASSED, None), (0.25, FAILED, "poor"), (0.5, PASSED, None)]
    assert result.explanation == "turn 2: poor"


def test_without_explain_when_every_turn_keeps_its_explanation() -> None:
    result = evaluate(three_turn_registry(), "reported", {"threshold": 0.5}, THREE)

    assert turn_summary(result) == [(1.0, PASSED, "perfect"), (0.25, FAILED, "poor"), (0.5, PASSED, "half")]
    assert result.explanation == "turn 1: perfect; turn 2: poor; turn 3: half"


def test_one_turn_explanation_has_no_turn_prefix() -> None:
    result = evaluate(three_turn_registry(), "reported", {"threshold": 0.5}, [turn("two")])
    assert (result.overall_score, result.overall_eval_status, result.explanation) == (0.25, FAILED, "poor")


# -------------------------------------------------------------------------------------- 3. case details
class BudgetOptions(CriterionOptions):
    max_words: int = 5
    unit: str = "words"


def test_case_details_come_first_from_the_parsed_options_then_the_turns_keys() -> None:
    registry = MetricRegistry()
    received: list[dict[str, Any]] = []

    @invocation_metric(
        "within_budget",
        description="d",
        requires_expected=False,
        options=BudgetOptions,
        details=lambda options: {"budget": f"{options.max_words} {options.unit}", "unit": options.unit},
        registry=registry,
    )
    def within_budget(actual: Invocation, expected: Invocation | None, *, max_words: int, unit: str) -> Score:
        received.append({"max_words": max_words, "unit": unit})
        words = len((text_of(actual) or "").split())
        return Score(1.0 if words <= max_words else 0.0, details={"words": words})

    actual = [turn("a b"), turn("a b c")]
    result = evaluate(registry, "within_budget", {"threshold": 1.0, "maxWords": 2}, actual)

    # camelCase maxWords parsed to max_words=2; unit's default filled in; the common option is not passed
    # (the function does not take it).
    assert received == [{"max_words": 2, "unit": "words"}] * 2
    assert list(result.details.items()) == [("budget", "2 words"), ("unit", "words"), ("words", [2, 3])]
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]
    assert (result.overall_score, result.overall_eval_status) == (0.5, FAILED)


# ------------------------------------------------------------------------------------- 4. reference-free
def reference_free_registry(seen: list[Invocation | None]) -> MetricRegistry:
    registry = MetricRegistry()

    @invocation_metric("free", description="d", requires_expected=False, uses_expected=False, registry=registry)
    def free(actual: Invocation, expected: Invocation | None) -> float:
        seen.append(expected)
        return 1.0 if text_of(actual) == "yes" else 0.0

    return registry


def test_a_reference_free_metric_never_pairs_the_cases_expected_invocations() -> None:
    seen: list[Invocation | None] = []
    registry = reference_free_registry(seen)
    expected = [turn("x"), turn("y"), turn("z")]  # three expected, two actual: no pairing error

    result = evaluate(registry, "free", {"threshold": 0.5}, [turn("yes"), turn("no")], expected)

    assert seen == [None, None]
    assert turn_summary(result) == [(1.0, PASSED, None), (0.0, FAILED, None)]
    assert [r.expected_invocation for r in result.per_invocation_results] == [None, None]
    assert (result.overall_score, result.overall_eval_status) == (0.5, PASSED)


@pytest.mark.parametrize("expected", [None, [turn("x"), turn("y")]], ids=["no-expected", "two-expected"])
def test_a_reference_free_metric_without_actual_invocations_is_unscored(expected: list[Invocation] | None) -> None:
    seen: list[Invocation | None] = []
    result = evaluate(reference_free_registry(seen), "free", {"threshold": 0.5}, [], expected)

    assert seen == []
    assert (result.overall_score, result.overall_eval_status, result.per_invocation_results) == (
        None,
        NOT_EVALUATED,
        [],
    )


# ----------------------------------------------------------------------------------------- 5. pairing
def pairing_registry(seen: list[tuple[str | None, str | None]], *, requires_expected: bool) -> MetricRegistry:
    registry = MetricRegistry()

    @invocation_metric("same", description="d", requires_expected=requires_expected, registry=registry)
    def same(actual: Invocation, expected: Invocation | None) -> float:
        seen.append((text_of(actual), text_of(expected)))
        return 1.0 if expected is not None and text_of(actual) == text_of(expected) else 0.0

    return registry


def test_a_metric_that_requires_expected_invocations_pairs_them_one_to_one() -> None:
    seen: list[tuple[str | None, str | None]] = []
    registry = pairing_registry(seen, requires_expected=True)

    result = evaluate(registry, "same", {"threshold": 1.0}, [turn("a"), turn("b")], [turn("a"), turn("c")])

    assert seen == [("a", "a"), ("b", "c")]
    assert [text_of(r.expected_invocation) for r in result.per_invocation_results] == ["a", "c"]
    assert (result.overall_score, result.overall_eval_status) == (0.5, FAILED)


@pytest.mark.parametrize("requires_expected", [True, False])
def test_expected_invocations_of_another_count_are_a_value_error(requires_expected: bool) -> None:
    seen: list[tuple[str | None, str | None]] = []
    eval_metric, spec = resolve(pairing_registry(seen, requires_expected=requires_expected), "same", {"threshold": 1})

    with pytest.raises(ValueError, match=r"^2 actual invocation\(s\) but 3 expected$"):
        spec.function(eval_metric, [turn("a"), turn("b")], [turn("a"), turn("b"), turn("c")], None)
    assert seen == []

    # Scoring records it as the case run's error.
    case = EvalCase(eval_id="c", conversation=[turn("a"), turn("b"), turn("c")])
    run = AgentRun(eval_set_id="s", eval_id="c", invocations=[turn("a"), turn("b")])
    record = asyncio.run(score_case_run(spec, eval_metric, case, run))
    assert (record.score, record.status, record.error) == (
        None,
        NOT_EVALUATED,
        "ValueError: 2 actual invocation(s) but 3 expected",
    )


def test_a_metric_that_requires_expected_invocations_does_not_apply_without_them() -> None:
    seen: list[tuple[str | None, str | None]] = []
    eval_metric, spec = resolve(pairing_registry(seen, requires_expected=True), "same", {"threshold": 1.0})

    with pytest.raises(MetricNotApplicable, match="the case has no expected invocations"):
        spec.function(eval_metric, [turn("a")], None, None)
    assert seen == []


def test_optional_expected_invocations_are_given_when_the_case_has_them_else_none() -> None:
    seen: list[tuple[str | None, str | None]] = []
    registry = pairing_registry(seen, requires_expected=False)

    with_expected = evaluate(registry, "same", {"threshold": 1.0}, [turn("a")], [turn("a")])
    without = evaluate(registry, "same", {"threshold": 1.0}, [turn("a")], None)

    assert seen == [("a", "a"), ("a", None)]
    assert (with_expected.overall_score, without.overall_score) == (1.0, 0.0)


def test_optional_expected_invocations_and_no_actual_ones_do_not_apply() -> None:
    seen: list[tuple[str | None, str | None]] = []
    eval_metric, spec = resolve(pairing_registry(seen, requires_expected=False), "same", {"threshold": 1.0})

    with pytest.raises(MetricNotApplicable) as raised:
        spec.function(eval_metric, [], None, None)
    assert str(raised.value) == NO_INVOCATIONS == "the agent produced no invocations"

    case = EvalCase(eval_id="sim", conversation_scenario=SCENARIO)
    run = AgentRun(eval_set_id="s", eval_id="sim", invocations=[])
    record = asyncio.run(score_case_run(spec, eval_metric, case, run))
    assert (record.score, record.status, record.error) == (None, NOT_EVALUATED, None)
    assert record.explanation == "not applicable: the agent produced no invocations"
    assert seen == []


def test_no_actual_and_no_expected_invocations_is_unscored() -> None:
    seen: list[tuple[str | None, str | None]] = []
    for requires_expected in (True, False):
        registry = pairing_registry(seen, requires_expected=requires_expected)
        eval_metric, spec = resolve(registry, "same", {"threshold": 1.0})
        outcome = spec.function(eval_metric, [], [], None)
        assert isinstance(outcome, EvaluationResult)
        assert (outcome.overall_score, outcome.overall_eval_status, outcome.per_invocation_results) == (
            None,
            NOT_EVALUATED,
            [],
        )
    assert seen == []


# ------------------------------------------------------------------------------------------------ 6. async
def word_score(actual: Invocation) -> Score:
    words = len((text_of(actual) or "").split())
    return Score(1.0 / words, f"{words} words", {"words": words})


def test_an_async_function_makes_an_awaitable_metric_with_the_sync_ones_result() -> None:
    registry = MetricRegistry()

    @invocation_metric("sync_words", description="d", requires_expected=False, registry=registry)
    def sync_words(actual: Invocation, expected: Invocation | None) -> Score:
        return word_score(actual)

    @invocation_metric("async_words", description="d", requires_expected=False, registry=registry)
    async def async_words(actual: Invocation, expected: Invocation | None) -> Score:
        await asyncio.sleep(0)
        return word_score(actual)

    actual = [turn("a"), turn("a b"), turn("a b c d")]
    sync_result = evaluate(registry, "sync_words", {"threshold": 0.5}, actual)
    eval_metric, spec = resolve(registry, "async_words", {"threshold": 0.5})
    async_result = awaited(spec.function(eval_metric, actual, None, None))

    assert async_result == sync_result
    # 1/1, 1/2, 1/4: mean 1.75 / 3 = 0.5833 >= 0.5
    assert turn_summary(async_result) == [
        (1.0, PASSED, "1 words"),
        (0.5, PASSED, "2 words"),
        (0.25, FAILED, "4 words"),
    ]
    assert async_result.overall_score == pytest.approx(1.75 / 3)
    assert async_result.overall_eval_status is PASSED
    assert async_result.details == {"words": [1, 2, 4]}


def test_the_unawaited_coroutine_check_sees_a_dropped_coroutine() -> None:
    """The check the next test relies on does see what it looks for."""

    async def never() -> None:
        return None

    assert len(unawaited_coroutine_warnings(never)) == 1


def test_an_async_turn_that_raises_stops_the_later_turns_without_unawaited_coroutines() -> None:
    registry = MetricRegistry()
    started: list[str | None] = []

    @invocation_metric("flaky", description="d", requires_expected=False, registry=registry)
    async def flaky(actual: Invocation, expected: Invocation | None) -> float:
        started.append(text_of(actual))
        await asyncio.sleep(0)
        if text_of(actual) == "two":
            raise RuntimeError("turn two broke")
        return 1.0

    eval_metric, spec = resolve(registry, "flaky", {"threshold": 0.5})

    def score() -> None:
        outcome = spec.function(eval_metric, THREE, None, None)
        assert inspect.iscoroutine(outcome)
        with pytest.raises(RuntimeError, match=r"^turn two broke$"):
            asyncio.run(outcome)

    assert unawaited_coroutine_warnings(score) == []
    assert started == ["one", "two"]  # the third turn's coroutine was made but never started


def test_a_sync_turn_that_raises_stops_the_later_turns() -> None:
    registry = MetricRegistry()
    started: list[str | None] = []

    @invocation_metric("flaky", description="d", requires_expected=False, registry=registry)
    def flaky(actual: Invocation, expected: Invocation | None) -> float:
        started.append(text_of(actual))
        if text_of(actual) == "two":
            raise RuntimeError("turn two broke")
        return 1.0

    eval_metric, spec = resolve(registry, "flaky", {"threshold": 0.5})
    with pytest.raises(RuntimeError, match=r"^turn two broke$"):
        spec.function(eval_metric, THREE, None, None)
    assert started == ["one", "two"]

    # Scoring records the error and goes on.
    case = EvalCase(eval_id="sim", conversation_scenario=SCENARIO)
    run = AgentRun(eval_set_id="s", eval_id="sim", invocations=THREE)
    record = asyncio.run(score_case_run(spec, eval_metric, case, run))
    assert (record.score, record.status, record.error) == (None, NOT_EVALUATED, "RuntimeError: turn two broke")


def test_an_async_function_makes_an_awaitable_even_without_turns() -> None:
    registry = MetricRegistry()

    @invocation_metric("async_free", description="d", requires_expected=False, uses_expected=False, registry=registry)
    async def async_free(actual: Invocation, expected: Invocation | None) -> float:
        return 1.0

    eval_metric, spec = resolve(registry, "async_free", {"threshold": 0.5})
    result = awaited(spec.function(eval_metric, [], None, None))
    assert (result.overall_score, result.overall_eval_status, result.per_invocation_results) == (
        None,
        NOT_EVALUATED,
        [],
    )


# ----------------------------------------------------------------------------------- 7. decorator misuse
def one(actual: Invocation, expected: Invocation | None) -> float:
    return 1.0


def test_per_invocation_rules_on_another_kind_of_metric_are_a_type_error() -> None:
    registry = MetricRegistry()
    message = r"^metric 'ctx': uses_expected, explain_when and details need per_invocation=True$"
    misuses: list[dict[str, Any]] = [{"explain_when": below_threshold}, {"details": lambda options: {}}]
    for misuse in misuses:
        with pytest.raises(TypeError, match=message):
            metric("ctx", description="d", registry=registry, **misuse)
    with pytest.raises(TypeError, match=message):
        metric("ctx", description="d", requires_expected=False, uses_expected=False, registry=registry)
    assert registry.names() == []


def test_a_metric_cannot_require_expected_invocations_it_does_not_use() -> None:
    registry = MetricRegistry()
    message = "^a metric that does not use expected invocations cannot require them: requires_expected=False$"
    with pytest.raises(TypeError, match=message):
        metric("m", description="d", per_invocation=True, uses_expected=False, registry=registry)
    with pytest.raises(TypeError, match=message):
        invocation_metric("m", description="d", uses_expected=False, registry=registry)(one)
    assert registry.names() == []


def test_options_that_do_not_match_the_function_are_a_type_error() -> None:
    registry = MetricRegistry()

    def loose(actual: Invocation, expected: Invocation | None, **options: Any) -> float:
        return 1.0

    def strict(actual: Invocation, expected: Invocation | None, *, limit: int = 1) -> float:
        return 1.0

    def parse(eval_metric: EvalMetric) -> object:
        return eval_metric.option("limit")

    with pytest.raises(TypeError, match=r"^per-invocation metric 'loose' \('loose'\) takes \*\*kwargs: declare"):
        invocation_metric("loose", description="d", registry=registry)(loose)
    with pytest.raises(TypeError, match=r"declares options \['cap', 'size'\] that the function does not take$"):
        invocation_metric("strict", description="d", option_keys={"limit", "size", "cap"}, registry=registry)(strict)
    with pytest.raises(TypeError, match=r"declares options \['max_words', 'unit'\] that the function does not take$"):
        invocation_metric("model", description="d", options=BudgetOptions, registry=registry)(strict)
    with pytest.raises(TypeError, match=r"has an options parser: the function must take its value as `options`$"):
        invocation_metric("parsed", description="d", options=parse, option_keys={"limit"}, registry=registry)(strict)
    assert registry.names() == []

    # Declared, they are fine: **kwargs with option_keys, and ADK's common option needs no parameter.
    invocation_metric("loose", description="d", option_keys={"limit"}, registry=registry)(loose)
    common = {"include_intermediate_responses_in_final"}
    invocation_metric("one", description="d", option_keys=common, registry=registry)(one)
    assert registry.names() == ["loose", "one"]


# ------------------------------------------------------------------------------------------- 8. options
def test_keyword_parameters_are_the_options_and_get_the_criterions_values_in_snake_case() -> None:
    registry = MetricRegistry()
    received: list[dict[str, Any]] = []

    @invocation_metric("within_words", description="d", requires_expected=False, registry=registry)
    def within_words(
        actual: Invocation,
        expected: Invocation | None,
        *,
        max_words: int = 50,
        include_intermediate_responses_in_final: bool = False,
    ) -> float:
        received.append({"max_words": max_words, "intermediate": include_intermediate_responses_in_final})
        return 1.0 if len((text_of(actual) or "").split()) <= max_words else 0.0

    spec = registry.get("within_words")
    assert spec.option_keys == frozenset({"max_words", "include_intermediate_responses_in_final"})

    criterion = {"threshold": 1.0, "maxWords": 2, "includeIntermediateResponsesInFinal": True}
    result = evaluate(registry, "within_words", criterion, [turn("a b"), turn("a b c")])
    assert received == [{"max_words": 2, "intermediate": True}] * 2
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]

    received.clear()
    result = evaluate(registry, "within_words", {"threshold": 1.0}, [turn("a b c")])  # unset: the defaults
    assert received == [{"max_words": 50, "intermediate": False}]
    assert result.overall_score == 1.0


def test_declared_option_keys_reach_a_kwargs_function_as_given_in_snake_case() -> None:
    registry = MetricRegistry()
    received: list[dict[str, Any]] = []

    @invocation_metric("loose", description="d", requires_expected=False, option_keys={"max_words"}, registry=registry)
    def loose(actual: Invocation, expected: Invocation | None, **options: Any) -> float:
        received.append(options)
        return 1.0

    evaluate(registry, "loose", {"threshold": 1.0, "maxWords": 3}, [turn("a")])
    evaluate(registry, "loose", {"threshold": 1.0}, [turn("a")])
    assert received == [{"max_words": 3}, {}]


def test_an_options_parser_gives_its_value_as_options_read_once_per_call() -> None:
    registry = MetricRegistry()
    parses: list[int] = []
    received: list[object] = []

    def parse(eval_metric: EvalMetric) -> dict[str, int]:
        parses.append(1)
        return {"x": int(eval_metric.option("x", 1))}

    @invocation_metric(
        "parsed", description="d", requires_expected=False, options=parse, option_keys={"x"}, registry=registry
    )
    def parsed(actual: Invocation, expected: Invocation | None, options: dict[str, int]) -> float:
        received.append(options)
        return options["x"] / 4

    eval_metric, spec = resolve(registry, "parsed", {"threshold": 0.5, "x": 3})
    parses.clear()  # resolving checked the values once
    outcome = spec.function(eval_metric, THREE, None, None)

    assert parses == [1]
    assert received == [{"x": 3}] * 3
    assert isinstance(outcome, EvaluationResult)
    assert (outcome.overall_score, outcome.overall_eval_status) == (0.75, PASSED)
    assert spec.option_keys == frozenset({"x"})


# -------------------------------------------------------------------------------------- 9. return values
def test_a_return_value_that_is_not_a_score_is_a_type_error_naming_the_metric() -> None:
    registry = MetricRegistry()
    returns: dict[str, object] = {"text": "high", "pair": ("high", "why"), "none": None, "triple": (1.0, "a", "b")}

    @invocation_metric("wordy", description="d", requires_expected=False, registry=registry)
    def wordy(actual: Invocation, expected: Invocation | None) -> object:
        return returns[text_of(actual) or ""]

    eval_metric, spec = resolve(registry, "wordy", {"threshold": 0.5})
    with pytest.raises(TypeError, match=r"^wordy must give a number as the score, got str: 'high'$"):
        spec.function(eval_metric, [turn("text")], None, None)
    with pytest.raises(TypeError, match=r"^wordy must give a number as the score, got str: 'high'$"):
        spec.function(eval_metric, [turn("pair")], None, None)
    with pytest.raises(TypeError, match=r"^wordy must give a number as the score, got NoneType: None$"):
        spec.function(eval_metric, [turn("none")], None, None)
    with pytest.raises(TypeError, match=r"^wordy must give a number as the score, got tuple: \(1\.0, 'a', 'b'\)$"):
        spec.function(eval_metric, [turn("triple")], None, None)

    case = EvalCase(eval_id="sim", conversation_scenario=SCENARIO)
    run = AgentRun(eval_set_id="s", eval_id="sim", invocations=[turn("text")])
    record = asyncio.run(score_case_run(spec, eval_metric, case, run))
    assert (record.score, record.status) == (None, NOT_EVALUATED)
    assert record.error == "TypeError: wordy must give a number as the score, got str: 'high'"


def test_bool_and_int_scores_are_accepted_as_floats() -> None:
    registry = MetricRegistry()
    returns: dict[str, object] = {"t": True, "zero": 0, "pair": (1, "an int"), "score": Score(False, "a bool")}

    @invocation_metric("counted", description="d", requires_expected=False, registry=registry)
    def counted(actual: Invocation, expected: Invocation | None) -> object:
        return returns[text_of(actual) or ""]

    result = evaluate(registry, "counted", {"threshold": 0.5}, [turn("t"), turn("zero"), turn("pair"), turn("score")])

    assert turn_summary(result) == [
        (1.0, PASSED, None),
        (0.0, FAILED, None),
        (1.0, PASSED, "an int"),
        (0.0, FAILED, "a bool"),
    ]
    assert (result.overall_score, result.overall_eval_status) == (0.5, PASSED)  # 2 / 4
    for value in (True, 0, (1, "x"), Score(True)):
        score = as_score(value, "counted")
        assert type(score.value) is float and score.value in (0.0, 1.0)


# --------------------------------------------------------------------------------------------- 10. scorer
def test_the_spec_keeps_the_written_per_invocation_function_as_its_scorer() -> None:
    registry = MetricRegistry()

    def scored(actual: Invocation, expected: Invocation | None) -> float:
        return 1.0

    def by_context(ctx: MetricContext[None]) -> EvaluationResult:
        return EvaluationResult()

    adk_callable = metric("scored", description="d", per_invocation=True, registry=registry)(scored)
    assert invocation_metric("user", description="d", registry=registry)(one) is one
    metric("by_context", description="d", registry=registry)(by_context)

    assert registry.get("scored").scorer is scored
    assert registry.get("scored").function is adk_callable and adk_callable is not scored
    assert adk_callable.__name__ == "scored"
    assert registry.get("user").scorer is one
    assert registry.get("by_context").scorer is None


# ------------------------------------------------------------------------------------ 11. a built-in
def test_response_match_score_through_the_engine() -> None:
    """Turn 1 equals its reference (F = 1). Turn 2: reference 'A big red car.' -> a, big, red, car; response
    'A red bus.' -> a, red, bus; overlap 2 (a, red): P = 2/3, R = 2/4, F = 2PR / (P + R) = (2/3) / (7/6) = 4/7."""
    spec = REGISTRY.get("response_match_score")
    eval_metric = EvalMetric(metric_name="response_match_score", threshold=0.8)
    expected = [turn("The lamp is on."), turn("A big red car.")]
    actual = [turn("The lamp is on."), turn("A red bus.")]

    outcome = spec.function(eval_metric, actual, expected, None)

    assert isinstance(outcome, EvaluationResult)
    why = "ROUGE-1 F 0.571: expected 'A big red car.', got 'A red bus.'"
    assert turn_summary(outcome) == [(1.0, PASSED, None), (pytest.approx(4 / 7), FAILED, why)]
    assert outcome.overall_score == pytest.approx((1 + 4 / 7) / 2)  # 11/14 = 0.786 < 0.8
    assert outcome.overall_eval_status is FAILED
    assert outcome.explanation == f"turn 2: {why}"
    assert spec.scorer is not None and spec.scorer.__name__ == "response_match_score"
