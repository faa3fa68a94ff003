"""`tool_trajectory_avg_score` and `trajectory_matches` against hand-computed expectations (spec/adk.md)."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.trajectory.adk import MatchType, tool_trajectory_avg_score, trajectory_matches
from agent_eval.schema import (
    EvalConfig,
    EvalMetric,
    EvalStatus,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    tool_calls_of,
)

A = FunctionCall(name="get_weather", args={"city": "Paris"})
B = FunctionCall(name="set_temperature", args={"location": "Bedroom", "temperature": 21})
C = FunctionCall(name="transfer_to_agent", args={"agent_name": "helper"})
B_OTHER_ARGS = FunctionCall(name="set_temperature", args={"location": "Kitchen", "temperature": 21})


def eval_metric(threshold: float = 1.0, **options: Any) -> EvalMetric:
    criterion = {"threshold": threshold, **options}
    config = EvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}})
    return config.eval_metrics()[0]


def invocation(calls: list[FunctionCall], text: str = "hi") -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=text)]),
        intermediate_data=IntermediateData(tool_uses=calls),
    )


# (id, actual, expected, {match type: matches with args compared, matches with ignore_args})
TABLE: list[tuple[str, list[FunctionCall], list[FunctionCall], dict[str, tuple[bool, bool]]]] = [
    ("both empty", [], [], {"EXACT": (True, True), "IN_ORDER": (True, True), "ANY_ORDER": (True, True)}),
    ("expected empty", [A], [], {"EXACT": (False, False), "IN_ORDER": (True, True), "ANY_ORDER": (True, True)}),
    ("actual empty", [], [A], {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (False, False)}),
    ("identical", [A, B], [A, B], {"EXACT": (True, True), "IN_ORDER": (True, True), "ANY_ORDER": (True, True)}),
    ("reordered", [B, A], [A, B], {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (True, True)}),
    ("extra middle", [A, C, B], [A, B], {"EXACT": (False, False), "IN_ORDER": (True, True), "ANY_ORDER": (True, True)}),
    ("extra at end", [A, B, C], [A, B], {"EXACT": (False, False), "IN_ORDER": (True, True), "ANY_ORDER": (True, True)}),
    ("missing", [A], [A, B], {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (False, False)}),
    ("dup expected", [A], [A, A], {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (False, False)}),
    ("dup actual", [A, A], [A], {"EXACT": (False, False), "IN_ORDER": (True, True), "ANY_ORDER": (True, True)}),
    (
        "args differ",
        [B_OTHER_ARGS],
        [B],
        {"EXACT": (False, True), "IN_ORDER": (False, True), "ANY_ORDER": (False, True)},
    ),
    (
        "args differ, reordered",
        [A, B_OTHER_ARGS],
        [B, A],
        {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (False, True)},
    ),
    # ANY_ORDER consumes actual calls: two expected B need two actual B.
    ("multiset", [B, A, C], [B, B], {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (False, False)}),
    ("other name", [A], [C], {"EXACT": (False, False), "IN_ORDER": (False, False), "ANY_ORDER": (False, False)}),
]

CASES = [
    pytest.param(
        actual, expected, match_type, ignore_args, outcome[ignore_args], id=f"{name}-{match_type}-{ignore_args}"
    )
    for name, actual, expected, outcomes in TABLE
    for match_type, outcome in outcomes.items()
    for ignore_args in (False, True)
]


@pytest.mark.parametrize(("actual", "expected", "match_type", "ignore_args", "matches"), CASES)
def test_trajectory_matches_table(
    actual: list[FunctionCall], expected: list[FunctionCall], match_type: str, ignore_args: bool, matches: bool
) -> None:
    assert trajectory_matches(actual, expected, MatchType[match_type], ignore_args) is matches


@pytest.mark.parametrize(("actual", "expected", "match_type", "ignore_args", "matches"), CASES)
def test_metric_scores_table(
    actual: list[FunctionCall], expected: list[FunctionCall], match_type: str, ignore_args: bool, matches: bool
) -> None:
    metric = eval_metric(match_type=match_type, ignore_args=ignore_args)
    result = tool_trajectory_avg_score(metric, [invocation(actual)], [invocation(expected)], None)
    assert result.overall_score == (1.0 if matches else 0.0)
    assert result.overall_eval_status == (EvalStatus.PASSED if matches else EvalStatus.FAILED)
    assert [r.score for r in result.per_invocation_results] == [1.0 if matches else 0.0]
    assert (result.explanation is None) is matches


@pytest.mark.parametrize(
    ("actual_args", "expected_args"),
    [
        ({"temperature": 1}, {"temperature": 1.0}),
        (None, {}),
        ({}, None),
        ({"a": [1, 2], "b": {"c": True}}, {"b": {"c": True}, "a": [1.0, 2]}),
    ],
)
@pytest.mark.parametrize("match_type", list(MatchType))
def test_equal_args(
    actual_args: dict[str, Any] | None, expected_args: dict[str, Any] | None, match_type: MatchType
) -> None:
    actual = [FunctionCall(name="f", args=actual_args)]
    expected = [FunctionCall(name="f", args=expected_args)]
    assert trajectory_matches(actual, expected, match_type) is True


@pytest.mark.parametrize("match_type", list(MatchType))
def test_call_ids_are_ignored(match_type: MatchType) -> None:
    actual = [FunctionCall(id="adk-123", name="f", args={"x": 1}), FunctionCall(id="adk-456", name="g")]
    expected = [FunctionCall(id="other", name="f", args={"x": 1}), FunctionCall(name="g")]
    assert trajectory_matches(actual, expected, match_type) is True


def test_default_match_type_is_exact() -> None:
    metric = eval_metric()
    result = tool_trajectory_avg_score(metric, [invocation([A, B])], [invocation([A])], None)
    assert result.overall_score == 0.0
    assert result.explanation == "unexpected extra call(s): set_temperature(location='Bedroom', temperature=21)"


@pytest.mark.parametrize(
    "options",
    [
        {"match_type": "in_order", "ignore_args": True},
        {"match_type": "In_Order", "ignore_args": True},
        {"matchType": "IN_ORDER", "ignoreArgs": True},
        {"matchType": "in_order", "ignoreArgs": True},
    ],
)
def test_options_case_insensitive_and_camel_case(options: dict[str, Any]) -> None:
    metric = eval_metric(**options)
    # Passes only with IN_ORDER (extra call) and ignore_args (B's args differ).
    result = tool_trajectory_avg_score(metric, [invocation([A, C, B_OTHER_ARGS])], [invocation([A, B])], None)
    assert result.overall_score == 1.0
    assert result.overall_eval_status == EvalStatus.PASSED


@pytest.mark.parametrize("value", ["in-order", " IN_ORDER ", "in order"])
def test_match_type_spellings_adk_accepts(value: str) -> None:
    metric = eval_metric(match_type=value)
    result = tool_trajectory_avg_score(metric, [invocation([A, C, B])], [invocation([A, B])], None)
    assert result.overall_score == 1.0


@pytest.mark.parametrize(
    ("value", "expected"), [(0, MatchType.EXACT), (1, MatchType.IN_ORDER), (2, MatchType.ANY_ORDER)]
)
def test_match_type_adk_enum_integers(value: int, expected: MatchType) -> None:
    assert MatchType.parse(value) is expected


@pytest.mark.parametrize("value", ["SUBSET", "", 7, True])
def test_unknown_match_type_raises(value: object) -> None:
    metric = eval_metric(match_type=value)
    with pytest.raises(EvalInputError) as caught:
        tool_trajectory_avg_score(metric, [invocation([A])], [invocation([A])], None)
    message = str(caught.value)
    assert f"unknown match_type {value!r}" in message
    assert "EXACT, IN_ORDER, ANY_ORDER" in message
    assert caught.value.field == "criteria.tool_trajectory_avg_score.match_type"


LIVING_ROOM = FunctionCall(name="set_temperature", args={"location": "Living Room", "temperature": 23})
LIVING_ROOM_LOWER = FunctionCall(name="set_temperature", args={"location": "living room", "temperature": 23})


@pytest.mark.parametrize(
    ("threshold", "status"), [(1.0, EvalStatus.FAILED), (0.5, EvalStatus.PASSED), (0.6, EvalStatus.FAILED)]
)
def test_multi_invocation_mean_and_statuses(threshold: float, status: EvalStatus) -> None:
    metric = eval_metric(threshold=threshold, match_type="EXACT")
    actual = [invocation([A], "turn one"), invocation([LIVING_ROOM_LOWER], "turn two")]
    expected = [invocation([A], "turn one"), invocation([LIVING_ROOM], "turn two")]
    result = tool_trajectory_avg_score(metric, actual, expected, None)
    assert result.overall_score == 0.5
    assert result.overall_eval_status == status
    per = result.per_invocation_results
    assert [r.score for r in per] == [1.0, 0.0]
    expected_statuses = [EvalStatus.PASSED, EvalStatus.FAILED]
    assert [r.eval_status for r in per] == expected_statuses
    assert [r.actual_invocation for r in per] == actual
    assert [r.expected_invocation for r in per] == expected
    assert per[0].explanation is None
    assert per[1].explanation == (
        "expected set_temperature(location='Living Room', temperature=23), "
        "got set_temperature(location='living room', temperature=23) at step 1"
    )
    assert result.explanation == f"turn 2: {per[1].explanation}"


def test_three_invocations_mean() -> None:
    metric = eval_metric(threshold=0.6, match_type="ANY_ORDER")
    actual = [invocation([A, B]), invocation([]), invocation([B, A])]
    expected = [invocation([B, A]), invocation([C]), invocation([A])]
    result = tool_trajectory_avg_score(metric, actual, expected, None)
    assert result.overall_score == pytest.approx(2 / 3)
    assert result.overall_eval_status == EvalStatus.PASSED
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0, 1.0]
    assert result.explanation == "turn 2: missing call(s): transfer_to_agent(agent_name='helper')"


@pytest.mark.parametrize("match_type", ["IN_ORDER", "ANY_ORDER"])
def test_explanation_names_both_calls_for_non_exact(match_type: str) -> None:
    metric = eval_metric(match_type=match_type)
    result = tool_trajectory_avg_score(metric, [invocation([LIVING_ROOM_LOWER])], [invocation([LIVING_ROOM])], None)
    assert result.overall_score == 0.0
    assert result.explanation == (
        f"expected [set_temperature(location='Living Room', temperature=23)] ({match_type}), "
        "got [set_temperature(location='living room', temperature=23)]"
    )


def test_no_invocations_gives_no_score() -> None:
    result = tool_trajectory_avg_score(eval_metric(), [], [], None)
    assert result.overall_score is None
    assert result.overall_eval_status == EvalStatus.NOT_EVALUATED
    assert result.per_invocation_results == []


def events_invocation(calls: list[FunctionCall]) -> Invocation:
    events = [InvocationEvent(author="agent", content=Content(role="model", parts=[Part(text="thinking")]))]
    for call in calls:
        events.append(InvocationEvent(author="agent", content=Content(role="model", parts=[Part(function_call=call)])))
        events.append(InvocationEvent(author="agent", content=None))
    # Two calls in one event's parts, after a text part.
    events.append(
        InvocationEvent(
            author="agent",
            content=Content(role="model", parts=[Part(text="and"), Part(function_call=C), Part(function_call=A)]),
        )
    )
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="hi")]),
        intermediate_data=InvocationEvents(invocation_events=events),
    )


def test_invocation_events_shape_gives_same_calls() -> None:
    from_events = events_invocation([A, B])
    from_data = invocation([A, B, C, A])
    assert tool_calls_of(from_events) == tool_calls_of(from_data) == [A, B, C, A]
    metric = eval_metric(match_type="EXACT")
    assert tool_trajectory_avg_score(metric, [from_events], [from_data], None).overall_score == 1.0
    assert tool_trajectory_avg_score(metric, [from_data], [from_events], None).overall_score == 1.0
    wrong = invocation([A, B, A, C])
    assert tool_trajectory_avg_score(metric, [from_events], [wrong], None).overall_score == 0.0


def test_no_intermediate_data_means_no_calls() -> None:
    bare = Invocation(user_content=Content(role="user", parts=[Part(text="hi")]))
    assert tool_calls_of(bare) == []
    metric = eval_metric(match_type="EXACT")
    assert tool_trajectory_avg_score(metric, [bare], [invocation([])], None).overall_score == 1.0
    assert tool_trajectory_avg_score(metric, [bare], [invocation([A])], None).overall_score == 0.0


@pytest.mark.parametrize(("n_actual", "n_expected"), [(1, 2), (2, 1), (0, 1)])
def test_invocation_count_mismatch_raises(n_actual: int, n_expected: int) -> None:
    with pytest.raises(ValueError, match=rf"^{n_actual} actual invocation\(s\) but {n_expected} expected$"):
        tool_trajectory_avg_score(eval_metric(), [invocation([A])] * n_actual, [invocation([A])] * n_expected, None)


def test_expected_none_is_not_applicable() -> None:
    with pytest.raises(MetricNotApplicable, match="no expected invocations"):
        tool_trajectory_avg_score(eval_metric(), [invocation([A])], None, None)
