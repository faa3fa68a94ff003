"""ADK-exact rubric metrics on a case with case-level and invocation-level rubrics (issue 30, item 7).

The reference is google-adk's own `LocalEvalService.evaluate`, driven as `adk eval` drives it (an eval set in
ADK's in-memory manager, the agent's inferences, an `EvaluateConfig`), with ADK's own evaluator class for the
metric whose model is a recording fake: ADK itself copies the case's and the expected invocations' rubrics
into the actual invocations (`_copy_eval_case_rubrics_to_actual_invocations`,
`_copy_invocation_rubrics_to_actual_invocations`) and its evaluator keeps the criterion's rubrics and those of
its type (`RubricBasedEvaluator.create_effective_rubrics_list`). Our side scores the same case through
`score_case_run` in judge_mode "adk-exact" with a scripted judge. Both judges answer each request by the same
rule, so the request texts and the scores must be equal.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import re
import sys
import warnings
from collections import Counter
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation")  # ADK's own evaluation service is the reference

from google.adk.agents.base_agent import BaseAgent
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceResult,
    InferenceStatus,
)
from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.evaluator import Evaluator as AdkEvaluator
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.rubric_based_evaluator import RubricBasedEvaluator
from google.adk.evaluation.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types as genai_types
from pydantic import Field

from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.registry import REGISTRY
from agent_eval.metrics.scoring import score_case_run
from agent_eval.results.model import MetricResult
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, Invocation
from tests.metrics.scripted_judge import ScriptedJudge, installed


def _imported_with_stand_ins(module: str) -> ModuleType:
    """`module` of google-adk, imported with empty stand-ins for the Vertex AI SDKs if they are missing.

    ADK's metric registry (imported by `local_eval_service`) imports `vertexai` and `agentplatform` for its
    Vertex-backed metrics (google-adk's `gcp` extra, not agent-eval's `adk` extra). No such metric runs here;
    the stand-ins are in `sys.modules` only while the import runs.
    """
    missing = [name for name in ("agentplatform", "vertexai") if importlib.util.find_spec(name) is None]
    for name in missing:
        sys.modules[name] = ModuleType(name)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"\[EXPERIMENTAL\]", UserWarning)  # ADK's notice on its registry
            return importlib.import_module(module)
    finally:
        for name in missing:
            sys.modules.pop(name, None)


LocalEvalService = _imported_with_stand_ins("google.adk.evaluation.local_eval_service").LocalEvalService
MetricEvaluatorRegistry = importlib.import_module(
    "google.adk.evaluation.metric_evaluator_registry"
).MetricEvaluatorRegistry

pytestmark = pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\]:UserWarning")  # ADK's notice on its classes

APP, EVAL_SET, CASE = "home_app", "home", "lamp_then_heating"
FRQ, TOOL_USE = "rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1"
LAMP, HEATING = "Turn on the lamp.", "And the heating?"


# ----------------------------------------------------------------------------------------------- the case
def _rubric(rubric_id: str, text: str, kind: str | None = None) -> dict[str, Any]:
    return {"rubric_id": rubric_id, "rubric_content": {"text_property": text}, "type": kind}


def _content(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _turn(user: str, response: str, calls: list[tuple[str, dict[str, Any], dict[str, Any]]], **more: Any) -> Any:
    uses = [{"id": f"c{i}", "name": name, "args": args} for i, (name, args, _) in enumerate(calls)]
    outputs = [{"id": f"c{i}", "name": name, "response": out} for i, (name, _, out) in enumerate(calls)]
    data = {"tool_uses": uses, "tool_responses": outputs, "intermediate_responses": []}
    return {
        "user_content": _content("user", user),
        "final_response": _content("model", response),
        "intermediate_data": data,
        **more,
    }


CRITERION_RUBRICS = {  # the criterion's rubrics: untyped, they apply whatever the metric
    FRQ: [_rubric("concise", "The response is short.")],
    TOOL_USE: [_rubric("uses_set_device", "The agent calls set_device.")],
}
CASE_RUBRICS = [  # EvalCase.rubrics: one of each metric's type, and an untyped one that neither metric uses
    _rubric("case_polite", "The response is polite.", "FINAL_RESPONSE_QUALITY"),
    _rubric("case_one_call", "The agent calls each tool at most once.", "TOOL_USE_QUALITY"),
    _rubric("case_untyped", "The agent speaks English."),
]
TURN_RUBRICS = [  # Invocation.rubrics of the second expected invocation only
    _rubric("turn_names_heating", "The response names the heating.", "FINAL_RESPONSE_QUALITY"),
    _rubric("turn_reads_heating", "The agent calls get_heating.", "TOOL_USE_QUALITY"),
]
ACTUAL = [
    _turn(LAMP, "The lamp is on.", [("set_device", {"device": "lamp", "on": True}, {"status": "on"})]),
    _turn(HEATING, "The heating is at 21 degrees.", [("get_heating", {}, {"celsius": 21})]),
]
EXPECTED = [
    _turn(LAMP, "I switched the lamp on.", []),
    _turn(HEATING, "It is at 21 degrees.", [], rubrics=TURN_RUBRICS),
]
SAMPLES = 3

VERDICTS: dict[tuple[str, str], tuple[str, str, str]] = {
    # (turn, rubric id): the verdict of samples 0, 1 and 2 (ADK: majority vote per rubric, a tie is "no")
    (LAMP, "concise"): ("yes", "yes", "yes"),
    (LAMP, "case_polite"): ("yes", "no", "yes"),
    (LAMP, "uses_set_device"): ("yes", "yes", "yes"),
    (LAMP, "case_one_call"): ("yes", "yes", "yes"),
    (HEATING, "concise"): ("no", "no", "yes"),
    (HEATING, "case_polite"): ("yes", "yes", "yes"),
    (HEATING, "turn_names_heating"): ("yes", "no", "yes"),
    (HEATING, "uses_set_device"): ("no", "no", "no"),
    (HEATING, "case_one_call"): ("yes", "yes", "yes"),
    (HEATING, "turn_reads_heating"): ("yes", "yes", "no"),
}
_LISTED = re.compile(r"^\*  \[id: (\w+)\] (.*)$", flags=re.MULTILINE)


def listed_rubrics(prompt: str) -> list[str]:
    """The ids of this case's rubrics that a judge request lists (not those of the prompt's worked example)."""
    known = {rubric_id for _, rubric_id in VERDICTS}
    return [rubric_id for rubric_id, _ in _LISTED.findall(prompt) if rubric_id in known]


def answer(prompt: str, sample: int) -> str:
    """The judge's answer to sample `sample` of a request: a verdict, in ADK's format, on every rubric listed."""
    turn = LAMP if LAMP in prompt else HEATING
    blocks = [
        f"ID: {rubric_id}\nProperty: {text}\nEvidence: seen\nRationale: {rubric_id} on {turn}\n"
        f"Verdict: {VERDICTS[turn, rubric_id][sample]}"
        for rubric_id, text in _LISTED.findall(prompt)
        if (turn, rubric_id) in VERDICTS
    ]
    return "\n\n".join(blocks)


# ------------------------------------------------------------------------------------------- ADK's side
class RecordingLlm(BaseLlm):
    """ADK's model seam: records each request's text and answers it by `answer` (the n-th same text: sample n)."""

    prompts: list[str] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        del stream
        prompt = "".join(part.text or "" for content in llm_request.contents for part in content.parts or [])
        sample = self.prompts.count(prompt)
        self.prompts.append(prompt)
        text = answer(prompt, sample)
        yield LlmResponse(content=genai_types.Content(role="model", parts=[genai_types.Part(text=text)]))


def recording(evaluator: type[RubricBasedEvaluator], llm: RecordingLlm) -> Callable[..., AdkEvaluator]:
    """ADK's evaluator class, unchanged but for its model: `llm`."""

    class Recording(evaluator):  # type: ignore[valid-type,misc]  # a class chosen at run time
        def _setup_auto_rater(self) -> BaseLlm:
            return llm

    return Recording


@dataclass(frozen=True)
class AdkRun:
    """What ADK's evaluation service gave for the case, and the requests its evaluator sent."""

    result: EvalCaseResult
    prompts: list[str]


def adk_run(
    metric_name: str,
    evaluator: type[RubricBasedEvaluator],
    criterion: dict[str, Any],
    expected: list[dict[str, Any]] = EXPECTED,
) -> AdkRun:
    """The case evaluated by ADK's own `LocalEvalService` (as `adk eval` does after inference)."""
    llm = RecordingLlm(model="recording-judge")
    registry = MetricEvaluatorRegistry()
    info = next(m for m in registry.get_registered_metrics() if m.metric_name == metric_name)
    registry.register_evaluator(info, recording(evaluator, llm))
    sets = InMemoryEvalSetsManager()
    sets.create_eval_set(APP, EVAL_SET)
    conversation = [AdkInvocation.model_validate(turn) for turn in expected]
    sets.add_eval_case(APP, EVAL_SET, AdkEvalCase(eval_id=CASE, conversation=conversation, rubrics=CASE_RUBRICS))
    service = LocalEvalService(BaseAgent(name="home"), sets, metric_evaluator_registry=registry)
    inference = InferenceResult(
        app_name=APP,
        eval_set_id=EVAL_SET,
        eval_case_id=CASE,
        inferences=[AdkInvocation.model_validate(turn) for turn in ACTUAL],
        session_id=None,
        status=InferenceStatus.SUCCESS,
    )
    metric = AdkEvalMetric(metric_name=metric_name, threshold=0.5, criterion=AdkCriterion.model_validate(criterion))
    request = EvaluateRequest(inference_results=[inference], evaluate_config=EvaluateConfig(eval_metrics=[metric]))

    async def evaluate() -> list[EvalCaseResult]:
        return [result async for result in service.evaluate(request)]

    (result,) = asyncio.run(evaluate())
    return AdkRun(result, llm.prompts)


# -------------------------------------------------------------------------------------------- our side
def our_run(
    metric_name: str, criterion: dict[str, Any], expected: list[dict[str, Any]] = EXPECTED
) -> tuple[MetricResult, list[JudgeRequest]]:
    """The case scored by our metric in judge_mode "adk-exact", through `score_case_run`, by a scripted judge."""
    config = EvalConfig.model_validate({"criteria": {metric_name: {**criterion, "judge_mode": "adk-exact"}}})
    ((eval_metric, spec),) = REGISTRY.resolve(config)
    case = EvalCase.model_validate(
        {"eval_id": CASE, "conversation": expected, "rubrics": CASE_RUBRICS, "conversation_scenario": None}
    )
    run = AgentRun(eval_set_id=EVAL_SET, eval_id=CASE, invocations=[Invocation.model_validate(t) for t in ACTUAL])
    judge = ScriptedJudge(lambda request: answer(request.prompt, request.sample_index))
    with installed(judge):
        result = asyncio.run(score_case_run(spec, eval_metric, case, run))
    return result, judge.requests


# ------------------------------------------------------------------------------------------------ the test
CASES = [
    pytest.param(
        FRQ,
        RubricBasedFinalResponseQualityV1Evaluator,
        # turn 1: the criterion's, then the case's of the metric's type; turn 2: then its invocation's
        [["concise", "case_polite"], ["concise", "case_polite", "turn_names_heating"]],
        # turn 1: concise yes, case_polite yes (2 of 3); turn 2: concise no (1 of 3), polite yes, names yes
        ([1.0, 2 / 3], 0.8),
        id=FRQ,
    ),
    pytest.param(
        TOOL_USE,
        RubricBasedToolUseV1Evaluator,
        [["uses_set_device", "case_one_call"], ["uses_set_device", "case_one_call", "turn_reads_heating"]],
        # turn 1: both yes; turn 2: uses_set_device no, case_one_call yes, turn_reads_heating yes (2 of 3)
        ([1.0, 2 / 3], 0.8),
        id=TOOL_USE,
    ),
]


@pytest.mark.parametrize(("metric_name", "evaluator", "rubric_ids", "scores"), CASES)
def test_case_and_invocation_rubrics_join_the_criterions_as_in_adks_local_eval_service(
    metric_name: str,
    evaluator: type[RubricBasedEvaluator],
    rubric_ids: list[list[str]],
    scores: tuple[list[float], float],
) -> None:
    criterion = {
        "threshold": 0.5,
        "judge_model_options": {"num_samples": SAMPLES},
        "rubrics": CRITERION_RUBRICS[metric_name],
    }
    theirs = adk_run(metric_name, evaluator, criterion)
    ours, requests = our_run(metric_name, criterion)

    # (a) the same request texts, in the same order: each turn's, SAMPLES times
    sent_by_us = [request.prompt for request in requests]
    assert len(theirs.prompts) == 2 * SAMPLES
    assert sent_by_us == theirs.prompts
    assert all(request.system == "" and request.response_schema is None for request in requests)
    assert [listed_rubrics(theirs.prompts[0]), listed_rubrics(theirs.prompts[SAMPLES])] == rubric_ids
    assert "case_untyped" not in "".join(theirs.prompts)  # untyped case rubrics: filtered out by ADK's evaluator

    # (b) the same scores: per turn, overall and per rubric
    assert ours.error is None, ours.error
    (adk_metric,) = theirs.result.overall_eval_metric_results
    adk_turns = [turn.eval_metric_results[0] for turn in theirs.result.eval_metric_result_per_invocation]
    assert [turn.score for turn in ours.per_invocation] == [turn.score for turn in adk_turns]
    assert [turn.score for turn in adk_turns] == pytest.approx(scores[0])
    assert ours.score == adk_metric.score == pytest.approx(scores[1])
    assert ours.status.name == adk_metric.eval_status.name == "PASSED"
    assert [[(s.rubric_id, s.score) for s in turn.rubric_scores or []] for turn in ours.per_invocation] == [
        [(s.rubric_id, s.score) for s in (turn.details.rubric_scores if turn.details else None) or []]
        for turn in adk_turns
    ]
    adk_overall = (adk_metric.details.rubric_scores if adk_metric.details else None) or []
    assert [(s["rubric_id"], s["score"]) for s in ours.details["overall_rubric_scores"]] == [
        (s.rubric_id, s.score) for s in adk_overall
    ]
    assert ours.details["judge_mode"] == "adk-exact"
    assert Counter(request.sample_index for request in requests) == {0: 2, 1: 2, 2: 2}


def test_a_rubric_id_on_both_the_case_and_an_expected_invocation_is_rejected_as_adk_does() -> None:
    # ADK's `_add_rubrics_to_invocation` refuses an id already on the invocation, even for the same rubric.
    criterion = {"threshold": 0.5, "judge_model_options": {"num_samples": 1}, "rubrics": CRITERION_RUBRICS[FRQ]}
    expected = [EXPECTED[0], {**EXPECTED[1], "rubrics": [*TURN_RUBRICS, CASE_RUBRICS[0]]}]
    with pytest.raises(ValueError, match=r"^Rubric with rubric_id 'case_polite' already exists\.$"):
        adk_run(FRQ, RubricBasedFinalResponseQualityV1Evaluator, criterion, expected)
    ours, requests = our_run(FRQ, criterion, expected)
    assert (ours.score, ours.status.name, requests) == (None, "NOT_EVALUATED", [])
    assert ours.error == (
        "ValueError: rubric_id 'case_polite' of expected invocation 2 is already on that invocation (a case rubric "
        "or another of its rubrics); google-adk rejects the case: Rubric with rubric_id 'case_polite' already exists."
    )
