"""Explanations and details of ADK-exact results, from the judge calls made and what ADK parsed from them.

ADK's results carry scores only; these say why, per turn: the voted label and how many samples agree (or the
judge error that left the turn unscored, ADK's rule), each rubric's verdict and rationale, the sentences
`hallucinations_v1` flagged. `details` of a turn: `samples` (every call's answer or error, and ADK's score of
it), `agreement` (the share of parsed samples that agree with the outcome), `unusable_samples` (failed or
unparseable calls).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.evaluator import Evaluator as AdkEvaluator
from google.adk.evaluation.evaluator import PerInvocationResult as AdkTurnResult
from google.adk.evaluation.llm_as_judge import LlmAsJudge
from google.adk.evaluation.rubric_based_evaluator import RubricBasedEvaluator

from agent_eval.metrics.judged.adk_evaluators import CheckedText, Hallucinations, UserSimulatorQuality
from agent_eval.metrics.judged.adk_llm import JudgeCall
from agent_eval.metrics.judged.base import JudgeModelOptions
from agent_eval.metrics.judged.voting import mean_or_none

__all__ = ["ExplainedTurn", "explained_turns"]

_NEGATIVE_LABELS = frozenset({"unsupported", "contradictory", "disputed"})
_STOP_PROXY_ID = "stop_signal_proxy_invocation"  # ADK's invocation id of the stop check's result


@dataclass(frozen=True)
class ExplainedTurn:
    """A turn's explanation and details."""

    explanation: str | None
    details: dict[str, Any] = field(default_factory=dict)


def explained_turns(
    evaluator: AdkEvaluator,
    calls: Sequence[JudgeCall],
    turns: Sequence[tuple[AdkInvocation, AdkInvocation | None, AdkTurnResult]],
    options: JudgeModelOptions,
) -> list[ExplainedTurn]:
    """One `ExplainedTurn` per turn (actual and expected invocation, ADK's result), for any ADK-exact evaluator."""
    results = [result for _, _, result in turns]
    if isinstance(evaluator, Hallucinations):
        return [_hallucination_turn(texts) for texts in evaluator.turns]
    if isinstance(evaluator, UserSimulatorQuality):
        return _user_simulator_turns(calls, results, options.num_samples)
    assert isinstance(evaluator, LlmAsJudge)
    prompts = [evaluator.format_auto_rater_prompt(actual, expected) for actual, expected, _ in turns]
    by_turn = [[call for call in calls if call.prompt == prompt] for prompt in prompts]
    if isinstance(evaluator, RubricBasedEvaluator):
        return [_rubric_turn(result, turn_calls) for result, turn_calls in zip(results, by_turn, strict=True)]
    return [_binary_turn(result.score, turn_calls) for result, turn_calls in zip(results, by_turn, strict=True)]


# ------------------------------------------------------------------------------------------ failed turns
def _failure(calls: Sequence[JudgeCall]) -> str | None:
    failed = [call for call in calls if call.error is not None]
    if not failed:
        return None
    return (
        f"not evaluated: {len(failed)} of {len(calls)} judge sample(s) failed, and ADK leaves a turn with a "
        f"failed sample unscored ({failed[0].error})"
    )


def _samples(calls: Sequence[JudgeCall], agreement: float | None, usable: int) -> dict[str, Any]:
    return {
        "samples": [call.as_dict() for call in calls],
        "agreement": agreement,
        "unusable_samples": len(calls) - usable,
    }


# ----------------------------------------------------------------------------------------- binary labels
def _binary_turn(score: float | None, calls: Sequence[JudgeCall]) -> ExplainedTurn:
    """valid / invalid by majority of the parsed samples (final_response_match_v2, the user simulator)."""
    usable = [call for call in calls if call.parsed and call.score is not None]
    if score is None:
        reason = _failure(calls) or f"not evaluated: none of the {len(calls)} judge answer(s) has a label ADK reads"
        return ExplainedTurn(reason, _samples(calls, None, len(usable)))
    agree = sum(call.score == score for call in usable)
    agreement = agree / len(usable) if usable else None
    text = f"{'valid' if score == 1.0 else 'invalid'} ({agree} of {len(usable)} parsed sample(s) agree"
    if len(usable) < len(calls):
        text += f"; {len(calls) - len(usable)} without a label ADK reads, left out"
    return ExplainedTurn(text + ")", _samples(calls, agreement, len(usable)))


def _user_simulator_turns(
    calls: Sequence[JudgeCall], results: Sequence[AdkTurnResult], samples: int
) -> list[ExplainedTurn]:
    """Turn 1 needs no judge; each later turn, then the stop check, asked `samples` times in sequence."""
    chunks = [list(calls[i : i + samples]) for i in range(0, len(calls), samples)]
    turns = [_first_turn(results[0].score)] if results else []
    turns += [_binary_turn(result.score, chunk) for result, chunk in zip(results[1:], chunks, strict=False)]
    if results and chunks and results[-1].actual_invocation.invocation_id == _STOP_PROXY_ID:
        stop = _binary_turn(results[-1].score, chunks[-1])
        explanation = f"ending the conversation after this turn was judged wrong: {stop.explanation}"
        turns[-1] = ExplainedTurn(explanation, {**turns[-1].details, "stop_check": stop.details})
    return turns


def _first_turn(score: float | None) -> ExplainedTurn:
    if score is None:
        return ExplainedTurn("not evaluated: the first turn has no user text", {"check": "starting_prompt"})
    verdict = "is" if score else "is not"
    return ExplainedTurn(
        f"the first user message {verdict} the scenario's starting_prompt",
        {"check": "starting_prompt", "agreement": None, "unusable_samples": 0},
    )


# ------------------------------------------------------------------------------------------------ rubrics
def _rubric_turn(result: AdkTurnResult, calls: Sequence[JudgeCall]) -> ExplainedTurn:
    """Each rubric's voted verdict and rationale; agreement averaged over the rubrics."""
    usable = [call for call in calls if call.parsed and call.rubric_scores]
    if result.score is None and (failure := _failure(calls)):
        return ExplainedTurn(failure, _samples(calls, None, len(usable)))
    scores = result.rubric_scores or []
    if not scores:
        reason = f"not evaluated: none of the {len(calls)} judge answer(s) has rubric verdicts ADK reads"
        return ExplainedTurn(reason, _samples(calls, None, len(usable)))
    shares = []
    for rubric in scores:
        votes = [c.rubric_scores.get(rubric.rubric_id) for c in usable]
        voted = [v for v in votes if v is not None]
        shares.append(sum(v == rubric.score for v in voted) / len(voted) if voted else None)
    verdicts: dict[float | None, str] = {1.0: "yes", 0.0: "no"}
    explanation = "; ".join(
        f"{r.rubric_id}: {verdicts.get(r.score, 'no verdict')}" + (f": {r.rationale}" if r.rationale else "")
        for r in scores
    )
    return ExplainedTurn(explanation, _samples(calls, mean_or_none(shares), len(usable)))


# ------------------------------------------------------------------------------------------ hallucinations
def _hallucination_turn(texts: Sequence[CheckedText]) -> ExplainedTurn:
    """The sentences ADK's validator labelled unsupported, contradictory or disputed, per checked text."""
    if not texts:
        return ExplainedTurn("not evaluated: no response text to check", {"texts": [], "unusable_samples": 0})
    notes = [_checked_text_note(text) for text in texts]
    details = {
        "texts": [
            {"text": t.text, "score": t.score, "message": t.message, "calls": [c.as_dict() for c in t.calls]}
            for t in texts
        ],
        "agreement": None,
        "unusable_samples": sum(text.score is None for text in texts),
    }
    return ExplainedTurn("; ".join(notes), details)


def _checked_text_note(text: CheckedText) -> str:
    if text.score is None:
        return f"not evaluated: {text.message}"
    try:
        labels = json.loads(text.message)
    except ValueError:
        return f"score {text.score:.2f}"
    flagged = [
        f"{item.get('label')} {item.get('sentence')!r}" + (f": {item['rationale']}" if item.get("rationale") else "")
        for item in labels
        if str(item.get("label", "")).strip().lower() in _NEGATIVE_LABELS
    ]
    return "; ".join(flagged) or f"all {len(labels)} sentence(s) supported or not applicable"
