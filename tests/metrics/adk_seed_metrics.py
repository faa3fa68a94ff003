"""Custom metrics written as an ADK user writes them (ADK's custom-metric docs), against google.adk's own types.

Referenced from `custom_metrics.<name>.code_config.name` in the tests; they must run unchanged.
"""

import asyncio
import statistics

from google.adk.evaluation.conversation_scenarios import ConversationScenario
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


def check_final_response_exact_match(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: list[Invocation] | None,
    conversation_scenario: ConversationScenario | None,
) -> EvaluationResult:
    """1.0 per turn whose final response text equals the expected one exactly, else 0.0."""
    if not expected_invocations:
        return EvaluationResult(overall_score=0.0, overall_eval_status=EvalStatus.NOT_EVALUATED)

    per_invocation_results = []
    for actual, expected in zip(actual_invocations, expected_invocations):  # noqa: B905  (as in ADK's docs)
        actual_text = "".join([part.text for part in actual.final_response.parts])
        expected_text = "".join([part.text for part in expected.final_response.parts])
        score = 1.0 if actual_text == expected_text else 0.0
        per_invocation_results.append(
            PerInvocationResult(
                actual_invocation=actual,
                expected_invocation=expected,
                score=score,
                eval_status=EvalStatus.PASSED if score else EvalStatus.FAILED,
            )
        )

    average_score = statistics.mean(result.score for result in per_invocation_results)
    threshold = eval_metric.criterion.threshold
    return EvaluationResult(
        overall_score=average_score,
        overall_eval_status=EvalStatus.PASSED if average_score >= threshold else EvalStatus.FAILED,
        per_invocation_results=per_invocation_results,
    )


class ProfanityChecker:
    """A stand-in for an async profanity-detection API."""

    async def check(self, text: str) -> bool:
        """True when the text contains profanity."""
        await asyncio.sleep(0.01)
        return "profanity" in text.lower()


profanity_checker = ProfanityChecker()


async def check_for_profanity(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: list[Invocation] | None,
    conversation_scenario: ConversationScenario | None,
) -> EvaluationResult:
    """0.0 per turn whose final response contains profanity, else 1.0 (async)."""
    per_invocation_results = []
    for invocation in actual_invocations:
        agent_response = "".join(part.text for part in invocation.final_response.parts)
        has_profanity = await profanity_checker.check(agent_response)
        per_invocation_results.append(
            PerInvocationResult(
                actual_invocation=invocation,
                score=0.0 if has_profanity else 1.0,
                eval_status=EvalStatus.FAILED if has_profanity else EvalStatus.PASSED,
            )
        )

    scores = [r.score for r in per_invocation_results if r.eval_status != EvalStatus.NOT_EVALUATED]
    average_score = statistics.mean(scores)
    threshold = eval_metric.criterion.threshold
    return EvaluationResult(
        overall_score=average_score,
        overall_eval_status=EvalStatus.PASSED if average_score >= threshold else EvalStatus.FAILED,
        per_invocation_results=per_invocation_results,
    )


# Not from ADK's docs: records what it was called with, so a test can check the argument types.
calls: list[tuple[object, ...]] = []


def record_arguments(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: list[Invocation] | None,
    conversation_scenario: ConversationScenario | None,
) -> EvaluationResult:
    """Scores 1.0 and keeps its arguments in `calls`."""
    calls.append((eval_metric, actual_invocations, expected_invocations, conversation_scenario))
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)
