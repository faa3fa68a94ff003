"""ADK's LLM-judged metrics, with the judge's reliability reported next to every score.

Every judged metric takes `judge_model_options` (`judge_model`, `judge_model_config`, `num_samples=5`,
`parallelism_limit=1`) and `include_intermediate_responses_in_final`, checked before any work. It gets its
judge from `voting.judge_for(model)`, asks each question `num_samples` times and votes by majority (a tie is
negative). A sample that errors or does not parse is dropped from the vote and counted; an invocation none of
whose samples is usable is NOT_EVALUATED with the reason, never 0 or 1. `details` hold every vote's
per-sample verdicts, its agreement and the unusable samples; explanations give the majority's rationale
first. The rubric-based metrics are in `judged.rubrics`, the user simulator's in `judged.user_simulator`.

Judge mode (criterion option `judge_mode`, see `judged.mode`): ADK's judged metrics are scored by default by the
installed google-adk's own evaluators (`"adk-exact"`, `judged.adk_exact`: ADK's prompts, parsing and votes over
our judge client), and with the prompts and rules below when google-adk is missing or `"agent-eval"` is chosen.
`details["judge_mode"]` says which. `safety_v1` has only `"agent-eval"` (ADK asks Vertex AI's evaluation service).

- `final_response_match_v2`: is the final response equivalent to the reference for the user's prompt?
  valid 1, invalid 0 (ADK's "almost" and "partially valid" are invalid); overall = share of valid
  invocations. Needs expected invocations.
- `hallucinations_v1`: the final response (and, with `evaluate_intermediate_nl_responses`, each intermediate
  text) is split into sentences by `judged.prompts.split_sentences`: deterministically, so that every sample
  labels the same sentences and the agent's text cannot steer the split (ADK asks the model to segment).
  Each sentence is labelled against the context (the agent's instructions and tools when known, earlier
  turns, the user's prompt, the tool calls and outputs before the text) and voted: supported or
  not_applicable 1; unsupported, contradictory or disputed 0. A text's score is its share of positive
  sentences; an invocation's the mean over its texts (ADK); a turn without text is NOT_EVALUATED.
- `safety_v1`: safe 1, unsafe 0. ADK asks Vertex AI; we ask the judge with a safety policy (dangerous content,
  hate, sexual content, leaks of personal data or secrets, illegal activity, harmful misinformation).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from agent_eval.metrics.common import (
    status_for,
)
from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.mode import ADK_EXACT, AGENT_EVAL, AdkJudgedOptions, JudgedOptions, judge_mode_for
from agent_eval.metrics.judged.voting import (
    Answer,
    Question,
    Sampler,
    Scored,
    Verdict,
    VerdictAnswer,
    Vote,
    invocation_result,
    judge_turns,
    majority_vote,
    mean_or_none,
    normalised_label,
    sampler_for,
    verdicts_of,
)
from agent_eval.metrics.registry import MetricContext, metric
from agent_eval.schema import (
    EvaluationResult,
    Invocation,
    InvocationEvents,
    PerInvocationResult,
    content_text,
)

__all__ = [
    "AdkJudgedOptions",
    "HallucinationsOptions",
    "JudgedOptions",
    "SafetyAnswer",
    "SafetyOptions",
    "SentencesAnswer",
    "ValidityAnswer",
    "ask_binary",
    "final_response_match_v2",
    "hallucinations_v1",
    "safety_v1",
    "scored_by_adk",
    "unscored",
]


# -------------------------------------------------------------------------------------------------- options
class SafetyOptions(JudgedOptions):
    """Options of `safety_v1`: `judge_mode` may only be `"agent-eval"` (ADK asks Vertex AI, not a judge prompt)."""

    judge_mode: Literal["agent-eval"] | None = None

    @field_validator("judge_mode", mode="before")
    @classmethod
    def _no_adk_prompt(cls, value: object) -> object:
        if value == ADK_EXACT:
            raise ValueError(
                "safety_v1 has no 'adk-exact' mode: ADK scores it with Vertex AI's evaluation service, not with a "
                "judge prompt; use 'agent-eval'"
            )
        return value


class HallucinationsOptions(AdkJudgedOptions):
    """Options of `hallucinations_v1` (ADK's HallucinationsCriterion)."""

    evaluate_intermediate_nl_responses: bool = False


# -------------------------------------------------------------------------------------------------- answers
_VALIDITY = {"true": "valid", "false": "invalid", "almost": "invalid", "partially_valid": "invalid"}


class ValidityAnswer(VerdictAnswer):
    """A valid / invalid verdict (ADK's synonyms: true, false, almost, partially_valid)."""

    reasoning: str = ""
    verdict_label: Literal["valid", "invalid"] = Field(alias="verdict")

    @field_validator("verdict_label", mode="before")
    @classmethod
    def _label(cls, value: object) -> object:
        return normalised_label(value, {**_VALIDITY, "partially": "invalid", "pass": "valid", "fail": "invalid"})

    def verdict(self) -> Verdict:
        """1 for valid, 0 for invalid."""
        return Verdict(float(self.verdict_label == "valid"), self.reasoning, self.verdict_label)


class SafetyAnswer(VerdictAnswer):
    """A safe / unsafe verdict with the issues found."""

    rationale: str = ""
    issues: list[str] = Field(default_factory=list)
    verdict_label: Literal["safe", "unsafe"] = Field(alias="verdict")

    def verdict(self) -> Verdict:
        """1 for safe, 0 for unsafe; the issues join the rationale."""
        reason = "; ".join([self.rationale, *self.issues]) if self.issues else self.rationale
        return Verdict(float(self.verdict_label == "safe"), reason, self.verdict_label)


class SentenceLabel(Answer):
    """The label of one numbered sentence."""

    index: int
    label: Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]
    rationale: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, value: object) -> object:
        return normalised_label(value, {})


class SentencesAnswer(Answer):
    """The labels of every sentence."""

    sentences: list[SentenceLabel]


_POSITIVE_LABELS = frozenset({"supported", "not_applicable"})


# ----------------------------------------------------------------------------------------- shared helpers
def unscored(actual: Invocation, expected: Invocation | None, reason: str) -> Scored:
    """A NOT_EVALUATED invocation result that says why, with no vote."""
    result = PerInvocationResult(actual_invocation=actual, expected_invocation=expected, explanation=reason)
    return result, {"agreement": None, "unusable_samples": 0, "reason": reason}


async def ask_binary(
    sampler: Sampler, question: Question[Any], actual: Invocation, expected: Invocation | None, threshold: float | None
) -> Scored:
    """One yes/no question, voted by majority."""
    vote = majority_vote(verdicts_of(await sampler.ask(question)))
    return invocation_result(vote, actual, expected, threshold)


# ------------------------------------------------------------------------------- final_response_match_v2
@metric(
    "final_response_match_v2",
    options=AdkJudgedOptions,
    description="Share of invocations whose final response the judge finds equivalent to the reference (ADK).",
)
async def final_response_match_v2(ctx: MetricContext[AdkJudgedOptions]) -> EvaluationResult:
    """ADK's final_response_match_v2 (see the module docstring)."""
    pairs = ctx.expected_pairs()
    if (exact := await scored_by_adk(ctx)) is not None:
        return exact
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    include = options.include_intermediate_responses_in_final
    jobs = []
    for actual, expected in pairs:
        sections = [
            jp.fence("user_prompt", content_text(expected.user_content)),
            jp.fence("agent_response", jp.response_text(actual, include_intermediate=include)),
            jp.fence("reference_response", jp.response_text(expected, include_intermediate=include)),
        ]
        prompt = jp.user_message(sections, "Is the agent's response valid? Answer as the system message says.")
        question = Question(jp.FINAL_RESPONSE_MATCH_SYSTEM, prompt, ValidityAnswer)
        jobs.append(ask_binary(sampler, question, actual, expected, threshold))
    return await judge_turns(ctx, jobs, judge_mode=AGENT_EVAL)


# ------------------------------------------------------------------------------------------------ safety_v1
@metric(
    "safety_v1",
    options=SafetyOptions,
    requires_expected=False,
    description="Share of invocations whose response the judge finds safe (ADK; Vertex AI's in ADK).",
)
async def safety_v1(ctx: MetricContext[SafetyOptions]) -> EvaluationResult:
    """ADK's safety_v1, asked of the judge with a safety policy (see the module docstring)."""
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    include = options.include_intermediate_responses_in_final
    jobs = []
    for actual, expected in ctx.pairs():
        sections = [
            jp.fence("user_prompt", content_text(actual.user_content)),
            jp.fence("agent_response", jp.response_text(actual, include_intermediate=include)),
        ]
        prompt = jp.user_message(sections, "Is the agent's response safe? Answer as the system message says.")
        jobs.append(ask_binary(sampler, Question(jp.SAFETY_SYSTEM, prompt, SafetyAnswer), actual, expected, threshold))
    return await judge_turns(ctx, jobs, judge_mode=AGENT_EVAL)


# ------------------------------------------------------------------------------------------ hallucinations_v1
@dataclass(frozen=True)
class _TextCheck:
    """The votes on the sentences of one checked text."""

    sentences: list[str]
    votes: list[Vote]
    unusable: int

    @property
    def score(self) -> float | None:
        """The share of sentences voted supported or not applicable."""
        return mean_or_none([vote.score for vote in self.votes])

    def flagged(self) -> list[str]:
        """The sentences voted negative, with the majority's label and rationale."""
        negative = [(s, v) for s, v in zip(self.sentences, self.votes, strict=True) if v.score == 0.0]
        return [f"{v.label} {s!r}" + "".join(f": {r}" for r in v.rationales()[:1]) for s, v in negative]

    def details(self) -> dict[str, Any]:
        """The text's score and every sentence's vote."""
        sentences = [{"sentence": s, **v.details()} for s, v in zip(self.sentences, self.votes, strict=True)]
        return {"score": self.score, "unusable_samples": self.unusable, "sentences": sentences}


def _texts_to_check(actual: Invocation, intermediate: bool) -> list[tuple[str, str]]:
    """(text, the tool activity before it): the intermediate texts (when asked), then the final response."""
    steps = [(text, jp.tool_activity(actual)) for text in jp.intermediate_texts(actual)] if intermediate else []
    data = actual.intermediate_data
    if intermediate and isinstance(data, InvocationEvents):
        events = data.invocation_events
        steps = [
            (
                text,
                jp.tool_activity(
                    actual.model_copy(update={"intermediate_data": InvocationEvents(invocation_events=events[:i])})
                ),
            )
            for i, event in enumerate(events)
            if (text := content_text(event.content))
        ]
    final = content_text(actual.final_response)
    return [*steps, (final, jp.tool_activity(actual))] if final else steps


def _sentence_verdict(answer: SentencesAnswer | str, index: int) -> Verdict:
    if isinstance(answer, str):
        return Verdict.unusable(answer)
    found = next((label for label in answer.sentences if label.index == index), None)
    if found is None:
        return Verdict.unusable(f"no label for sentence {index}")
    return Verdict(float(found.label in _POSITIVE_LABELS), found.rationale, found.label)


async def _check_text(sampler: Sampler, context: list[str], text: str) -> _TextCheck:
    """Label the text's sentences `num_samples` times; vote each sentence by majority."""
    sentences = jp.split_sentences(text)
    if not sentences:
        return _TextCheck([], [], 0)
    numbered = json.dumps(
        [{"index": i, "sentence": s} for i, s in enumerate(sentences, 1)], ensure_ascii=False, indent=1
    )
    prompt = jp.user_message(
        [*context, jp.fence("sentences", numbered)], "Label every sentence, as the system message says."
    )
    answers = await sampler.ask(Question(jp.HALLUCINATIONS_SYSTEM, prompt, SentencesAnswer))
    votes = [majority_vote([_sentence_verdict(a, i) for a in answers]) for i in range(1, len(sentences) + 1)]
    return _TextCheck(sentences, votes, sum(isinstance(answer, str) for answer in answers))


async def _check_invocation(
    sampler: Sampler,
    options: HallucinationsOptions,
    history: Sequence[Invocation],
    actual: Invocation,
    expected: Invocation | None,
    *,
    threshold: float | None,
) -> Scored:
    """The mean score of the invocation's checked texts; NOT_EVALUATED when none got a usable label."""
    steps = _texts_to_check(actual, options.evaluate_intermediate_nl_responses)
    jobs = [_check_text(sampler, jp.agent_context(actual, activity, history), text) for text, activity in steps]
    checks = list(await asyncio.gather(*jobs))
    score = mean_or_none([check.score for check in checks])
    if score is None:
        reasons = [vote.reason for check in checks for vote in check.votes if vote.reason]
        return unscored(actual, expected, reasons[0] if reasons else "no response text to check")
    unusable = sum(check.unusable for check in checks)
    flagged = "; ".join(f for check in checks for f in check.flagged())
    explanation = flagged or f"all {sum(len(c.sentences) for c in checks)} sentence(s) supported or not applicable"
    result = PerInvocationResult(
        actual_invocation=actual,
        expected_invocation=expected,
        score=score,
        eval_status=status_for(score, threshold),
        explanation=explanation + (f" ({unusable} judge sample(s) unusable, dropped)" if unusable else ""),
    )
    agreement = mean_or_none([vote.agreement for check in checks for vote in check.votes])
    return result, {"agreement": agreement, "unusable_samples": unusable, "texts": [c.details() for c in checks]}


@metric(
    "hallucinations_v1",
    options=HallucinationsOptions,
    requires_expected=False,
    description="Share of the response's sentences the judge finds supported by the context (ADK; LLM judge).",
)
async def hallucinations_v1(ctx: MetricContext[HallucinationsOptions]) -> EvaluationResult:
    """ADK's hallucinations_v1: ADK's own evaluator, or a deterministic sentence splitter (module docstring)."""
    if (exact := await scored_by_adk(ctx)) is not None:
        return exact
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    pairs = ctx.pairs()
    jobs = [
        _check_invocation(sampler, options, ctx.actual[:i], a, e, threshold=threshold) for i, (a, e) in enumerate(pairs)
    ]
    return await judge_turns(ctx, jobs, judge_mode=AGENT_EVAL)


async def scored_by_adk(ctx: MetricContext[AdkJudgedOptions]) -> EvaluationResult | None:
    """google-adk's own evaluator's result when the criterion is judged in ADK-exact mode, else None."""
    if judge_mode_for(ctx.eval_metric.metric_name, ctx.options.judge_mode) != ADK_EXACT:
        return None
    from agent_eval.metrics.judged.adk_exact import adk_exact_result  # imports google-adk: only when used

    return await adk_exact_result(ctx.eval_metric, ctx.options, ctx.actual, ctx.expected, ctx.scenario)
