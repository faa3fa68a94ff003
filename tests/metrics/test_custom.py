"""Custom metrics: ADK functions run unchanged, our `@invocation_metric`, Vertex `CustomMetric`, broken metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part

from agent_eval.errors import EvalInputError
from agent_eval.metrics.custom import CustomMetric, register_custom_metric, uses_adk_types, vertex_row
from agent_eval.metrics.registry import REGISTRY, MetricInfo, MetricRegistry, MetricSpec
from agent_eval.metrics.scoring import score_case_run, score_criterion
from agent_eval.results.model import MetricResult
from agent_eval.schema import (
    AgentRun,
    ConversationScenario,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalStatus,
    IntermediateData,
    Invocation,
)
from tests.metrics import custom_examples
from tests.metrics.custom_examples import EXAMPLES

SEED = "tests.metrics.adk_seed_metrics"
EXAMPLE = "tests.metrics.custom_examples"


def turn(user: str, response: str, calls: list[FunctionCall] | None = None) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        final_response=Content(role="model", parts=[Part(text=response)]),
        intermediate_data=IntermediateData(tool_uses=calls or []),
    )


def case_and_run(
    expected: list[Invocation], actual: list[Invocation], eval_id: str = "c1"
) -> tuple[EvalCase, AgentRun]:
    case = EvalCase(eval_id=eval_id, conversation=expected)
    return case, AgentRun(eval_set_id="set", eval_id=eval_id, invocations=actual)


EXPECTED = [turn("Hi", "Hello there"), turn("Lights on", "The lights are on")]


def resolve_custom(
    name: str, function: str, criterion: dict[str, Any], metric_info: dict[str, Any] | None = None
) -> tuple[EvalMetric, MetricSpec]:
    custom: dict[str, Any] = {"code_config": {"name": function}}
    if metric_info is not None:
        custom["metric_info"] = metric_info
    config = EvalConfig.model_validate({"criteria": {name: criterion}, "custom_metrics": {name: custom}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)
    return eval_metric, spec


def score(pair: tuple[EvalMetric, MetricSpec], actual: list[Invocation], expected: list[Invocation]) -> MetricResult:
    eval_metric, spec = pair
    return asyncio.run(score_case_run(spec, eval_metric, *case_and_run(expected, actual)))


def score_in(registry: MetricRegistry, criteria: dict[str, Any], case: EvalCase, run: AgentRun) -> MetricResult:
    [(eval_metric, spec)] = registry.resolve(EvalConfig.model_validate({"criteria": criteria}))
    return asyncio.run(score_case_run(spec, eval_metric, case, run))


# ----------------------------------------------------------------------------------- ADK seed metrics
def test_adk_exact_match_seed_metric_runs_unchanged() -> None:
    pytest.importorskip("google.adk")
    pair = resolve_custom("my_exact", f"{SEED}.check_final_response_exact_match", {"threshold": 0.5})
    actual = [turn("Hi", "Hello there"), turn("Lights on", "Done")]
    result = score(pair, actual, EXPECTED)
    assert (result.score, result.status, result.error) == (0.5, EvalStatus.PASSED, None)
    assert [(s.score, s.status) for s in result.per_invocation] == [(1.0, EvalStatus.PASSED), (0.0, EvalStatus.FAILED)]


def test_adk_async_profanity_seed_metric_runs_unchanged() -> None:
    pytest.importorskip("google.adk")
    pair = resolve_custom("no_profanity", f"{SEED}.check_for_profanity", {"threshold": 0.8})
    actual = [turn("Hi", "Hello"), turn("Lights on", "What PROFANITY is this")]
    result = score(pair, actual, EXPECTED)
    assert (result.score, result.status) == (0.5, EvalStatus.FAILED)
    assert [s.score for s in result.per_invocation] == [1.0, 0.0]


def test_adk_typed_function_gets_adk_models_with_threshold_in_criterion() -> None:
    pytest.importorskip("google.adk")
    from google.adk.evaluation.conversation_scenarios import ConversationScenario as AdkScenario
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric

    from tests.metrics import adk_seed_metrics

    eval_metric, spec = resolve_custom("probe", f"{SEED}.record_arguments", {"threshold": 0.7, "matchType": "X"})
    assert uses_adk_types(spec.function)
    scenario = ConversationScenario(starting_prompt="Hi", conversation_plan="Ask for the weather.")
    case = EvalCase(eval_id="sim", conversation_scenario=scenario)
    run = AgentRun(eval_set_id="set", eval_id="sim", invocations=[turn("Hi", "Hello", [FunctionCall(name="f")])])
    adk_seed_metrics.calls.clear()
    assert asyncio.run(score_case_run(spec, eval_metric, case, run)).score == 1.0
    [(metric, actual, expected, given_scenario)] = adk_seed_metrics.calls
    assert isinstance(metric, AdkEvalMetric) and isinstance(actual[0], AdkInvocation)
    assert isinstance(given_scenario, AdkScenario) and expected is None
    assert (metric.threshold, metric.criterion.threshold) == (None, 0.7)
    assert metric.criterion.model_extra == {"matchType": "X"}
    assert actual[0].intermediate_data.tool_uses[0].name == "f"


def test_adk_evaluation_result_with_enum_status_and_breakdowns_is_accepted() -> None:
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_metrics import EvalStatus as AdkStatus
    from google.adk.evaluation.eval_metrics import TokenUsageDetails
    from google.adk.evaluation.evaluator import EvaluationResult as AdkResult
    from google.adk.evaluation.evaluator import PerInvocationResult as AdkPerInvocation

    def adk_result(*args: object) -> AdkResult:
        return AdkResult(
            overall_score=0.25,
            overall_eval_status=AdkStatus.FAILED,
            per_invocation_results=[
                AdkPerInvocation(
                    actual_invocation=args[1][0].model_dump(),  # type: ignore[index]
                    score=0.25,
                    eval_status=AdkStatus.FAILED,
                    token_usage_details=TokenUsageDetails(total_tokens=7),
                )
            ],
            overall_token_usage_details=TokenUsageDetails(total_tokens=7),
        )

    spec = MetricSpec(name="adk_shaped", function=adk_result, info=MetricInfo(metric_name="adk_shaped"))
    eval_metric = EvalMetric(metric_name="adk_shaped", threshold=0.5)
    result = asyncio.run(score_case_run(spec, eval_metric, *case_and_run(EXPECTED[:1], EXPECTED[:1])))
    assert (result.score, result.status, result.error) == (0.25, EvalStatus.FAILED, None)
    assert result.per_invocation[0].status is EvalStatus.FAILED
    assert result.details["token_usage_details"]["total_tokens"] == 7.0
    assert result.details["per_invocation_token_usage_details"][0]["total_tokens"] == 7.0


# ------------------------------------------------------------------- ADK signature with our own types
def test_custom_function_without_adk_imports_gets_our_models() -> None:
    pair = resolve_custom("short", f"{EXAMPLE}.share_of_short_responses", {"threshold": 0.5, "maxWords": 2})
    assert not uses_adk_types(pair[1].function)
    result = score(pair, [turn("Hi", "Hello there"), turn("Lights on", "The lights are on")], EXPECTED)
    assert (result.score, result.status, result.error) == (0.5, EvalStatus.PASSED, None)


def test_metric_info_interval_validates_scores_and_thresholds() -> None:
    info = {"metric_name": "signed", "metric_value_info": {"interval": {"min_value": -1.0, "max_value": 1.0}}}
    pair = resolve_custom("signed", f"{EXAMPLE}.signed_score", {"threshold": -0.8}, info)
    result = score(pair, EXPECTED, EXPECTED)
    assert (result.score, result.status, result.error) == (-0.5, EvalStatus.FAILED, None)
    with pytest.raises(EvalInputError, match=r"threshold 2\.0 is outside"):
        resolve_custom("signed", f"{EXAMPLE}.signed_score", {"threshold": 2.0}, info)


def test_custom_function_that_does_not_import_is_rejected_up_front() -> None:
    with pytest.raises(EvalInputError, match="has no function 'missing'"):
        resolve_custom("gone", f"{EXAMPLE}.missing", {"threshold": 0.5})


# -------------------------------------------------------------------------------------- broken metrics
@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("raises", "ValueError: boom on 2 invocation(s)"),
        ("raises_async", "RuntimeError: async boom"),
        ("returns_dict", "TypeError: the metric must return an EvaluationResult, got dict"),
        ("returns_out_of_range", "score 1.5 is outside [0.0, 1.0]"),
    ],
)
def test_broken_custom_metric_is_not_evaluated_with_the_error(function: str, error: str) -> None:
    pair = resolve_custom("broken", f"{EXAMPLE}.{function}", {"threshold": 0.5})
    result = score(pair, EXPECTED, EXPECTED)
    assert (result.score, result.status, result.error) == (None, EvalStatus.NOT_EVALUATED, error)


def test_a_failing_case_does_not_stop_the_other_cases_or_metrics() -> None:
    eval_metric, spec = resolve_custom("picky", f"{EXAMPLE}.fails_on_bad_cases", {"threshold": 0.5})
    runs = [
        case_and_run(EXPECTED[:1], [turn("Hi", "a bad answer")], "bad"),
        case_and_run(EXPECTED[:1], [turn("Hi", "fine")], "good"),
    ]
    bad, good = asyncio.run(score_criterion(spec, eval_metric, runs))
    assert (bad.status, bad.error) == (EvalStatus.NOT_EVALUATED, "ValueError: cannot score a bad case")
    assert (good.eval_id, good.score, good.status) == ("good", 1.0, EvalStatus.PASSED)
    other_metric, other_spec = resolve_custom("short", f"{EXAMPLE}.share_of_short_responses", {"threshold": 1.0})
    assert asyncio.run(score_case_run(other_spec, other_metric, *runs[0])).score == 1.0


# ----------------------------------------------------------------------------------- @invocation_metric
def test_invocation_metric_scores_each_turn_with_camel_case_options() -> None:
    actual = [turn("Hi", "one two three"), turn("Lights on", "one two three four five")]
    result = score_in(
        EXAMPLES, {"response_within_words": {"threshold": 1.0, "maxWords": 4}}, *case_and_run(EXPECTED, actual)
    )
    assert (result.score, result.status) == (0.5, EvalStatus.FAILED)
    assert [(s.score, s.status) for s in result.per_invocation] == [(1.0, EvalStatus.PASSED), (0.0, EvalStatus.FAILED)]
    assert result.explanation == "turn 2: 5 words, more than 4"
    assert custom_examples.response_within_words(actual[0], None, max_words=2) == (0.0, "3 words, more than 2")


def test_invocation_metric_runs_on_scenario_cases_when_expected_is_not_required() -> None:
    scenario = ConversationScenario(starting_prompt="Hi", conversation_plan="Say hi.")
    case = EvalCase(eval_id="sim", conversation_scenario=scenario)
    run = AgentRun(eval_set_id="set", eval_id="sim", invocations=[turn("Hi", "Hello")])
    result = score_in(EXAMPLES, {"response_within_words": 1.0}, case, run)
    assert (result.score, result.status) == (1.0, EvalStatus.PASSED)


def test_async_invocation_metric_pairs_expected_invocations() -> None:
    actual = [turn("Hi", "hello there friend"), turn("Lights on", "lights are off")]
    result = score_in(EXAMPLES, {"mentions_reference": 0.5}, *case_and_run(EXPECTED, actual))
    # turn 1: {hello, there} all found = 1.0; turn 2: {the, lights, are, on} -> {lights, are} = 0.5
    assert [s.score for s in result.per_invocation] == [1.0, 0.5]
    assert (result.score, result.status) == (0.75, EvalStatus.PASSED)


def test_invocation_metric_needing_expected_is_not_applicable_to_scenarios() -> None:
    scenario = ConversationScenario(starting_prompt="Hi", conversation_plan="Say hi.")
    case = EvalCase(eval_id="sim", conversation_scenario=scenario)
    run = AgentRun(eval_set_id="set", eval_id="sim", invocations=[turn("Hi", "Hello")])
    result = score_in(EXAMPLES, {"mentions_reference": 0.5}, case, run)
    assert (result.status, result.error) == (EvalStatus.NOT_EVALUATED, None)
    assert result.explanation == "not applicable: the case has no expected invocations (conversation_scenario)"


def test_invocation_metric_that_returns_no_number_is_not_evaluated() -> None:
    # An unknown option is rejected before any work starts: tests/metrics/test_option_validation.py.
    case, run = case_and_run(EXPECTED[:1], EXPECTED[:1])
    text = score_in(EXAMPLES, {"says_a_word": 0.5}, case, run)
    assert text.error == "TypeError: says_a_word must give a number as the score, got str: 'great'"


# ------------------------------------------------------------------------------------ Vertex CustomMetric
LOOKUP = FunctionCall(name="get_device", args={"device_id": "lamp"})
SWITCH = FunctionCall(name="set_device", args={"device_id": "lamp", "on": True})


def test_vertex_row_of_an_invocation() -> None:
    actual = turn("Lamp on", "The lamp is on", [LOOKUP, SWITCH]).model_copy(update={"duration": 1.5})
    expected = turn("Lamp on", "Lamp is on", [SWITCH])
    assert vertex_row(actual, expected) == {
        "prompt": "Lamp on",
        "response": "The lamp is on",
        "predicted_trajectory": [
            {"tool_name": "get_device", "tool_input": {"device_id": "lamp"}},
            {"tool_name": "set_device", "tool_input": {"device_id": "lamp", "on": True}},
        ],
        "latency_in_seconds": 1.5,
        "reference_trajectory": [{"tool_name": "set_device", "tool_input": {"device_id": "lamp", "on": True}}],
        "reference": "Lamp is on",
    }
    assert vertex_row(expected, None).keys() == {"prompt", "response", "predicted_trajectory"}


def test_vertex_custom_metric_scores_rows_and_keeps_extra_keys() -> None:
    expected = [turn("Lamp on", "lamp is on", [SWITCH]), turn("Status?", "lamp is on", [LOOKUP])]
    actual = [turn("Lamp on", "OK, the lamp is on", [SWITCH]), turn("Status?", "It is on", [LOOKUP, LOOKUP])]
    result = score_in(EXAMPLES, {"trajectory_and_reference": 0.5}, *case_and_run(expected, actual))
    assert [s.score for s in result.per_invocation] == [1.0, 0.0]
    assert (result.score, result.status) == (0.5, EvalStatus.PASSED)
    assert result.details == {"predicted_count": [1, 2]}
    assert result.explanation == "turn 1: same tools; turn 2: tools ['get_device', 'get_device'] != ['get_device']"


def test_vertex_custom_metric_without_its_score_key_is_not_evaluated() -> None:
    result = score_in(EXAMPLES, {"forgets_its_name": 0.5}, *case_and_run(EXPECTED[:1], EXPECTED[:1]))
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.error == (
        "TypeError: CustomMetric 'forgets_its_name' must return a dict with the score under 'forgets_its_name', "
        "got {'score': 1.0}"
    )


def test_vertex_custom_metric_registration() -> None:
    registry = MetricRegistry()
    spec = register_custom_metric(
        CustomMetric("exact", lambda row: {"exact": 1.0}, interval=(0.0, 5.0)), registry=registry
    )
    assert (spec.name, spec.requires_expected, spec.informational, spec.interval.max_value) == (
        "exact",
        False,
        False,
        5.0,
    )
    assert spec.info.description == "Vertex AI custom metric 'exact'"
    with pytest.raises(ValueError, match="already registered"):
        register_custom_metric(CustomMetric("exact", lambda row: {"exact": 1.0}), registry=registry)
