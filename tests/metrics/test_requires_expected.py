"""`MetricSpec.requires_expected` decides "not applicable" once, in scoring, for every metric."""

from __future__ import annotations

import asyncio

from google.genai.types import Content, Part

from agent_eval.metrics import REGISTRY
from agent_eval.metrics.registry import MetricRegistry, metric
from agent_eval.metrics.scoring import score_case_run
from agent_eval.results.model import MetricResult
from agent_eval.schema import (
    AgentRun,
    ConversationScenario,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
)

NOT_APPLICABLE = "not applicable: the case has no expected invocations (conversation_scenario)"
SCENARIO = EvalCase(
    eval_id="sim", conversation_scenario=ConversationScenario(starting_prompt="Hi", conversation_plan="Say hi.")
)


def turn(user: str, response: str) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        final_response=Content(role="model", parts=[Part(text=response)]),
    )


RUN = AgentRun(eval_set_id="set", eval_id="sim", invocations=[turn("Hi", "Hello")])


def _scored_with(registry: MetricRegistry, name: str, case: EvalCase, run: AgentRun) -> tuple[list[str], MetricResult]:
    calls: list[str] = []
    spec = registry.get(name)
    original = spec.function

    def counting(*args: object) -> object:
        calls.append(name)
        return original(*args)  # type: ignore[arg-type]

    spec = spec.__class__(**{**spec.__dict__, "function": counting})
    eval_metric = EvalMetric(metric_name=name, threshold=0.5)
    return calls, asyncio.run(score_case_run(spec, eval_metric, case, run))


def test_a_metric_that_needs_expected_invocations_is_not_called_on_a_scenario_case() -> None:
    registry = MetricRegistry()

    @metric("always_one", description="1.0, whatever the case", registry=registry)
    def always_one(
        eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: object = None
    ) -> EvaluationResult:
        return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)

    calls, result = _scored_with(registry, "always_one", SCENARIO, RUN)
    assert calls == []
    assert (result.status, result.score, result.error) == (EvalStatus.NOT_EVALUATED, None, None)
    assert result.explanation == NOT_APPLICABLE
    assert result.not_applicable

    conversation = [turn("Hi", "Hello")]
    calls, result = _scored_with(registry, "always_one", EvalCase(eval_id="c", conversation=conversation), RUN)
    assert calls == ["always_one"]
    assert (result.status, result.score) == (EvalStatus.PASSED, 1.0)


def test_a_reference_free_metric_still_scores_a_scenario_case() -> None:
    registry = MetricRegistry()

    @metric("reference_free", description="1.0", requires_expected=False, registry=registry)
    def reference_free(
        eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: object = None
    ) -> EvaluationResult:
        return EvaluationResult(overall_score=float(expected is None), overall_eval_status=EvalStatus.PASSED)

    calls, result = _scored_with(registry, "reference_free", SCENARIO, RUN)
    assert calls == ["reference_free"]
    assert (result.status, result.score) == (EvalStatus.PASSED, 1.0)


def test_every_built_in_that_compares_with_expected_invocations_says_so() -> None:
    """The built-ins by the rule: the response and trajectory metrics need expected invocations; efficiency,
    rubric, safety, hallucination, user-simulator and single-tool-use metrics do not."""
    needing = {name for name in REGISTRY.names() if REGISTRY.get(name).requires_expected}
    assert needing == {
        "final_response_match_v2",
        "response_match_score",
        "response_similarity",
        "semantic_match_score",
        "tool_trajectory_avg_score",
        "tool_trajectory_match",
        "tool_trajectory_score",
        "trajectory_any_order_match",
        "trajectory_exact_match",
        "trajectory_in_order_match",
        "trajectory_precision",
        "trajectory_recall",
    }
    config = EvalConfig.model_validate({"criteria": {"response_match_score": 0.8}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)
    result = asyncio.run(score_case_run(spec, eval_metric, SCENARIO, RUN))
    assert result.explanation == NOT_APPLICABLE
