"""`per_turn_user_simulator_quality_v1` against a scripted judge: starting prompt, per-turn votes, stop check."""

from __future__ import annotations

from typing import Any

import pytest

from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.user_simulator import UserTurnAnswer, per_turn_user_simulator_quality_v1
from agent_eval.schema import ConversationScenario, EvalStatus
from tests.metrics.scripted_judge import ScriptedJudge, eval_metric, failed, fenced, installed, run, samples, turn

SCENARIO = ConversationScenario(
    starting_prompt="Turn on the kitchen light.",
    conversation_plan="1. Turn on the kitchen light. 2. Set the bedroom to 21 degrees. Then stop.",
    user_persona="NOVICE",
)
CONVERSATION = [
    turn("Turn on the kitchen light.", "Done. Anything else?"),
    turn("Set the bedroom to 21 degrees please.", "The bedroom is at 21 degrees."),
]


def valid(reason: str) -> dict[str, Any]:
    return {"rationale": reason, "violations": [], "verdict": "valid"}


def invalid(reason: str) -> dict[str, Any]:
    return {"rationale": reason, "violations": ["Stop"], "verdict": "invalid"}


def metric(count: int = 1, **options: Any) -> Any:
    return eval_metric("per_turn_user_simulator_quality_v1", 0.5, **samples(count), **options)


def test_first_turn_is_checked_without_the_judge_and_later_turns_by_vote() -> None:
    judge = ScriptedJudge(lambda _: valid("follows the plan"))
    with installed(judge):
        result = run(per_turn_user_simulator_quality_v1, metric(3), CONVERSATION, None, SCENARIO)
    assert [r.score for r in result.per_invocation_results] == [1.0, 1.0]
    assert result.overall_score == 1.0
    assert result.per_invocation_results[0].explanation == (
        "the first user message is the scenario's starting_prompt 'Turn on the kitchen light.'"
    )
    assert len(judge.requests) == 6  # turn 2 and the stop check, 3 samples each
    turn_two, stop = judge.requests[0].prompt, judge.requests[3].prompt
    assert fenced(turn_two, "user_message") == "Set the bedroom to 21 degrees please."
    assert fenced(turn_two, "conversation_history") == "user: Turn on the kitchen light.\nagent: Done. Anything else?"
    assert fenced(turn_two, "user_persona").startswith("NOVICE: A novice user")
    assert fenced(stop, "user_message") == "</finished>"
    assert fenced(stop, "conversation_history").endswith("agent: The bedroom is at 21 degrees.")
    assert judge.requests[0].system == jp.USER_SIMULATOR_SYSTEM
    assert judge.requests[0].response_schema is UserTurnAnswer


def test_a_wrong_first_message_scores_zero() -> None:
    actual = [turn("Hello there", "Hi!"), *CONVERSATION[1:]]
    with installed(ScriptedJudge(lambda _: valid("ok"))):
        result = run(per_turn_user_simulator_quality_v1, metric(), actual, None, SCENARIO)
    assert [r.score for r in result.per_invocation_results] == [0.0, 1.0]
    assert result.overall_score == 0.5


def test_a_stop_judged_wrong_replaces_the_last_turn() -> None:
    def rule(request: JudgeRequest) -> dict[str, Any]:
        stopping = fenced(request.prompt, "user_message") == fenced(request.prompt, "stop_signal")
        return invalid("the plan is not finished") if stopping else valid("ok")

    with installed(ScriptedJudge(rule)):
        result = run(per_turn_user_simulator_quality_v1, metric(stop_signal="<done/>"), CONVERSATION, None, SCENARIO)
    last = result.per_invocation_results[-1]
    assert (last.score, last.eval_status) == (0.0, EvalStatus.FAILED)
    assert last.explanation == "ending the conversation after this turn was wrong: invalid: the plan is not finished"
    assert last.actual_invocation == CONVERSATION[-1]
    assert result.overall_score == 0.5
    assert result.details["invocations"][-1]["replaced_by_stop_check"] is True
    assert result.details["stop_check"]["label"] == "invalid"


def test_an_unusable_turn_is_left_out_of_the_mean() -> None:
    def rule(request: JudgeRequest) -> Any:
        return valid("ok") if fenced(request.prompt, "user_message") == "</finished>" else failed("503")

    with installed(ScriptedJudge(rule)):
        result = run(per_turn_user_simulator_quality_v1, metric(2), CONVERSATION, None, SCENARIO)
    assert [r.eval_status for r in result.per_invocation_results] == [EvalStatus.PASSED, EvalStatus.NOT_EVALUATED]
    assert result.overall_score == 1.0
    assert result.details["unusable_samples"] == 2


def test_it_needs_a_conversation_scenario() -> None:
    with installed(ScriptedJudge(lambda _: valid("ok"))), pytest.raises(MetricNotApplicable):
        run(per_turn_user_simulator_quality_v1, metric(), CONVERSATION, CONVERSATION, None)
