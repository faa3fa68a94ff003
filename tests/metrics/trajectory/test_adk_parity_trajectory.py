"""`tool_trajectory_avg_score` gives ADK's own scores: google-adk's `TrajectoryEvaluator` on the same invocations.

Both sides get the same criteria dict (ADK reads it with its own `EvalConfig`), the same invocations (ours converted
to ADK's models through JSON) and must agree on the overall score and status and on every invocation's score and
status, for EXACT, IN_ORDER and ANY_ORDER, with and without `ignore_args`: hand-made trajectories (args that
differ, extra calls, missing calls, duplicates, several turns, the events shape of intermediate data) and every
multi-turn conversation of the real ADK eval files in tests/data/adk, as they are and altered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part

from agent_eval.io import load_eval_sets
from agent_eval.metrics.trajectory.adk import tool_trajectory_avg_score
from agent_eval.schema import (
    EvalConfig,
    EvalStatus,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    tool_calls_of,
)
from tests.conftest import TEST_DATA

MATCH_TYPES = ("EXACT", "IN_ORDER", "ANY_ORDER")
CRITERIA = [
    pytest.param({"threshold": threshold, "match_type": match_type, "ignore_args": ignore_args},
                 id=f"{match_type}-{'ignore_args' if ignore_args else 'args'}-{threshold}")
    for match_type in MATCH_TYPES
    for ignore_args in (False, True)
    for threshold in (1.0, 0.5)
]  # fmt: skip

A = FunctionCall(name="get_weather", args={"city": "Paris"})
B = FunctionCall(name="set_temperature", args={"location": "Bedroom", "temperature": 21})
B_OTHER_ARGS = FunctionCall(name="set_temperature", args={"location": "Kitchen", "temperature": 21})
B_FLOAT = FunctionCall(name="set_temperature", args={"location": "Bedroom", "temperature": 21.0})
C = FunctionCall(name="transfer_to_agent", args={"agent_name": "helper"})
NESTED = FunctionCall(name="set_device_info", args={"device_id": "d1", "updates": {"status": "OFF", "level": [1, 2]}})
NESTED_OTHER = FunctionCall(name="set_device_info", args={"device_id": "d1", "updates": {"status": "ON"}})

# (id, [(actual calls, expected calls) per turn])
TRAJECTORIES: list[tuple[str, list[tuple[list[FunctionCall], list[FunctionCall]]]]] = [
    ("both empty", [([], [])]),
    ("identical", [([A, B], [A, B])]),
    ("int and float args", [([B_FLOAT], [B])]),
    ("nested args", [([NESTED], [NESTED])]),
    ("nested args differ", [([NESTED_OTHER], [NESTED])]),
    ("args differ", [([B_OTHER_ARGS], [B])]),
    ("args differ, reordered", [([A, B_OTHER_ARGS], [B, A])]),
    ("reordered", [([B, A], [A, B])]),
    ("extra call in the middle", [([A, C, B], [A, B])]),
    ("extra call at the end", [([A, B, C], [A, B])]),
    ("extra call, none expected", [([A], [])]),
    ("missing call", [([A], [A, B])]),
    ("no call made", [([], [A])]),
    ("duplicate expected", [([A], [A, A])]),
    ("duplicate actual", [([A, A], [A])]),
    ("multiset", [([B, A, C], [B, B])]),
    ("other tool", [([A], [C])]),
    ("in order after a false start", [([B_OTHER_ARGS, A, B], [A, B])]),
    ("two turns, second wrong", [([A], [A]), ([B_OTHER_ARGS], [B])]),
    ("three turns", [([A, B], [B, A]), ([], [C]), ([B, A, C], [A])]),
    ("four turns, extras and misses", [([A, C], [A]), ([B], [B, C]), ([C, B, A], [A, B, C]), ([], [])]),
]


def invocation(calls: list[FunctionCall], text: str = "hi") -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=text)]),
        intermediate_data=IntermediateData(tool_uses=calls),
    )


def events_invocation(calls: list[FunctionCall]) -> Invocation:
    """The same calls in ADK's other intermediate-data shape: one event per call, after a text event."""
    events = [InvocationEvent(author="agent", content=Content(role="model", parts=[Part(text="thinking")]))]
    events += [
        InvocationEvent(author="agent", content=Content(role="model", parts=[Part(function_call=c)])) for c in calls
    ]
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="hi")]),
        intermediate_data=InvocationEvents(invocation_events=events),
    )


def adk_result(criterion: dict[str, Any], actual: list[Invocation], expected: list[Invocation]) -> Any:
    """ADK's own result: its config loader, its metric, its evaluator, on ADK's models of the same invocations."""
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    config = AdkEvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}})
    eval_metric = next(m for m in get_eval_metrics_from_config(config) if m.metric_name == "tool_trajectory_avg_score")

    def to_adk(invocations: list[Invocation]) -> list[Any]:
        return [AdkInvocation.model_validate_json(i.model_dump_json(exclude_none=True)) for i in invocations]

    return TrajectoryEvaluator(eval_metric=eval_metric).evaluate_invocations(to_adk(actual), to_adk(expected))


def assert_same_as_adk(criterion: dict[str, Any], actual: list[Invocation], expected: list[Invocation]) -> None:
    metric = EvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}}).eval_metrics()[0]
    ours = tool_trajectory_avg_score(metric, actual, expected, None)
    theirs = adk_result(criterion, actual, expected)

    assert ours.overall_score == theirs.overall_score
    assert ours.overall_eval_status == EvalStatus(theirs.overall_eval_status.value)
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    our_statuses = [r.eval_status for r in ours.per_invocation_results]
    assert our_statuses == [EvalStatus(r.eval_status.value) for r in theirs.per_invocation_results]


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize(("name", "turns"), TRAJECTORIES, ids=[name for name, _ in TRAJECTORIES])
def test_same_scores_as_adk(
    criterion: dict[str, Any], name: str, turns: list[tuple[list[FunctionCall], list[FunctionCall]]]
) -> None:
    actual = [invocation(got, f"turn {n}") for n, (got, _) in enumerate(turns)]
    expected = [invocation(wanted, f"turn {n}") for n, (_, wanted) in enumerate(turns)]
    assert_same_as_adk(criterion, actual, expected)


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize(("name", "turns"), TRAJECTORIES, ids=[name for name, _ in TRAJECTORIES])
def test_same_scores_as_adk_with_events_shaped_actual_invocations(
    criterion: dict[str, Any], name: str, turns: list[tuple[list[FunctionCall], list[FunctionCall]]]
) -> None:
    actual = [events_invocation(got) for got, _ in turns]
    expected = [invocation(wanted) for _, wanted in turns]
    assert_same_as_adk(criterion, actual, expected)


@pytest.mark.parametrize(
    "criterion",
    [1.0, 0.0, {"threshold": 1.0, "match_type": "in_order"}, {"threshold": 1.0, "matchType": "ANY_ORDER"}],
    ids=["bare threshold", "zero threshold", "lower-case match type", "camelCase key"],
)
def test_same_scores_as_adk_for_each_way_to_write_the_criterion(criterion: Any) -> None:
    actual = [invocation([A, C, B_OTHER_ARGS]), invocation([B, A])]
    expected = [invocation([A, B]), invocation([A, B])]
    assert_same_as_adk(criterion, actual, expected)


def test_no_invocations_is_not_evaluated_as_in_adk() -> None:
    criterion = {"threshold": 1.0}
    metric = EvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}}).eval_metrics()[0]
    ours, theirs = tool_trajectory_avg_score(metric, [], [], None), adk_result(criterion, [], [])
    assert (ours.overall_score, ours.per_invocation_results) == (theirs.overall_score, []) == (None, [])
    assert ours.overall_eval_status == EvalStatus(theirs.overall_eval_status.value) == EvalStatus.NOT_EVALUATED


# ------------------------------------------------------------------------- the real ADK eval files
def real_conversations() -> list[Any]:
    """Every conversation with tool calls in the real ADK eval files (legacy list files included)."""
    found = []
    for eval_set in load_eval_sets(TEST_DATA / "adk"):
        for case in eval_set.eval_cases:
            if case.conversation and any(tool_calls_of(turn) for turn in case.conversation):
                found.append(pytest.param(case.conversation, id=case.eval_id.rsplit("/")[-1]))
    return found


CALL_CHANGES: dict[str, Callable[[list[FunctionCall]], list[FunctionCall]]] = {
    "as recorded": lambda calls: calls,
    "last call missing": lambda calls: calls[:-1],
    "extra call first": lambda calls: [C, *calls],
    "extra call last": lambda calls: [*calls, C],
    "every call twice": lambda calls: [call for call in calls for _ in (0, 1)],
    "args changed": lambda calls: [FunctionCall(name=c.name, args={**(c.args or {}), "x": 1}) for c in calls],
}
CHANGES = [*CALL_CHANGES, "calls one turn early"]


def altered(conversation: list[Invocation], change: str) -> list[Invocation]:
    """The conversation as an agent might have answered it, with every turn's calls changed in one way."""
    if change == "calls one turn early":
        shifted = [tool_calls_of(turn) for turn in conversation[1:]] + [[]]
        return [invocation(calls) for calls in shifted]
    return [invocation(CALL_CHANGES[change](tool_calls_of(turn))) for turn in conversation]


def test_the_real_files_have_conversations_with_tool_calls() -> None:
    conversations = real_conversations()
    assert len(conversations) >= 6
    assert any(len(p.values[0]) > 2 for p in conversations)  # multi-turn ones


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("conversation", real_conversations())
def test_same_scores_as_adk_on_the_real_eval_files(
    criterion: dict[str, Any], change: str, conversation: list[Invocation]
) -> None:
    assert_same_as_adk(criterion, altered(conversation, change), list(conversation))


def test_a_call_without_args_matches_empty_args_unlike_adk() -> None:
    """Our one deliberate difference (module docstring of agent_eval.metrics.trajectory.adk): a missing `args` is `{}`.

    ADK compares `None == {}` and fails a call written `{"name": "f"}` against one made as `f()` with `args={}`.
    """
    criterion = {"threshold": 1.0}
    actual, expected = [invocation([FunctionCall(name="f", args={})])], [invocation([FunctionCall(name="f")])]
    metric = EvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}}).eval_metrics()[0]
    assert tool_trajectory_avg_score(metric, actual, expected, None).overall_score == 1.0
    assert adk_result(criterion, actual, expected).overall_score == 0.0
