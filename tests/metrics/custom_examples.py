"""Custom metrics in this project's own style and in Vertex AI's, plus broken ones, for `test_custom.py`.

The decorated and Vertex-style examples register into `EXAMPLES`, not the default registry, so the tests do
not change the set of built-in metrics other tests see.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_eval.metrics.custom import CustomMetric, invocation_metric, register_custom_metric
from agent_eval.metrics.registry import MetricRegistry
from agent_eval.schema import (
    ConversationScenario,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    content_text,
)

EXAMPLES = MetricRegistry()


# ------------------------------------------------------------------------------ @invocation_metric examples
@invocation_metric(
    "response_within_words",
    description="1 when the final response has at most max_words words.",
    requires_expected=False,
    registry=EXAMPLES,
)
def response_within_words(
    actual: Invocation, expected: Invocation | None, *, max_words: int = 50
) -> float | tuple[float, str]:
    """1.0 within the word budget, else 0.0 with the count."""
    words = len(content_text(actual.final_response).split())
    return 1.0 if words <= max_words else (0.0, f"{words} words, more than {max_words}")


@invocation_metric("mentions_reference", description="Share of reference words in the response.", registry=EXAMPLES)
async def mentions_reference(actual: Invocation, expected: Invocation | None) -> float:
    """Share of the expected response's distinct words that the actual response contains (async)."""
    await asyncio.sleep(0)
    assert expected is not None
    wanted = set(content_text(expected.final_response).lower().split())
    got = set(content_text(actual.final_response).lower().split())
    return len(wanted & got) / len(wanted) if wanted else 1.0


@invocation_metric("says_a_word", description="Returns a string: a broken metric.", registry=EXAMPLES)
def says_a_word(actual: Invocation, expected: Invocation | None) -> Any:
    """Returns text instead of a score."""
    return "great"


# ----------------------------------------------------------------------------------- Vertex-style example
def trajectory_and_reference(instance: dict[str, Any]) -> dict[str, Any]:
    """Vertex-style: 1 when the predicted tools equal the reference tools (names only) and the reference is named."""
    predicted = [step["tool_name"] for step in instance["predicted_trajectory"]]
    reference = [step["tool_name"] for step in instance["reference_trajectory"]]
    same_tools = predicted == reference
    score = 1.0 if same_tools and instance["reference"].lower() in instance["response"].lower() else 0.0
    return {
        "trajectory_and_reference": score,
        "explanation": "same tools" if same_tools else f"tools {predicted} != {reference}",
        "predicted_count": len(predicted),
    }


register_custom_metric(CustomMetric("trajectory_and_reference", trajectory_and_reference), registry=EXAMPLES)
register_custom_metric(CustomMetric("forgets_its_name", lambda instance: {"score": 1.0}), registry=EXAMPLES)


# ------------------------------------------------------------ ADK-signature custom metrics on our own types
def share_of_short_responses(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: list[Invocation] | None,
    conversation_scenario: ConversationScenario | None,
) -> EvaluationResult:
    """ADK's custom-metric signature with agent_eval's types: share of turns with at most `max_words` words."""
    assert isinstance(actual_invocations[0], Invocation)
    assert eval_metric.threshold is None, "ADK clears the top-level threshold of custom metrics"
    assert eval_metric.criterion is not None and eval_metric.criterion.threshold is not None
    max_words = eval_metric.option("max_words", 5)
    results = [
        PerInvocationResult(
            actual_invocation=invocation,
            score=1.0 if len(content_text(invocation.final_response).split()) <= max_words else 0.0,
        )
        for invocation in actual_invocations
    ]
    score = sum(r.score or 0.0 for r in results) / len(results)
    status = EvalStatus.PASSED if score >= eval_metric.criterion.threshold else EvalStatus.FAILED
    return EvaluationResult(overall_score=score, overall_eval_status=status, per_invocation_results=results)


def raises(eval_metric: EvalMetric, actual: list[Invocation], *rest: object) -> EvaluationResult:
    """A metric with a bug."""
    raise ValueError(f"boom on {len(actual)} invocation(s)")


async def raises_async(eval_metric: EvalMetric, actual: list[Invocation], *rest: object) -> EvaluationResult:
    """An async metric with a bug."""
    await asyncio.sleep(0)
    raise RuntimeError("async boom")


def returns_dict(eval_metric: EvalMetric, actual: list[Invocation], *rest: object) -> dict[str, float]:
    """Returns a plain dict instead of an EvaluationResult."""
    return {"overall_score": 1.0}


def returns_out_of_range(eval_metric: EvalMetric, actual: list[Invocation], *rest: object) -> EvaluationResult:
    """Returns 1.5 although the metric's interval is [0, 1]."""
    return EvaluationResult(overall_score=1.5, overall_eval_status=EvalStatus.PASSED)


def fails_on_bad_cases(eval_metric: EvalMetric, actual: list[Invocation], *rest: object) -> EvaluationResult:
    """Raises when a response says 'bad', else scores 1."""
    if any("bad" in content_text(invocation.final_response) for invocation in actual):
        raise ValueError("cannot score a bad case")
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)


def signed_score(eval_metric: EvalMetric, actual: list[Invocation], *rest: object) -> EvaluationResult:
    """Scores -0.5: valid only with a `metric_info` interval reaching below 0."""
    return EvaluationResult(overall_score=-0.5, overall_eval_status=EvalStatus.FAILED)
