"""ADK's rubric-based judged metrics against a scripted judge: which rubrics apply, votes, means."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.rubrics import (
    FINAL_RESPONSE_QUALITY,
    TOOL_USE_QUALITY,
    RubricAnswer,
    merge_rubrics,
    rubric_based_final_response_quality_v1,
    rubric_based_tool_use_quality_v1,
    with_case_rubrics,
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
    rubric,
    run,
    samples,
    turn,
)

CONCISE = rubric("concise", "The answer is concise.")
CONCISE_JSON = CONCISE.model_dump(mode="json", exclude_none=True)


def verdicts(**given: str) -> dict[str, Any]:
    return {"verdicts": [{"rubric_id": i, "rationale": f"{i} {v}", "verdict": v} for i, v in given.items()]}


def quality(count: int, *rubrics: dict[str, Any], threshold: float = 0.5) -> Any:
    return eval_metric("rubric_based_final_response_quality_v1", threshold, rubrics=list(rubrics), **samples(count))


def test_each_rubric_is_voted_by_majority_and_the_turn_scores_their_mean() -> None:
    own = rubric("sunny", "Mentions the sun.", FINAL_RESPONSE_QUALITY)
    replies = (verdicts(concise="yes", sunny="no"), verdicts(concise="no", sunny="no"), verdicts(concise="yes"))
    judge = ScriptedJudge(by_sample(*replies))
    with installed(judge):
        result = run(
            rubric_based_final_response_quality_v1, quality(3, CONCISE_JSON), [turn("Weather?", "Sun.", rubrics=[own])]
        )
    invocation = result.per_invocation_results[0]
    assert invocation.score == 0.5
    assert invocation.rubric_scores == [
        RubricScore(rubric_id="concise", rationale="concise yes", score=1.0),
        RubricScore(rubric_id="sunny", rationale="sunny no", score=0.0),
    ]
    assert invocation.explanation == (
        "concise: yes: concise yes (2 of 3 samples agree; dissent: concise no); "
        "sunny: no: sunny no (1 of 3 samples unusable, dropped (no verdict for rubric 'sunny'))"
    )
    rubric_details = result.details["invocations"][0]["rubrics"]
    assert rubric_details["concise"]["agreement"] == pytest.approx(2 / 3)
    assert rubric_details["sunny"]["unusable_samples"] == 1
    assert result.details["agreement"] == pytest.approx(5 / 6)
    assert judge.requests[0].response_schema is RubricAnswer
    assert judge.requests[0].system == jp.RUBRIC_FINAL_RESPONSE_SYSTEM
    listed = json.loads(fenced(judge.requests[0].prompt, "rubrics"))
    assert listed == [
        {"rubric_id": "concise", "property": "The answer is concise."},
        {"rubric_id": "sunny", "property": "Mentions the sun."},
    ]


def test_overall_is_the_mean_of_all_rubric_verdicts_with_per_rubric_means() -> None:
    def rule(request: JudgeRequest) -> dict[str, Any]:
        if fenced(request.prompt, "agent_response") == "Short.":
            return verdicts(concise="yes", polite="yes")
        return verdicts(concise="no")

    polite = rubric("polite", "The answer is polite.", FINAL_RESPONSE_QUALITY)
    actual = [turn("a", "Short.", rubrics=[polite]), turn("b", "A very long answer.")]
    with installed(ScriptedJudge(rule)):
        result = run(rubric_based_final_response_quality_v1, quality(1, CONCISE_JSON, threshold=0.6), actual)
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]
    assert result.overall_score == pytest.approx(2 / 3)  # ADK: mean of the 3 rubric verdicts, not of the 2 turns
    assert result.overall_eval_status == EvalStatus.PASSED
    assert result.overall_rubric_scores == [
        RubricScore(rubric_id="concise", rationale="mean over 2 turn(s)", score=0.5),
        RubricScore(rubric_id="polite", rationale="mean over 1 turn(s)", score=1.0),
    ]


def test_only_rubrics_of_the_metrics_type_apply_and_untyped_ones_are_reported() -> None:
    tool = rubric("right_tool", "Calls get_weather.", TOOL_USE_QUALITY)
    untyped = rubric("vague", "Is good.")
    expected_rubric = rubric("from_expected", "Uses the city.", TOOL_USE_QUALITY)
    actual = [turn("Weather?", "Sunny", calls=[("get_weather", {"city": "Paris"}, "sun")], rubrics=[tool, untyped])]
    expected = [turn("Weather?", "Sunny", rubrics=[expected_rubric])]
    judge = ScriptedJudge(lambda _: verdicts(right_tool="yes", from_expected="no"))
    metric = eval_metric("rubric_based_tool_use_quality_v1", 0.5, **samples(1))
    with installed(judge):
        result = run(rubric_based_tool_use_quality_v1, metric, actual, expected)
    assert result.overall_score == 0.5
    assert result.details["ignored_rubrics"] == ["vague"]
    prompt = judge.requests[0].prompt
    assert [r["rubric_id"] for r in json.loads(fenced(prompt, "rubrics"))] == ["right_tool", "from_expected"]
    assert (
        fenced(prompt, "tool_activity")
        == 'call get_weather({"city": "Paris"})\noutput of get_weather: {"result": "sun"}'
    )
    assert "<developer_instructions>" not in prompt and "<agent_response>" not in prompt
    assert judge.requests[0].system == jp.RUBRIC_TOOL_USE_SYSTEM


def test_without_any_applicable_rubric_the_metric_does_not_apply_and_says_why() -> None:
    actual = [turn("q", "a", rubrics=[rubric("vague", "Is good.")])]
    with installed(ScriptedJudge(lambda _: verdicts())), pytest.raises(MetricNotApplicable) as raised:
        run(rubric_based_final_response_quality_v1, quality(1), actual)
    assert str(raised.value) == (
        "no rubric: give the criterion 'rubrics', or rubrics of type FINAL_RESPONSE_QUALITY "
        "(untyped rubrics are ignored: vague; set their type)"
    )


def test_a_turn_without_rubric_is_not_evaluated_while_the_others_are() -> None:
    own = rubric("short", "Short.", FINAL_RESPONSE_QUALITY)
    with installed(ScriptedJudge(lambda _: verdicts(short="yes"))) as judge:
        result = run(
            rubric_based_final_response_quality_v1, quality(1), [turn("a", "x", rubrics=[own]), turn("b", "y")]
        )
    assert result.overall_score == 1.0
    second = result.per_invocation_results[1]
    assert (second.score, second.explanation) == (
        None,
        "no rubric of type FINAL_RESPONSE_QUALITY applies to this invocation",
    )
    assert len(judge.requests) == 1


def test_all_samples_unusable_leaves_the_turn_not_evaluated() -> None:
    with installed(ScriptedJudge(by_sample(failed("quota"), "Verdict: yes"))):
        result = run(rubric_based_final_response_quality_v1, quality(2, CONCISE_JSON), [turn("q", "a")])
    assert result.overall_score is None and result.overall_eval_status == EvalStatus.NOT_EVALUATED
    explanation = result.per_invocation_results[0].explanation or ""
    assert explanation.startswith(
        "not evaluated: all 2 judge sample(s) unusable (judge error: quota; unparseable answer"
    )


def test_rubric_ids_echoed_with_their_tag_still_match() -> None:
    answer = {"verdicts": [{"rubric_id": "[id: concise]", "rationale": "ok", "verdict": "Yes"}]}
    with installed(ScriptedJudge(lambda _: answer)):
        result = run(rubric_based_final_response_quality_v1, quality(1, CONCISE_JSON), [turn("q", "a")])
    assert result.overall_score == 1.0


def test_case_rubrics_are_copied_into_every_invocation_and_conflicts_are_errors() -> None:
    case_rubric = rubric("case", "Case wide.", FINAL_RESPONSE_QUALITY)
    copied = with_case_rubrics([case_rubric], [turn("a", "x"), turn("b", "y", rubrics=[case_rubric])])
    assert [[r.rubric_id for r in inv.rubrics or []] for inv in copied] == [["case"], ["case"]]
    with pytest.raises(ValueError, match="two different rubrics have the rubric_id 'case'"):
        merge_rubrics([case_rubric], [rubric("case", "Something else.")])


def test_duplicate_criterion_rubric_ids_are_rejected_up_front() -> None:
    config = EvalConfig.model_validate(
        {"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.5, "rubrics": [CONCISE_JSON] * 2}}}
    )
    with pytest.raises(EvalInputError) as raised:
        REGISTRY.resolve(config)
    assert raised.value.field == "criteria.rubric_based_final_response_quality_v1.rubrics"
    assert raised.value.message == "rubric_id 'concise' is given more than once; rubric ids must be unique"
