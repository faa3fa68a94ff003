"""One way to write a metric: a function of a `MetricContext` plus its `@metric` line, called with ADK's
signature like every registered metric (ADK custom metrics keep theirs, unchanged)."""

from __future__ import annotations

import asyncio

import pytest
from google.genai.types import Content, Part

from agent_eval.metrics.common import CriterionOptions, MetricNotApplicable
from agent_eval.metrics.registry import MetricContext, MetricRegistry, metric
from agent_eval.schema import EvalConfig, EvalMetric, EvalStatus, EvaluationResult, Invocation


class LengthOptions(CriterionOptions):
    """At most `max_words` words in the final response."""

    max_words: int = 5


def turn(text: str) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="q")]),
        final_response=Content(role="model", parts=[Part(text=text)]),
    )


def short_answers(ctx: MetricContext[LengthOptions]) -> EvaluationResult:
    """The share of turns whose answer has at most `max_words` words and equals the expected one's length."""
    fits = [
        len(actual.final_response.parts[0].text.split()) <= ctx.options.max_words  # type: ignore[union-attr]
        for actual, _ in ctx.expected_pairs()
    ]
    score = sum(fits) / len(fits)
    status = EvalStatus.PASSED if ctx.threshold is not None and score >= ctx.threshold else EvalStatus.FAILED
    return EvaluationResult(overall_score=score, overall_eval_status=status, details={"seen": ctx.options.max_words})


def test_a_context_metric_is_called_with_adks_signature_and_its_parsed_options() -> None:
    registry = MetricRegistry()
    adk_callable = metric("short_answers", description="d", options=LengthOptions, registry=registry)(short_answers)
    config = EvalConfig.model_validate({"criteria": {"short_answers": {"threshold": 0.5, "maxWords": 2}}})
    [(eval_metric, spec)] = registry.resolve(config)

    actual = [turn("two words"), turn("three words here")]
    result = spec.function(eval_metric, actual, [turn("a"), turn("b")], None)

    assert spec.function is adk_callable
    assert adk_callable.__name__ == "short_answers" and adk_callable.__doc__ == short_answers.__doc__
    assert isinstance(result, EvaluationResult)
    assert (result.overall_score, result.overall_eval_status, result.details) == (0.5, EvalStatus.PASSED, {"seen": 2})


def test_the_context_pairs_turns_and_says_when_expected_ones_are_missing() -> None:
    eval_metric = EvalMetric(metric_name="m", threshold=0.5)
    with_expected = MetricContext(eval_metric, [turn("a")], [turn("b")], None, None)
    without = MetricContext(eval_metric, [turn("a")], None, None, None)
    uneven = MetricContext(eval_metric, [turn("a")], [turn("b"), turn("c")], None, None)

    assert with_expected.pairs() == [(turn("a"), turn("b"))] == with_expected.expected_pairs()
    assert without.pairs() == [(turn("a"), None)]
    assert with_expected.threshold == 0.5
    with pytest.raises(MetricNotApplicable, match="no expected invocations"):
        without.expected_pairs()
    with pytest.raises(ValueError, match="1 actual invocation\\(s\\) but 2 expected"):
        uneven.pairs()


def test_an_async_context_metric_gives_an_awaitable_and_an_adk_metric_is_registered_unchanged() -> None:
    registry = MetricRegistry()

    @metric("async_one", description="d", requires_expected=False, registry=registry)
    async def async_one(ctx: MetricContext[None]) -> EvaluationResult:
        await asyncio.sleep(0)
        return EvaluationResult(overall_score=float(len(ctx.actual)), overall_eval_status=EvalStatus.PASSED)

    def adk_style(
        eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: object = None
    ) -> EvaluationResult:
        return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)

    assert metric("adk_style", description="d", registry=registry)(adk_style) is adk_style
    outcome = async_one(EvalMetric(metric_name="async_one"), [turn("a")], None, None)
    assert asyncio.run(outcome).overall_score == 1.0  # type: ignore[arg-type]
    # Registering the ADK-callable form again (another registry) wraps nothing twice.
    again = metric("async_one", description="d", requires_expected=False, registry=MetricRegistry())(async_one)
    assert again is async_one
