"""ADK-exact judging: the request text equals the one google-adk's own evaluator sends, and the same scripted
verdicts give ADK's scores, on every ADK judged metric with a judge prompt.

Both sides run against the fake Gemini server (a real HTTP server): ADK's own evaluator class with ADK's own
Gemini model (pointed at the server by `GOOGLE_GEMINI_BASE_URL`), then our metric in its default mode, which
sends through our judge client (`AGENT_EVAL_GEMINI_BASE_URL`). Each side gets the same scripted answers, in the
same order; the test compares the requests the server recorded and the scores.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation")  # ADK's own evaluators are the reference; CI requires google-adk

from google.adk.evaluation.conversation_scenarios import ConversationScenario as AdkScenario
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.evaluator import EvaluationResult as AdkResult
from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator
from google.adk.evaluation.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1

from agent_eval.errors import EvalInputError
from agent_eval.metrics.judged import mode as judge_mode
from agent_eval.metrics.judged.adk import final_response_match_v2, hallucinations_v1, safety_v1
from agent_eval.metrics.judged.adk_llm import JudgeSampleFailed
from agent_eval.metrics.judged.rubrics import rubric_based_final_response_quality_v1, rubric_based_tool_use_quality_v1
from agent_eval.metrics.judged.user_simulator import per_turn_user_simulator_quality_v1
from agent_eval.metrics.registry import REGISTRY
from agent_eval.metrics.scoring import score_criterion
from agent_eval.render import format_summary, render_html
from agent_eval.results.aggregate import build_report
from agent_eval.results.model import RunReport
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
from tests.fakes.gemini_server import FAKE_API_KEY, FakeGeminiServer, FakeReply, error_reply, text_reply
from tests.metrics.scripted_judge import ScriptedJudge, installed

pytestmark = pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\]:UserWarning")  # ADK's notice on its evaluators

_ENVIRONMENT = (
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "AGENT_EVAL_JUDGE_BACKEND",
    "AGENT_EVAL_JUDGE_CONCURRENCY",
)


@pytest.fixture
def judge_server(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeGeminiServer:
    """The fake Gemini server, where both ADK's own model and our judge client send; an empty judge cache."""
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)  # ADK's own Gemini model
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)  # our judge client
    return fake_gemini


# ----------------------------------------------------------------------------------------------- the cases
def _content(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _turn(user: str, response: str, **more: Any) -> dict[str, Any]:
    return {"user_content": _content("user", user), "final_response": _content("model", response), **more}


APP = {
    "agent_details": {
        "home": {"name": "home", "instructions": "Control the devices of the house.", "tool_declarations": []}
    }
}
LAMP_EVENTS = {
    "invocation_events": [
        {
            "author": "home",
            "content": {
                "role": "model",
                "parts": [
                    {"function_call": {"id": "c1", "name": "set_device", "args": {"device": "lamp", "on": True}}}
                ],
            },
        },
        {
            "author": "home",
            "content": {
                "role": "user",
                "parts": [{"function_response": {"id": "c1", "name": "set_device", "response": {"status": "on"}}}],
            },
        },
    ]
}
ACTUAL = [
    _turn("Turn on the lamp.", "The lamp is on.", intermediate_data=LAMP_EVENTS, app_details=APP),
    _turn("And the heating?", "The heating is at 30 degrees. It is sunny.", app_details=APP),
]
EXPECTED = [
    _turn("Turn on the lamp.", "I switched the lamp on."),
    _turn("And the heating?", "The heating is at 21 degrees."),
]
CONCISE = {"rubric_id": "concise", "rubric_content": {"text_property": "The response is short."}}
NAMES_DEVICE = {"rubric_id": "names_device", "rubric_content": {"text_property": "The response names the device."}}
USES_TOOL = {"rubric_id": "uses_tool", "rubric_content": {"text_property": "The agent calls set_device."}}
SCENARIO = {
    "starting_prompt": "Turn on the lamp.",
    "conversation_plan": "Ask for the lamp, then the heating, then stop.",
}


# ------------------------------------------------------------------------------------------- both sides
def criterion(threshold: float = 0.5, samples: int = 3, **options: Any) -> dict[str, Any]:
    """A criterion as a user writes it in test_config.json."""
    return {"threshold": threshold, "judge_model_options": {"num_samples": samples}, **options}


def adk_side(
    evaluator_class: Callable[[AdkEvalMetric], Any],
    name: str,
    given: dict[str, Any],
    cases: tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any] | None],
) -> AdkResult:
    """ADK's own evaluator class, with ADK's own Gemini model, on ADK's own models of the case."""
    evaluator = evaluator_class(AdkEvalMetric(metric_name=name, criterion=AdkCriterion.model_validate(given)))
    actual = [AdkInvocation.model_validate(turn) for turn in cases[0]]
    expected = [AdkInvocation.model_validate(turn) for turn in cases[1]] if cases[1] is not None else None
    scenario = AdkScenario.model_validate(cases[2]) if cases[2] is not None else None
    result = asyncio.run(evaluator.evaluate_invocations(actual, expected, scenario))
    assert isinstance(result, AdkResult)
    return result


def our_side(
    function: Callable[..., Any],
    name: str,
    given: dict[str, Any],
    cases: tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any] | None],
) -> EvaluationResult:
    """Our metric in its default mode, on our models of the case."""
    metric = metric_of(name, given)
    actual = [Invocation.model_validate(turn) for turn in cases[0]]
    expected = [Invocation.model_validate(turn) for turn in cases[1]] if cases[1] is not None else None
    scenario = ConversationScenario.model_validate(cases[2]) if cases[2] is not None else None
    result = asyncio.run(function(metric, actual, expected, scenario))
    assert isinstance(result, EvaluationResult)
    return result


def metric_of(name: str, given: dict[str, Any]) -> EvalMetric:
    return EvalConfig.model_validate({"criteria": {name: given}}).eval_metrics()[0]


def both_sides(
    server: FakeGeminiServer,
    adk: tuple[Callable[[AdkEvalMetric], Any], Callable[..., Any]],
    name: str,
    given: dict[str, Any],
    cases: tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any] | None],
    *,
    replies: Sequence[dict[str, Any] | FakeReply],
) -> tuple[AdkResult, EvaluationResult, list[str], list[str]]:
    """ADK's result, ours, and the request texts each side sent, both given `replies` in order."""
    server.script(*replies)
    theirs = adk_side(adk[0], name, given, cases)
    sent_by_adk = texts(server, 0)
    server.script(*replies)
    ours = our_side(adk[1], name, given, cases)
    sent_by_us = texts(server, len(sent_by_adk))
    assert server.unscripted == []
    return theirs, ours, sent_by_adk, sent_by_us


def texts(server: FakeGeminiServer, start: int) -> list[str]:
    """The request texts (the one user message) from request `start` on; none has a system instruction."""
    requests = server.generate_requests()[start:]
    assert all(request.system_instruction == "" for request in requests)
    assert all("responseSchema" not in (request.body.get("generationConfig") or {}) for request in requests)
    return ["".join(part["text"] for c in request.contents for part in c["parts"]) for request in requests]


def assert_same_scores(theirs: AdkResult, ours: EvaluationResult) -> None:
    assert ours.overall_score == theirs.overall_score
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    assert [r.eval_status.value for r in ours.per_invocation_results] == [
        r.eval_status.value for r in theirs.per_invocation_results
    ]
    assert ours.overall_eval_status.value == theirs.overall_eval_status.value
    assert ours.details["judge_mode"] == "adk-exact"


def validity(label: str) -> dict[str, Any]:
    return text_reply(f'{{"reasoning": "checked", "is_the_agent_response_valid": "{label}"}}')


def rubric_answer(*verdicts: tuple[dict[str, Any], str]) -> dict[str, Any]:
    blocks = [
        f"ID: {r['rubric_id']}\nProperty: {r['rubric_content']['text_property']}\n"
        f"Evidence: seen\nRationale: {r['rubric_id']} is {verdict}\nVerdict: {verdict}"
        for r, verdict in verdicts
    ]
    return text_reply("\n\n".join(blocks))


def sentences(*items: str) -> dict[str, Any]:
    return text_reply("".join(f"<sentence>{item}</sentence>" for item in items))


def labels(*items: tuple[str, str]) -> dict[str, Any]:
    blocks = [
        f"sentence: {sentence}\nlabel: {label}\nrationale: {label} by the context\n"
        "supporting_excerpt: null\ncontradicting_excerpt: null"
        for sentence, label in items
    ]
    return text_reply("\n".join(blocks))


# -------------------------------------------------------------------------------- final_response_match_v2
FRM = (FinalResponseMatchV2Evaluator, final_response_match_v2)


def test_final_response_match_v2_sends_adks_request_and_votes_as_adk(judge_server: FakeGeminiServer) -> None:
    replies = [validity("valid"), validity("invalid"), validity("valid")]  # turn 1: 2 of 3 valid
    replies += [validity("invalid"), text_reply("no label here"), validity("valid")]  # turn 2: a 1-1 tie
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server, FRM, "final_response_match_v2", criterion(), (ACTUAL, EXPECTED, None), replies=replies
    )
    assert sent_by_us == sent_by_adk and len(sent_by_us) == 6
    assert "I switched the lamp on." in sent_by_us[0] and "The lamp is on." in sent_by_us[0]
    assert_same_scores(theirs, ours)
    assert (ours.overall_score, [r.score for r in ours.per_invocation_results]) == (0.5, [1.0, 0.0])
    assert ours.per_invocation_results[0].explanation == "valid (2 of 3 parsed sample(s) agree)"
    assert ours.per_invocation_results[1].explanation == (
        "invalid (1 of 2 parsed sample(s) agree; 1 without a label ADK reads, left out)"
    )


def test_a_sample_failing_with_a_400_leaves_the_whole_turn_not_evaluated(judge_server: FakeGeminiServer) -> None:
    # Turn 1: two valid samples and one 400 (agent-eval's own mode would vote 1.0 on the two); turn 2: invalid.
    replies = [validity("valid"), error_reply(400, "bad request"), validity("valid")]
    replies += [validity("invalid")] * 3
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server, FRM, "final_response_match_v2", criterion(), (ACTUAL, EXPECTED, None), replies=replies
    )
    assert sent_by_us == sent_by_adk
    assert_same_scores(theirs, ours)
    first = ours.per_invocation_results[0]
    assert (first.score, first.eval_status) == (None, EvalStatus.NOT_EVALUATED)
    assert first.explanation is not None and first.explanation.startswith(
        "not evaluated: 1 of 3 judge sample(s) failed, and ADK leaves a turn with a failed sample unscored"
    )
    assert "400" in first.explanation
    assert (ours.overall_score, ours.overall_eval_status) == (0.0, EvalStatus.FAILED)
    assert ours.details["failed_calls"] == 1


# --------------------------------------------------------------------------------------- rubric metrics
def test_rubric_based_final_response_quality_v1_equals_adk(judge_server: FakeGeminiServer) -> None:
    given = criterion(samples=3, rubrics=[CONCISE, NAMES_DEVICE])
    replies = [
        rubric_answer((CONCISE, "yes"), (NAMES_DEVICE, "yes")),
        rubric_answer((CONCISE, "no"), (NAMES_DEVICE, "yes")),
        text_reply("I cannot follow the format."),  # unparseable: left out
        rubric_answer((CONCISE, "no"), (NAMES_DEVICE, "no")),
        rubric_answer((CONCISE, "no"), (NAMES_DEVICE, "yes")),
        rubric_answer((CONCISE, "yes"), (NAMES_DEVICE, "yes")),
    ]
    adk = (RubricBasedFinalResponseQualityV1Evaluator, rubric_based_final_response_quality_v1)
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server, adk, "rubric_based_final_response_quality_v1", given, (ACTUAL, None, None), replies=replies
    )
    assert sent_by_us == sent_by_adk and len(sent_by_us) == 6
    assert "[id: concise] The response is short." in sent_by_us[0]
    assert_same_scores(theirs, ours)
    # turn 1: concise 1-1 tie (no), names_device yes; turn 2: concise no (1 of 3), names_device yes (2 of 3)
    assert [r.score for r in ours.per_invocation_results] == [0.5, 0.5]
    assert ours.overall_score == 0.5
    assert [(s.rubric_id, s.score) for s in ours.overall_rubric_scores or []] == [
        (s.rubric_id, s.score) for s in theirs.overall_rubric_scores or []
    ]
    assert (
        ours.per_invocation_results[0].explanation
        == "concise: no: concise is no; names_device: yes: names_device is yes"
    )


def test_rubric_based_tool_use_quality_v1_equals_adk(judge_server: FakeGeminiServer) -> None:
    given = criterion(samples=1, rubrics=[USES_TOOL])
    replies = [rubric_answer((USES_TOOL, "yes")), rubric_answer((USES_TOOL, "no"))]
    adk = (RubricBasedToolUseV1Evaluator, rubric_based_tool_use_quality_v1)
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server, adk, "rubric_based_tool_use_quality_v1", given, (ACTUAL, None, None), replies=replies
    )
    assert sent_by_us == sent_by_adk and len(sent_by_us) == 2
    assert '"name": "set_device"' in sent_by_us[0]
    assert_same_scores(theirs, ours)
    assert [r.score for r in ours.per_invocation_results] == [1.0, 0.0]


# -------------------------------------------------------------------------------------- hallucinations_v1
def test_hallucinations_v1_asks_once_to_segment_and_once_to_validate_ignoring_num_samples(
    judge_server: FakeGeminiServer,
) -> None:
    replies = [
        sentences("The lamp is on."),
        labels(("The lamp is on.", "supported")),
        sentences("The heating is at 30 degrees.", "It is sunny."),
        labels(("The heating is at 30 degrees.", "contradictory"), ("It is sunny.", "not_applicable")),
    ]
    adk = (HallucinationsV1Evaluator, hallucinations_v1)
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server, adk, "hallucinations_v1", criterion(samples=5), (ACTUAL, None, None), replies=replies
    )
    assert len(sent_by_us) == 4  # per turn: one segmenter call, one validator call; num_samples=5 is ignored
    assert sent_by_us == sent_by_adk
    assert "The heating is at 30 degrees. It is sunny." in sent_by_us[2]  # the segmenter gets the response
    assert "<sentence>It is sunny.</sentence>" in sent_by_us[3]  # the validator gets the model's segments
    assert_same_scores(theirs, ours)
    assert [r.score for r in ours.per_invocation_results] == [1.0, 0.5]
    assert ours.per_invocation_results[1].explanation == (
        "contradictory 'The heating is at 30 degrees.': contradictory by the context"
    )
    assert (ours.details["num_samples"], ours.details["judge_calls"]) == (1, 4)


def test_hallucinations_v1_with_a_failed_segmenter_call_leaves_the_turn_unscored(
    judge_server: FakeGeminiServer,
) -> None:
    replies = [error_reply(400, "bad request"), sentences("The heating is at 30 degrees."), labels()]
    adk = (HallucinationsV1Evaluator, hallucinations_v1)
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server, adk, "hallucinations_v1", criterion(samples=3), (ACTUAL, None, None), replies=replies
    )
    assert sent_by_us == sent_by_adk and len(sent_by_us) == 3
    assert_same_scores(theirs, ours)
    assert [r.score for r in ours.per_invocation_results] == [None, None]
    assert (ours.overall_score, ours.overall_eval_status) == (None, EvalStatus.NOT_EVALUATED)
    explanation = ours.per_invocation_results[0].explanation or ""
    assert explanation.startswith("not evaluated: Error during sentence segmentation") and "400" in explanation


# ----------------------------------------------------------------------------- per_turn_user_simulator_quality
def test_per_turn_user_simulator_quality_v1_equals_adk(judge_server: FakeGeminiServer) -> None:
    conversation = [
        _turn("Turn on the lamp.", "The lamp is on."),
        _turn("And the heating?", "It is at 21 degrees."),
        _turn("Book me a flight.", "I cannot do that."),
    ]
    valid, invalid = text_reply('{"is_valid": "valid"}'), text_reply('{"is_valid": "invalid"}')
    replies = [valid, invalid, valid, invalid, invalid, valid, valid, valid, valid]  # turn 2, turn 3, the stop
    adk = (PerTurnUserSimulatorQualityV1, per_turn_user_simulator_quality_v1)
    theirs, ours, sent_by_adk, sent_by_us = both_sides(
        judge_server,
        adk,
        "per_turn_user_simulator_quality_v1",
        criterion(),
        (conversation, None, SCENARIO),
        replies=replies,
    )
    assert sent_by_us == sent_by_adk and len(sent_by_us) == 9
    assert "Book me a flight." in sent_by_us[3]
    assert_same_scores(theirs, ours)
    assert [r.score for r in ours.per_invocation_results] == [1.0, 1.0, 0.0]
    assert ours.overall_score == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------- choosing the mode
def test_agent_eval_prompts_stay_selectable_by_name(judge_server: FakeGeminiServer) -> None:
    judge = ScriptedJudge(lambda _request: {"reasoning": "same", "verdict": "valid"})
    with installed(judge):
        result = our_side(
            final_response_match_v2,
            "final_response_match_v2",
            criterion(judge_mode="agent-eval"),
            (ACTUAL[:1], EXPECTED[:1], None),
        )
    assert (result.overall_score, result.details["judge_mode"]) == (1.0, "agent-eval")
    assert len(judge.requests) == 3 and all(request.system and request.response_schema for request in judge.requests)
    assert judge_server.requests == []


def test_without_google_adk_the_default_is_agent_eval_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(judge_mode, "adk_installed", lambda: False)
    monkeypatch.setattr(judge_mode, "_warned", set())
    judge = ScriptedJudge(lambda _request: {"reasoning": "same", "verdict": "valid"})
    with installed(judge), caplog.at_level(logging.WARNING, logger="agent_eval.metrics.judged.mode"):
        for _ in range(2):
            result = our_side(
                final_response_match_v2, "final_response_match_v2", criterion(), (ACTUAL[:1], EXPECTED[:1], None)
            )
            assert (result.overall_score, result.details["judge_mode"]) == (1.0, "agent-eval")
    assert [record.getMessage() for record in caplog.records] == [
        "scores of final_response_match_v2 may differ from `adk eval`: install agent-eval[adk] for ADK's own "
        "judge prompts"
    ]
    with pytest.raises(EvalInputError, match="judge_mode 'adk-exact' needs google-adk"):
        REGISTRY.resolve(
            EvalConfig.model_validate({"criteria": {"hallucinations_v1": criterion(judge_mode="adk-exact")}})
        )


def test_safety_v1_has_only_agent_evals_mode() -> None:
    with pytest.raises(EvalInputError) as raised:
        REGISTRY.resolve(EvalConfig.model_validate({"criteria": {"safety_v1": criterion(judge_mode="adk-exact")}}))
    assert raised.value.field == "criteria.safety_v1.judge_mode"
    assert "ADK scores it with Vertex AI's evaluation service" in raised.value.message
    judge = ScriptedJudge(lambda _request: {"rationale": "fine", "verdict": "safe"})
    with installed(judge):
        result = our_side(safety_v1, "safety_v1", criterion(samples=1), (ACTUAL[:1], None, None))
    assert (result.overall_score, result.details["judge_mode"]) == (1.0, "agent-eval")


def _judged_run(config: EvalConfig) -> RunReport:
    """A run of one case (the first turn of `ACTUAL` against `EXPECTED`) scored with `config`'s criteria."""
    case = EvalCase(eval_id="lamp", conversation=[Invocation.model_validate(t) for t in EXPECTED[:1]])
    run = AgentRun(eval_set_id="home", eval_id="lamp", invocations=[Invocation.model_validate(ACTUAL[0])])
    results = [
        result
        for eval_metric, spec in REGISTRY.resolve(config)
        for result in asyncio.run(score_criterion(spec, eval_metric, [(case, run)]))
    ]
    moment = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    return build_report(
        run_id="judged",
        runs=[(case, run)],
        metric_results=results,
        config=config,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc",
        num_runs=1,
        started_at=moment,
        completed_at=moment,
    )


def test_the_summary_and_the_report_say_which_mode_judged_each_criterion() -> None:
    given = {"final_response_match_v2": criterion(samples=1), "safety_v1": criterion(samples=1)}
    config = EvalConfig.model_validate({"criteria": given})
    adk_answer = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'  # ADK's request has no schema
    judge = ScriptedJudge(lambda r: adk_answer if r.response_schema is None else {"rationale": "ok", "verdict": "safe"})
    with installed(judge):
        report = _judged_run(config)

    assert [m.score for m in report.cases[0].metrics] == [1.0, 1.0]
    assert "Judge mode: final_response_match_v2 adk-exact; safety_v1 agent-eval" in format_summary(report).splitlines()
    page = render_html(report)
    assert "<dt>judge mode</dt><dd>final_response_match_v2 adk-exact; safety_v1 agent-eval</dd>" in page
    assert "<td class='mono'>final_response_match_v2<br><span class=\"muted\">judge mode: adk-exact</span></td>" in page


def test_judge_mode_is_an_accepted_option_in_snake_or_camel_case() -> None:
    for name in ("final_response_match_v2", "rubric_based_tool_use_quality_v1", "per_turn_user_simulator_quality_v1"):
        REGISTRY.resolve(EvalConfig.model_validate({"criteria": {name: criterion(judgeMode="agent-eval")}}))
    with pytest.raises(EvalInputError) as raised:
        REGISTRY.resolve(EvalConfig.model_validate({"criteria": {"hallucinations_v1": criterion(judge_mode="adk")}}))
    assert raised.value.field == "criteria.hallucinations_v1.judge_mode"


def test_a_failed_user_simulator_judge_call_fails_the_metric_as_in_adk(judge_server: FakeGeminiServer) -> None:
    conversation = [_turn("Turn on the lamp.", "The lamp is on."), _turn("And the heating?", "It is at 21 degrees.")]
    given = criterion(samples=1)
    adk = (PerTurnUserSimulatorQualityV1, per_turn_user_simulator_quality_v1)
    judge_server.script(error_reply(400, "bad request"))
    with pytest.raises(Exception, match="400"):
        adk_side(adk[0], "per_turn_user_simulator_quality_v1", given, (conversation, None, SCENARIO))
    judge_server.script(error_reply(400, "bad request"))
    with pytest.raises(JudgeSampleFailed, match="judge call rejected: 400"):
        our_side(adk[1], "per_turn_user_simulator_quality_v1", given, (conversation, None, SCENARIO))
    assert len(judge_server.generate_requests()) == 2
