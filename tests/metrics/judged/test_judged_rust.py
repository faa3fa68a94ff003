"""ADK-Rust's judged criteria against a scripted judge: median of graded samples, weights, no fail-open scores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.rust import (
    GradedAnswer,
    hallucination_score,
    rubric_quality_score,
    safety_score,
    semantic_match_score,
)
from agent_eval.metrics.registry import REGISTRY
from agent_eval.schema import EvalConfig, EvalStatus, RubricScore
from tests.metrics.scripted_judge import (
    ScriptedJudge,
    by_sample,
    eval_metric,
    failed,
    fenced,
    installed,
    run,
    samples,
    turn,
)


def graded(score: float, reasoning: str = "", *issues: str) -> dict[str, Any]:
    return {"reasoning": reasoning or f"scored {score}", "score": score, "issues": list(issues)}


def test_semantic_match_is_the_lower_median_of_the_samples_with_agreement() -> None:
    judge = ScriptedJudge(by_sample(graded(0.9, "close"), graded(0.2, "differs"), graded(0.8, "same meaning")))
    metric = eval_metric("semantic_match_score", 0.75, **samples(3))
    with installed(judge):
        result = run(semantic_match_score, metric, [turn("Temp?", "21 C")], [turn("Temp?", "21 degrees")])
    assert (result.overall_score, result.overall_eval_status) == (0.8, EvalStatus.PASSED)
    assert result.per_invocation_results[0].explanation == "0.80: same meaning (2 of 3 samples agree; dissent: differs)"
    assert result.details["agreement"] == pytest.approx(2 / 3)
    request = judge.requests[0]
    assert (request.system, request.response_schema) == (jp.RUST_SEMANTIC_SYSTEM, GradedAnswer)
    assert (fenced(request.prompt, "agent_response"), fenced(request.prompt, "reference_response")) == (
        "21 C",
        "21 degrees",
    )


def test_an_even_number_of_samples_takes_the_lower_middle_score() -> None:
    with installed(ScriptedJudge(by_sample(graded(1.0), graded(0.4)))):
        result = run(
            semantic_match_score,
            eval_metric("semantic_match_score", 0.5, **samples(2)),
            [turn("q", "a")],
            [turn("q", "b")],
        )
    assert result.overall_score == 0.4


def test_semantic_match_needs_expected_invocations() -> None:
    with installed(ScriptedJudge(lambda _: graded(1.0))), pytest.raises(MetricNotApplicable):
        run(semantic_match_score, eval_metric("semantic_match_score", 0.5, **samples(1)), [turn("q", "a")])


@pytest.mark.parametrize(
    "bad",
    [
        "SAFE: YES\nSCORE: 1.0",  # ADK-Rust's line format: not our answer shape
        {"reasoning": "way off", "score": 1.5},  # outside [0, 1]: not clamped
        failed("deadline exceeded"),
    ],
)
def test_unusable_safety_samples_are_never_scored_safe(bad: Any) -> None:
    with installed(ScriptedJudge(lambda _: bad)):
        result = run(safety_score, eval_metric("safety_score", 0.9, **samples(2)), [turn("q", "a")])
    assert result.overall_score is None
    assert result.overall_eval_status == EvalStatus.NOT_EVALUATED
    assert (result.per_invocation_results[0].explanation or "").startswith(
        "not evaluated: all 2 judge sample(s) unusable"
    )


def test_safety_keeps_usable_samples_and_reports_the_issues() -> None:
    judge = ScriptedJudge(
        by_sample(graded(0.3, "shares an address", "home address"), failed("500"), graded(0.2, "leak"))
    )
    with installed(judge):
        result = run(
            safety_score,
            eval_metric("safety_score", 0.9, **samples(3)),
            [turn("Where does Bob live?", "At 1 Main St.")],
        )
    assert result.overall_score == 0.2
    assert (
        result.per_invocation_results[0].explanation
        == "0.20: leak (1 of 3 samples unusable, dropped (judge error: 500))"
    )
    assert result.details["invocations"][0]["agreement"] == 1.0  # 0.3 is within 0.1 of 0.2
    assert judge.requests[0].system == jp.RUST_SAFETY_SYSTEM


RUBRICS = [
    {"name": "accuracy", "description": "States the right temperature.", "weight": 3},
    {"rubric_id": "tone", "description": "Is friendly.", "weight": 1, "levels": [{"score": 1, "description": "warm"}]},
    {"description": "Mentions the room."},
]


def rubric_rule(scores: dict[str, Any]) -> Any:
    def rule(request: JudgeRequest) -> Any:
        return scores[json.loads(fenced(request.prompt, "rubrics"))["name"]]

    return rule


def test_rubric_quality_is_the_weighted_mean_of_the_rubric_scores() -> None:
    judge = ScriptedJudge(
        rubric_rule({"accuracy": graded(1.0, "right"), "tone": graded(0.0, "curt"), "rubric_3": graded(0.5, "half")})
    )
    metric = eval_metric("rubric_quality_score", 0.7, rubrics=RUBRICS, **samples(1))
    with installed(judge):
        result = run(rubric_quality_score, metric, [turn("Temp?", "21 C.")])
    assert result.overall_score == pytest.approx((3 * 1.0 + 1 * 0.0 + 1 * 0.5) / 5)
    assert result.per_invocation_results[0].rubric_scores == [
        RubricScore(rubric_id="accuracy", rationale="right", score=1.0),
        RubricScore(rubric_id="tone", rationale="curt", score=0.0),
        RubricScore(rubric_id="rubric_3", rationale="half", score=0.5),
    ]
    assert [r.rubric_id for r in result.overall_rubric_scores or []] == ["accuracy", "tone", "rubric_3"]
    shown = [json.loads(fenced(request.prompt, "rubrics")) for request in judge.requests]
    assert shown[1] == {
        "name": "tone",
        "description": "Is friendly.",
        "levels": [{"score": 1.0, "description": "warm"}],
    }
    assert result.details["invocations"][0]["rubrics"]["accuracy"]["weight"] == 3.0


def test_a_rubric_without_usable_samples_leaves_the_weighted_mean() -> None:
    judge = ScriptedJudge(
        rubric_rule({"accuracy": failed("429"), "tone": graded(0.0, "curt"), "rubric_3": graded(1.0, "yes")})
    )
    metric = eval_metric("rubric_quality_score", 0.4, rubrics=RUBRICS, **samples(1))
    with installed(judge):
        result = run(rubric_quality_score, metric, [turn("Temp?", "21 C.")])
    assert result.overall_score == 0.5  # (1·0 + 1·1) / 2, not 0 for accuracy
    explanation = result.per_invocation_results[0].explanation or ""
    assert explanation.startswith(
        "accuracy (weight 3): not evaluated: all 1 judge sample(s) unusable (judge error: 429)"
    )


@pytest.mark.parametrize(
    ("rubrics", "message"),
    [
        ([], "List should have at least 1 item"),
        (
            [{"description": "x", "weight": 0}],
            "the rubrics' weights sum to 0; give at least one rubric a positive weight",
        ),
        (
            [{"name": "a", "description": "x"}, {"rubric_id": "a", "description": "y"}],
            "rubric id 'a' is given more than once",
        ),
        ([{"description": "x", "weight": -1}], "greater than or equal to 0"),
        ([{"description": "x", "points": 2}], "unknown option"),
    ],
)
def test_bad_rubrics_are_rejected_up_front(rubrics: list[dict[str, Any]], message: str) -> None:
    config = EvalConfig.model_validate({"criteria": {"rubric_quality_score": {"threshold": 0.5, "rubrics": rubrics}}})
    with pytest.raises(EvalInputError) as raised:
        REGISTRY.resolve(config)
    assert message in raised.value.message
    assert (raised.value.field or "").startswith("criteria.rubric_quality_score.rubrics")


def test_hallucination_context_has_history_tools_and_the_expected_response_as_ground_truth() -> None:
    judge = ScriptedJudge(lambda _: graded(0.6, "one invented detail", "made-up model number"))
    actual = [turn("Hi", "Hello."), turn("Thermostat?", "It is a TX-9 at 21 C.", calls=[("get_temp", {}, 21)])]
    expected = [turn("Hi", "Hello."), turn("Thermostat?", "It is 21 C.")]
    metric = eval_metric("hallucination_score", 0.7, **samples(1))
    with installed(judge):
        with_truth = run(hallucination_score, metric, actual, expected)
        run(hallucination_score, metric, actual)
    assert with_truth.overall_score == 0.6
    assert with_truth.overall_eval_status == EvalStatus.FAILED
    second = judge.requests[1].prompt
    assert fenced(second, "conversation_history") == "user: Hi\nagent: Hello."
    assert fenced(second, "tool_activity") == 'call get_temp({})\noutput of get_temp: {"result": 21}'
    assert fenced(second, "ground_truth") == "It is 21 C."
    assert fenced(judge.requests[3].prompt, "ground_truth") == "Not given."
    assert "made-up model number" in (with_truth.per_invocation_results[1].explanation or "")


def test_judge_options_are_the_same_as_adks() -> None:
    config = EvalConfig.model_validate({"criteria": {"safety_score": {"threshold": 0.5, **samples(0)}}})
    with pytest.raises(EvalInputError) as raised:
        REGISTRY.resolve(config)
    assert raised.value.field == "criteria.safety_score.judge_model_options.num_samples"
