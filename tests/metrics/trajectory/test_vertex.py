"""Vertex AI trajectory metrics against hand-computed values, duplicates and empty trajectories included."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part

from agent_eval.errors import EvalInputError
from agent_eval.metrics import REGISTRY
from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.scoring import score_case_run
from agent_eval.metrics.trajectory.vertex import (
    any_order_match,
    exact_match,
    in_order_match,
    precision,
    recall,
    single_tool_use,
    trajectory_any_order_match,
    trajectory_exact_match,
    trajectory_in_order_match,
    trajectory_precision,
    trajectory_recall,
    trajectory_single_tool_use,
)
from agent_eval.results.tool_calls import Call, align
from agent_eval.schema import (
    AgentRun,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalStatus,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)

A: Call = ("get_weather", {"city": "Paris"})
B: Call = ("set_temperature", {"location": "Bedroom", "temperature": 21})
B_FLOAT: Call = ("set_temperature", {"location": "Bedroom", "temperature": 21.0})
B_KITCHEN: Call = ("set_temperature", {"location": "Kitchen", "temperature": 21})
C: Call = ("turn_off", {"device_id": "lamp"})

# (id, predicted, reference, exact, in_order, any_order, precision, recall)
TABLE: list[tuple[str, list[Call], list[Call], float, float, float, float, float]] = [
    ("both empty", [], [], 1, 1, 1, 1, 1),
    ("reference empty", [A], [], 0, 1, 1, 0, 0),
    ("predicted empty", [], [A], 0, 0, 0, 0, 0),
    ("identical", [A, B], [A, B], 1, 1, 1, 1, 1),
    ("reordered", [B, A], [A, B], 0, 0, 1, 1, 1),
    ("extra in the middle", [A, C, B], [A, B], 0, 1, 1, 2 / 3, 1),
    ("missing one", [A], [A, B], 0, 0, 0, 1, 1 / 2),
    ("duplicate predicted", [A, A], [A], 0, 1, 1, 1 / 2, 1),
    ("duplicate reference", [A], [A, A], 0, 0, 0, 1, 1 / 2),
    ("duplicates both sides", [A, A, B], [A, B, B], 0, 0, 0, 2 / 3, 2 / 3),
    ("extras around", [C, A, B, A], [A, B], 0, 1, 1, 2 / 4, 1),
    ("int equals float arg", [B_FLOAT], [B], 1, 1, 1, 1, 1),
    ("other arg value", [B_KITCHEN], [B], 0, 0, 0, 0, 0),
    ("other tool", [C], [A], 0, 0, 0, 0, 0),
]


PLAIN_FUNCTIONS = (exact_match, in_order_match, any_order_match, precision, recall)


@pytest.mark.parametrize("row", TABLE, ids=[row[0] for row in TABLE])
def test_plain_functions(row: tuple[Any, ...]) -> None:
    predicted, reference, expected_scores = row[1], row[2], row[3:]
    scores = tuple(function(predicted, reference) for function in PLAIN_FUNCTIONS)
    assert scores == pytest.approx(expected_scores, abs=1e-12)


@pytest.mark.parametrize(
    ("predicted", "tool_name", "score"),
    [([A, B], "set_temperature", 1.0), ([A, B, B], "set_temperature", 1.0), ([A, B], "turn_off", 0.0), ([], "x", 0.0)],
)
def test_single_tool_use_function(predicted: list[Call], tool_name: str, score: float) -> None:
    assert single_tool_use(predicted, tool_name) == score


def test_align_counts_a_multiset() -> None:
    alignment = align([C, A, A, B], [A, B, B])
    assert alignment.matched == [A, B]
    assert alignment.missing == [B]
    assert alignment.unexpected_at == [0, 2]
    assert alignment.unexpected == [C, A]


def test_plain_functions_take_dataset_rows() -> None:
    # A Vertex "bring your own dataset" row: lists of {tool_name, tool_input}.
    row: dict[str, list[dict[str, Any]]] = {
        "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
        "reference_trajectory": [
            {"tool_name": "get_weather", "tool_input": {"city": "Paris"}},
            {"tool_name": "turn_off", "tool_input": {"device_id": "lamp"}},
        ],
    }
    predicted = [(c["tool_name"], c["tool_input"]) for c in row["predicted_trajectory"]]
    reference = [(c["tool_name"], c["tool_input"]) for c in row["reference_trajectory"]]
    assert (precision(predicted, reference), recall(predicted, reference)) == (1.0, 0.5)


# ------------------------------------------------------------------------------------------------ the metrics
def eval_metric(name: str, threshold: float = 1.0, **options: Any) -> EvalMetric:
    config = EvalConfig.model_validate({"criteria": {name: {"threshold": threshold, **options}}})
    return config.eval_metrics()[0]


def function_call(call: Call) -> FunctionCall:
    return FunctionCall(name=call[0], args=dict(call[1]))


def invocation(calls: Sequence[Call]) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="hi")]),
        intermediate_data=IntermediateData(tool_uses=[function_call(c) for c in calls]),
    )


METRICS = {
    "trajectory_exact_match": (trajectory_exact_match, 3),
    "trajectory_in_order_match": (trajectory_in_order_match, 4),
    "trajectory_any_order_match": (trajectory_any_order_match, 5),
    "trajectory_precision": (trajectory_precision, 6),
    "trajectory_recall": (trajectory_recall, 7),
}


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("row", TABLE, ids=[row[0] for row in TABLE])
def test_metric_scores_table(name: str, row: tuple[Any, ...]) -> None:
    function, column = METRICS[name]
    predicted, reference, score = row[1], row[2], row[column]
    result = function(eval_metric(name), [invocation(predicted)], [invocation(reference)], None)
    assert result.overall_score == pytest.approx(score, abs=1e-12)
    assert result.overall_eval_status == (EvalStatus.PASSED if score == 1 else EvalStatus.FAILED)
    assert (result.per_invocation_results[0].explanation is None) is (score == 1)


@pytest.mark.parametrize("name", [*METRICS, "trajectory_single_tool_use"])
def test_registered(name: str) -> None:
    spec = REGISTRY.get(name)
    assert spec.requires_expected is (name != "trajectory_single_tool_use")
    assert (spec.interval.min_value, spec.interval.max_value) == (0.0, 1.0)
    assert spec.info.description


def test_mean_over_invocations_with_duplicates() -> None:
    actual = [invocation([A, A]), invocation([A, B])]
    expected = [invocation([A]), invocation([A, B])]
    result = trajectory_precision(eval_metric("trajectory_precision", 0.8), actual, expected, None)
    assert [r.score for r in result.per_invocation_results] == [0.5, 1.0]
    assert result.overall_score == 0.75
    assert result.overall_eval_status == EvalStatus.FAILED
    assert [r.eval_status for r in result.per_invocation_results] == [EvalStatus.FAILED, EvalStatus.PASSED]
    assert result.explanation == "turn 1: 1 of 1 expected call(s) made; unexpected get_weather(city='Paris')"
    assert result.details == {
        "invocations": [
            {
                "matched": ["get_weather(city='Paris')"],
                "missing": [],
                "unexpected": ["get_weather(city='Paris') at step 2"],
            },
            {
                "matched": ["get_weather(city='Paris')", "set_temperature(location='Bedroom', temperature=21)"],
                "missing": [],
                "unexpected": [],
            },
        ]
    }


def test_explanation_names_the_step_of_a_replaced_call() -> None:
    wanted: Call = ("set_temperature", {"location": "Living Room", "temperature": 23})
    got: Call = ("set_temperature", {"location": "living room", "temperature": 23.0})
    result = trajectory_exact_match(
        eval_metric("trajectory_exact_match"), [invocation([A, got])], [invocation([A, wanted])], None
    )
    assert result.explanation == (
        "expected set_temperature(location='Living Room', temperature=23), "
        "got set_temperature(location='living room', temperature=23.0) at step 2"
    )


def test_explanation_of_missing_and_order() -> None:
    metric = eval_metric("trajectory_in_order_match")
    missing = trajectory_in_order_match(metric, [invocation([C])], [invocation([A, B])], None)
    assert missing.explanation == (
        "0 of 2 expected call(s) made; missing get_weather(city='Paris'), "
        "set_temperature(location='Bedroom', temperature=21); unexpected turn_off(device_id='lamp')"
    )
    reordered = trajectory_in_order_match(metric, [invocation([B, A])], [invocation([A, B])], None)
    assert reordered.explanation == (
        "2 of 2 expected call(s) made; expected the order [get_weather(city='Paris'), "
        "set_temperature(location='Bedroom', temperature=21)], got [set_temperature(location='Bedroom', "
        "temperature=21), get_weather(city='Paris')]"
    )


def test_no_explanation_for_a_passing_imperfect_turn() -> None:
    result = trajectory_precision(
        eval_metric("trajectory_precision", 0.5), [invocation([A, C])], [invocation([A])], None
    )
    assert result.overall_score == 0.5
    assert result.overall_eval_status == EvalStatus.PASSED
    assert result.explanation is None


def test_tool_calls_from_invocation_events() -> None:
    events = InvocationEvents(
        invocation_events=[
            InvocationEvent(
                author="agent", content=Content(role="model", parts=[Part(function_call=function_call(A))])
            ),
            InvocationEvent(
                author="agent", content=Content(role="model", parts=[Part(function_call=function_call(B))])
            ),
        ]
    )
    actual = Invocation(user_content=Content(role="user", parts=[Part(text="hi")]), intermediate_data=events)
    result = trajectory_recall(eval_metric("trajectory_recall"), [actual], [invocation([B, A])], None)
    assert result.overall_score == 1.0


def test_needs_expected_invocations_paired_one_to_one() -> None:
    with pytest.raises(MetricNotApplicable):
        trajectory_recall(eval_metric("trajectory_recall"), [invocation([A])], None, None)
    with pytest.raises(ValueError, match=r"^2 actual invocation\(s\) but 1 expected$"):
        trajectory_recall(eval_metric("trajectory_recall"), [invocation([A]), invocation([])], [invocation([A])], None)


# --------------------------------------------------------------------------------------- single tool use
@pytest.mark.parametrize("options", [{"tool_name": "turn_off"}, {"toolName": "turn_off"}])
def test_single_tool_use_metric(options: dict[str, Any]) -> None:
    metric = eval_metric("trajectory_single_tool_use", 1.0, **options)
    actual = [invocation([A, C]), invocation([B, A]), invocation([])]
    result = trajectory_single_tool_use(metric, actual, None, None)
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0, 0.0]
    assert result.overall_score == pytest.approx(1 / 3)
    assert result.overall_eval_status == EvalStatus.FAILED
    assert [r.explanation for r in result.per_invocation_results] == [
        None,
        "turn_off was not called (called: get_weather, set_temperature)",
        "turn_off was not called (called: no tools)",
    ]


@pytest.mark.parametrize("options", [{}, {"tool_name": ""}, {"tool_name": 3}])
def test_single_tool_use_requires_tool_name(options: dict[str, Any]) -> None:
    metric = eval_metric("trajectory_single_tool_use", **options)
    with pytest.raises(EvalInputError) as caught:
        trajectory_single_tool_use(metric, [invocation([A])], None, None)
    assert caught.value.field == "criteria.trajectory_single_tool_use.tool_name"
    assert "field 'criteria.trajectory_single_tool_use.tool_name'" in str(caught.value)
    assert f"got {options.get('tool_name')!r}" in str(caught.value)


def test_missing_tool_name_is_recorded_by_the_scorer() -> None:
    metric = eval_metric("trajectory_single_tool_use")
    case = EvalCase(eval_id="c1", conversation=[invocation([A])])
    run = AgentRun(eval_set_id="s", eval_id="c1", invocations=[invocation([A])])
    record = asyncio.run(score_case_run(REGISTRY.get("trajectory_single_tool_use"), metric, case, run))
    assert record.score is None
    assert record.error is not None
    assert "criteria.trajectory_single_tool_use.tool_name" in record.error


def test_details_reach_the_metric_record() -> None:
    metric = eval_metric("trajectory_recall")
    case = EvalCase(eval_id="c1", conversation=[invocation([A, B])])
    run = AgentRun(eval_set_id="s", eval_id="c1", invocations=[invocation([A])])
    record = asyncio.run(score_case_run(REGISTRY.get("trajectory_recall"), metric, case, run))
    assert record.score == 0.5
    assert record.details["invocations"][0]["missing"] == ["set_temperature(location='Bedroom', temperature=21)"]
