"""ADK-exact judging: the installed google-adk's own evaluators write the judge's requests, parse and vote.

Used by ADK's judged metric names in judge_mode "adk-exact" (see `judged.mode`). The metric's evaluator class of
google-adk (`FinalResponseMatchV2Evaluator`, `RubricBasedFinalResponseQualityV1Evaluator`,
`RubricBasedToolUseV1Evaluator`, `HallucinationsV1Evaluator`, `PerTurnUserSimulatorQualityV1`) runs its own
`evaluate_invocations` over ADK copies of the invocations. Only its model is ours: `ClientLlm`, an ADK `BaseLlm`
that sends each request's text through our judge client as a free-text request (no system instruction, no
response schema, the criterion's `judge_model_config`) and gives the answer back as ADK's `LlmResponse`. So the
prompt text, the parsing, the vote and the aggregation are ADK's code at run time, never a copy; the HTTP call,
cache, retries and the shared concurrency cap are our client's. ADK's rules, as google-adk 2.13 has them:
- `final_response_match_v2`, the rubric metrics: `num_samples` samples per turn, majority vote (a tie is
  negative), an unparseable sample is left out of the vote, and a sample whose call failed (a 400, a 429 after
  the retries) makes the whole turn NOT_EVALUATED.
- `hallucinations_v1`: one segmenter call (ADK's model-based sentence segmenter prompt) and one validator call
  per checked text, no vote (`num_samples` is ignored); a failed call leaves that text unscored.
- `per_turn_user_simulator_quality_v1`: `num_samples` samples per later turn and for the stop, one after the
  other; a failed call fails the whole metric (ADK raises), which is recorded as the metric's error.
An empty judge answer is an unparseable sample (as ADK's Gemini model yields an empty response), not a failure.
Statuses are recomputed with `status_for` (ADK's rule, and INFORMATIONAL without a threshold). `details` hold
`judge_mode: "adk-exact"` and every judge call's answer or error per turn; the explanations come from them.

The rubrics an evaluator finds on each actual invocation are those ADK's `LocalEvalService` puts there before any
metric runs (`_evaluate_single_inference_result`): the invocation's own, then the case's `rubrics`
(`_copy_eval_case_rubrics_to_actual_invocations`, done for every metric by `scoring.score_case_run`), then the
`rubrics` of the expected invocation at the same position (`_copy_invocation_rubrics_to_actual_invocations`,
done here by `with_expected_rubrics`): appended in that order, unfiltered, an id met twice an error. ADK's rubric
evaluators then ask about the criterion's rubrics followed by those of the metric's `type`
(`RubricBasedEvaluator.create_effective_rubrics_list`, ADK's code at run time).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.evaluator import EvaluationResult as AdkEvaluationResult
from google.adk.evaluation.evaluator import Evaluator as AdkEvaluator
from pydantic import BaseModel

from agent_eval.metrics.common import overall_result, status_for
from agent_eval.metrics.judged import adk_evaluators as evaluators
from agent_eval.metrics.judged.adk_explain import explained_turns
from agent_eval.metrics.judged.adk_llm import ClientLlm
from agent_eval.metrics.judged.base import JudgeModelOptions
from agent_eval.metrics.judged.mode import ADK_EXACT, AdkJudgedOptions
from agent_eval.metrics.judged.voting import mean_or_none
from agent_eval.schema import (
    ConversationScenario,
    EvalMetric,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    RubricScore,
)

__all__ = ["ADK_EXACT_METRICS", "adk_exact_result", "adk_invocation", "adk_metric", "with_expected_rubrics"]

ADK_EXACT_METRICS = frozenset(evaluators.EVALUATORS)
"""The metric names with an ADK-exact mode."""


# --------------------------------------------------------------------------------------- our data ⇄ ADK's
def adk_metric(metric_name: str, options: BaseModel, threshold: float | None) -> AdkEvalMetric:
    """ADK's `EvalMetric` for a criterion: its options (but `judge_mode`) and threshold (0 when there is none:
    ADK needs one; statuses are recomputed with the real one)."""
    criterion = options.model_dump(exclude={"judge_mode"}, exclude_none=True)
    criterion["threshold"] = 0.0 if threshold is None else threshold
    return AdkEvalMetric(metric_name=metric_name, threshold=threshold, criterion=AdkCriterion.model_validate(criterion))


def adk_invocation(invocation: Invocation, where: str) -> AdkInvocation:
    """ADK's copy of an invocation.

    Raises:
        ValueError: ADK's model rejects it (e.g. `app_details` of another shape), naming `where`.
    """
    try:
        return AdkInvocation.model_validate(invocation.model_dump(exclude_none=True))
    except ValueError as error:
        first = str(error).splitlines()[:3]
        raise ValueError(f"{where} cannot be read as google-adk's Invocation: {' '.join(first)}") from None


def _adk_invocations(invocations: Sequence[Invocation] | None, kind: str) -> list[AdkInvocation] | None:
    if invocations is None:
        return None
    return [adk_invocation(invocation, f"{kind} invocation {i}") for i, invocation in enumerate(invocations, 1)]


def with_expected_rubrics(actual: list[AdkInvocation], expected: Sequence[AdkInvocation] | None) -> list[AdkInvocation]:
    """`actual` (ADK's copies, changed in place) with each expected invocation's rubrics appended to the actual
    invocation at the same position: ADK's `LocalEvalService._evaluate_single_inference_result` step 2,
    `_copy_invocation_rubrics_to_actual_invocations` with `_add_rubrics_to_invocation`.

    As in ADK: invocations are paired by position (`zip`, the shorter list decides), every rubric is appended
    whatever its `type` (the rubric evaluators filter by type later), after the rubrics already there (the
    actual invocation's own, then the case's), and a rubric whose id is already there is an error, even when
    it is the same rubric. No expected invocations (a conversation scenario): nothing is added.

    Raises:
        ValueError: an expected invocation has a rubric whose id the actual invocation already has.
    """
    for position, (mine, reference) in enumerate(zip(actual, expected or [], strict=False), 1):
        if not reference.rubrics:
            continue
        rubrics = list(mine.rubrics or [])
        ids = {rubric.rubric_id for rubric in rubrics}
        for rubric in reference.rubrics:
            if rubric.rubric_id in ids:
                raise ValueError(
                    f"rubric_id {rubric.rubric_id!r} of expected invocation {position} is already on that "
                    "invocation (a case rubric or another of its rubrics); google-adk rejects the case: "
                    f"Rubric with rubric_id '{rubric.rubric_id}' already exists."
                )
            rubrics.append(rubric)
            ids.add(rubric.rubric_id)
        mine.rubrics = rubrics
    return actual


def _our_rubric_scores(scores: Sequence[BaseModel] | None) -> list[RubricScore] | None:
    return [RubricScore.model_validate(score.model_dump()) for score in scores] if scores else None


# ------------------------------------------------------------------------------------------------- running
@dataclass(frozen=True)
class _Run:
    """One ADK evaluator run over one case run: our invocations, ADK's copies, the evaluator and its model."""

    actual: list[Invocation]
    expected: list[Invocation] | None
    adk_actual: list[AdkInvocation]
    adk_expected: list[AdkInvocation] | None
    evaluator: AdkEvaluator
    llm: ClientLlm
    judge_options: JudgeModelOptions
    threshold: float | None


async def adk_exact_result(
    eval_metric: EvalMetric,
    options: AdkJudgedOptions,
    actual: list[Invocation],
    expected: list[Invocation] | None,
    scenario: ConversationScenario | None,
) -> EvaluationResult:
    """The metric scored by google-adk's own evaluator over our judge client (see the module docstring).

    The actual invocations carry the case's rubrics already (`scoring.score_case_run`); the expected ones'
    are added here (`with_expected_rubrics`), so that the evaluator gets what ADK's `LocalEvalService` gives it.

    Raises:
        ValueError: ADK's evaluator rejects the case (e.g. no rubric for an invocation), an expected
            invocation's rubric id is already on its actual invocation, or an invocation is not readable by
            ADK's model.
        JudgeSampleFailed: `per_turn_user_simulator_quality_v1`'s judge call failed (ADK's rule).
    """
    name, threshold = eval_metric.metric_name, eval_metric.effective_threshold
    llm = ClientLlm.for_options(options.judge_model_options)
    adk_expected = _adk_invocations(expected, "expected")
    run = _Run(
        actual,
        expected,
        with_expected_rubrics(_adk_invocations(actual, "actual") or [], adk_expected),
        adk_expected,
        evaluators.EVALUATORS[name](adk_metric(name, options, threshold), llm),
        llm,
        options.judge_model_options,
        threshold,
    )
    adk_scenario = evaluators.adk_scenario(scenario)
    outcome = run.evaluator.evaluate_invocations(run.adk_actual, run.adk_expected, adk_scenario)
    return _our_result(await outcome if inspect.isawaitable(outcome) else outcome, run)


def _our_result(outcome: AdkEvaluationResult, run: _Run) -> EvaluationResult:
    """ADK's result in our model: our invocations, statuses by `status_for`, explanations and details."""
    adk_results = list(outcome.per_invocation_results)
    references: list[AdkInvocation | None] = [*run.adk_expected] if run.adk_expected else [None] * len(run.adk_actual)
    turns = explained_turns(
        run.evaluator, run.llm.calls, list(zip(run.adk_actual, references, adk_results, strict=True)), run.judge_options
    )
    expected: list[Invocation | None] = [*run.expected] if run.expected else [None] * len(run.actual)
    results = [
        PerInvocationResult(
            actual_invocation=mine,
            expected_invocation=reference,
            score=theirs.score,
            eval_status=status_for(theirs.score, run.threshold),
            rubric_scores=_our_rubric_scores(theirs.rubric_scores),
            explanation=turn.explanation,
        )
        for mine, reference, theirs, turn in zip(run.actual, expected, adk_results, turns, strict=True)
    ]
    explanation = overall_result(results, run.threshold).explanation
    if outcome.overall_score is None:
        explanation = "; ".join(r.explanation for r in results if r.explanation) or "no invocation to judge"
    return EvaluationResult(
        overall_score=outcome.overall_score,
        overall_eval_status=status_for(outcome.overall_score, run.threshold),
        per_invocation_results=results,
        overall_rubric_scores=_our_rubric_scores(outcome.overall_rubric_scores),
        explanation=explanation,
        details=_details(run, [turn.details for turn in turns]),
    )


def _details(run: _Run, turns: list[dict[str, Any]]) -> dict[str, Any]:
    """The mode, the judge, how many calls failed, and every turn's judge calls."""
    calls = run.llm.calls
    return {
        "judge_mode": ADK_EXACT,
        "judge_model": run.judge_options.judge_model,
        "num_samples": evaluators.samples_per_question(run.evaluator, run.judge_options),
        "judge_calls": len(calls),
        "failed_calls": sum(call.error is not None for call in calls),
        "agreement": mean_or_none([turn.get("agreement") for turn in turns]),
        "unusable_samples": sum(turn.get("unusable_samples", 0) for turn in turns),
        "invocations": turns,
    }
