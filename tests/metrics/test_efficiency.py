"""ADK's efficiency metrics against hand-computed values, and against ADK's own evaluators when installed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, FunctionResponse, GenerateContentResponseUsageMetadata, Part

from agent_eval.errors import EvalInputError
from agent_eval.metrics.efficiency import NO_MODEL_EVENTS, NO_TIMING, NO_USAGE
from agent_eval.metrics.registry import REGISTRY
from agent_eval.metrics.scoring import score_case_run
from agent_eval.results.model import MetricResult
from agent_eval.schema import (
    AgentRun,
    ConversationScenario,
    EvalCase,
    EvalConfig,
    EvalStatus,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)

EFFICIENCY = ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]
USER = Content(role="user", parts=[Part(text="Turn on the lamp")])
CALL = FunctionCall(id="c1", name="set_device", args={"device_id": "lamp"})
Usage = GenerateContentResponseUsageMetadata


def model_event(usage: Usage | None = None, *parts: Part, version: str | None = None) -> InvocationEvent:
    return InvocationEvent(
        author="agent", content=Content(role="model", parts=list(parts)), usage_metadata=usage, model_version=version
    )


TOOL_EVENT = InvocationEvent(
    author="agent",
    content=Content(role="user", parts=[Part(function_response=FunctionResponse(id="c1", name="set_device"))]),
)


def events(*items: InvocationEvent, **timing: float | None) -> Invocation:
    return Invocation(user_content=USER, intermediate_data=InvocationEvents(invocation_events=list(items)), **timing)


def reference(calls: list[FunctionCall], **timing: float | None) -> Invocation:
    return Invocation(user_content=USER, intermediate_data=IntermediateData(tool_uses=calls), **timing)


def score(metric_name: str, actual: list[Invocation], case: EvalCase | None = None) -> MetricResult:
    [(eval_metric, spec)] = REGISTRY.resolve(EvalConfig.model_validate({"criteria": {metric_name: {}}}))
    case = case or EvalCase(eval_id="c", conversation=[reference([]) for _ in actual])
    run = AgentRun(eval_set_id="set", eval_id=case.eval_id, invocations=actual)
    return asyncio.run(score_case_run(spec, eval_metric, case, run))


# Turn 1: two model calls (the first asks for the tool), one tool response, reported total ignored.
TURN_1 = events(
    model_event(Usage(prompt_token_count=100, candidates_token_count=20, thoughts_token_count=5,
                      cached_content_token_count=40, total_token_count=999), Part(function_call=CALL)),
    TOOL_EVENT,
    model_event(Usage(prompt_token_count=130, tool_use_prompt_token_count=10, candidates_token_count=15),
                Part(text="Done")),
    duration=2.0, model_duration=1.2, tool_duration=0.5,
)  # fmt: skip
# Turn 2: event-shaped, one model call known only by its model version, no token counts.
TURN_2 = events(model_event(None, Part(text="Hi"), version="gemini-2.5-flash"), duration=1.25)
# Turn 3: reference-shaped data (our callable adapter's), two tool calls, not timed.
TURN_3 = reference([CALL, CALL])


# ------------------------------------------------------------------------------------------ each metric
def test_tool_call_count_counts_both_shapes_and_missing_data_as_zero() -> None:
    no_data = Invocation(user_content=USER)
    result = score("tool_call_count_v1", [TURN_1, TURN_2, TURN_3, no_data])
    assert [s.score for s in result.per_invocation] == [1.0, 0.0, 2.0, 0.0]
    assert (result.score, result.status, result.threshold) == (0.75, EvalStatus.INFORMATIONAL, None)


def test_inference_call_count_needs_events() -> None:
    result = score("inference_call_count_v1", [TURN_1, TURN_2, TURN_3])
    assert [(s.score, s.status) for s in result.per_invocation] == [
        (2.0, EvalStatus.INFORMATIONAL),
        (1.0, EvalStatus.INFORMATIONAL),
        (None, EvalStatus.NOT_EVALUATED),
    ]
    assert result.per_invocation[2].explanation == NO_MODEL_EVENTS
    assert (result.score, result.status) == (1.5, EvalStatus.INFORMATIONAL)


def test_token_usage_sums_model_calls_and_averages_over_every_turn() -> None:
    result = score("token_usage_v1", [TURN_1, TURN_2])
    # input = 100 + (130 + 10); output = (20 + 5) + 15; the reported total (999) is not used.
    turn_1 = {
        "total_tokens": 280.0,
        "input_tokens": 240.0,
        "prompt_tokens": 230.0,
        "cached_tokens": 40.0,
        "tool_use_tokens": 10.0,
        "output_tokens": 40.0,
        "candidates_tokens": 35.0,
        "reasoning_tokens": 5.0,
    }
    assert result.details["per_invocation_token_usage_details"] == [turn_1, dict.fromkeys(turn_1)]
    # Turn 2 reported nothing: it counts 0 in every average, as in ADK.
    assert result.details["token_usage_details"] == {name: value / 2 for name, value in turn_1.items()}
    assert [(s.score, s.status, s.explanation) for s in result.per_invocation] == [
        (280.0, EvalStatus.INFORMATIONAL, None),
        (None, EvalStatus.NOT_EVALUATED, NO_USAGE),
    ]
    assert (result.score, result.status) == (140.0, EvalStatus.INFORMATIONAL)


def test_token_count_a_call_did_not_report_stays_unknown() -> None:
    only_prompt = events(model_event(Usage(prompt_token_count=12)))
    details = score("token_usage_v1", [only_prompt]).details["token_usage_details"]
    assert (details["total_tokens"], details["input_tokens"], details["output_tokens"]) == (12.0, 12.0, None)
    assert (details["cached_tokens"], details["reasoning_tokens"]) == (None, None)


def test_invocation_duration_splits_and_averages_the_timed_turns() -> None:
    result = score("invocation_duration_v1", [TURN_1, TURN_2, TURN_3])
    assert result.details["per_invocation_duration_details"] == [
        {"total_seconds": 2.0, "model_seconds": 1.2, "tool_seconds": 0.5, "framework_seconds": 0.3},
        {"total_seconds": 1.25, "model_seconds": None, "tool_seconds": None, "framework_seconds": None},
        dict.fromkeys(["total_seconds", "model_seconds", "tool_seconds", "framework_seconds"]),
    ]
    assert result.details["duration_details"] == {
        "total_seconds": 1.625,
        "model_seconds": 1.2,
        "tool_seconds": 0.5,
        "framework_seconds": 0.3,
    }
    assert [s.score for s in result.per_invocation] == [2.0, 1.25, None]
    assert result.per_invocation[2].explanation == NO_TIMING
    assert (result.score, result.status) == (1.625, EvalStatus.INFORMATIONAL)


def test_framework_seconds_are_clamped_at_zero() -> None:
    turn = reference([], duration=1.0, model_duration=0.8, tool_duration=0.3)
    details = score("invocation_duration_v1", [turn]).details["duration_details"]
    assert details["framework_seconds"] == 0.0


# ----------------------------------------------------------------------------------- missing data, gating
@pytest.mark.parametrize(
    ("metric_name", "reason"),
    [("inference_call_count_v1", NO_MODEL_EVENTS), ("token_usage_v1", NO_USAGE), ("invocation_duration_v1", NO_TIMING)],
)
def test_without_the_data_the_metric_is_not_evaluated_not_zero(metric_name: str, reason: str) -> None:
    result = score(metric_name, [TURN_3, TURN_3])
    assert (result.score, result.status, result.explanation, result.error) == (
        None,
        EvalStatus.NOT_EVALUATED,
        reason,
        None,
    )


@pytest.mark.parametrize("metric_name", EFFICIENCY)
def test_a_threshold_is_rejected(metric_name: str) -> None:
    with pytest.raises(EvalInputError, match="informational and never gates: remove the threshold") as error:
        REGISTRY.resolve(EvalConfig.model_validate({"criteria": {metric_name: 0.5}}), config_file="cfg.json")
    assert error.value.field == f"criteria.{metric_name}.threshold"


@pytest.mark.parametrize("metric_name", EFFICIENCY)
def test_registered_as_informational_reference_free_and_unbounded(metric_name: str) -> None:
    spec = REGISTRY.get(metric_name)
    assert (spec.informational, spec.requires_expected, spec.requires_threshold) == (True, False, False)
    assert (spec.interval.min_value, spec.interval.max_value) == (0.0, float("inf"))


def test_scenario_cases_are_scored() -> None:
    scenario = ConversationScenario(starting_prompt="Hi", conversation_plan="Turn the lamp on.")
    case = EvalCase(eval_id="sim", conversation_scenario=scenario)
    assert score("tool_call_count_v1", [TURN_3], case).score == 2.0


def test_no_invocations_is_not_applicable() -> None:
    scenario = ConversationScenario(starting_prompt="hi", conversation_plan="say hi")
    result = score("tool_call_count_v1", [], EvalCase(eval_id="c", conversation_scenario=scenario))
    assert (result.status, result.explanation) == (
        EvalStatus.NOT_EVALUATED,
        "not applicable: the agent produced no invocations",
    )


# ------------------------------------------------------------------------------------- same values as ADK
def adk_result(metric_name: str, actual: list[Invocation]) -> Any:
    pytest.importorskip("google.adk")
    from google.adk.evaluation import _efficiency_evaluators as adk
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation

    evaluator = {
        "tool_call_count_v1": adk._ToolCallCountV1Evaluator,
        "inference_call_count_v1": adk._InferenceCallCountV1Evaluator,
        "token_usage_v1": adk._TokenUsageV1Evaluator,
        "invocation_duration_v1": adk._InvocationDurationV1Evaluator,
    }[metric_name]()
    converted = [AdkInvocation.model_validate_json(i.model_dump_json(exclude_none=True)) for i in actual]
    return evaluator.evaluate_invocations(converted)


@pytest.mark.parametrize("metric_name", EFFICIENCY)
def test_same_values_as_adk(metric_name: str) -> None:
    actual = [TURN_1, TURN_2, reference([CALL], duration=0.5)]
    ours, theirs = score(metric_name, actual), adk_result(metric_name, actual)
    assert ours.score == pytest.approx(theirs.overall_score)
    assert [s.score for s in ours.per_invocation] == [r.score for r in theirs.per_invocation_results]
    breakdown = {"token_usage_v1": "token_usage_details", "invocation_duration_v1": "duration_details"}
    if metric_name in breakdown:
        adk_details = getattr(theirs, f"overall_{breakdown[metric_name]}").model_dump()
        assert ours.details[breakdown[metric_name]] == pytest.approx(adk_details)
