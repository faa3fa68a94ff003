"""ADK's rubric-based judged metrics: `rubric_based_final_response_quality_v1`, `rubric_based_tool_use_quality_v1`.

Options: `rubrics` (ADK `Rubric`s, unique ids), `judge_model_options`, `include_intermediate_responses_in_final`,
`judge_mode` (default `"adk-exact"` when google-adk is installed: ADK's own evaluators score, see
`judged.adk_exact`; the rules below are `"agent-eval"`'s).

Rules:
- The rubrics of an invocation are the criterion's `rubrics` (always, whatever their `type`), plus the actual
  and expected invocation's rubrics whose `type` is the metric's: FINAL_RESPONSE_QUALITY or TOOL_USE_QUALITY.
  ADK copies the case's rubrics into every actual invocation before scoring (`with_case_rubrics` does it).
  Untyped case or invocation rubrics are ignored, as in ADK (only the criterion's rubrics need no type); their
  ids are listed in `details["ignored_rubrics"]`, and the explanation says so when nothing else applies. The
  same id on two different rubrics is an error.
- One judge question per invocation covers all its rubrics; each sample gives a yes/no verdict with a
  rationale per rubric, and each rubric is voted by majority over the samples (a tie is no). A sample that
  errors or does not parse is dropped and counted; a rubric no usable sample judged stays unscored.
- Invocation score = mean of its voted rubrics; `rubric_scores` hold each rubric's verdict and the majority's
  rationale. Overall score = mean of all voted rubric verdicts of all invocations (ADK);
  `overall_rubric_scores` = each rubric's mean over the invocations.
- The final-response judge sees the agent's instructions and tools (when known), the prompt, the tool
  activity and the final response; the tool-use judge sees the tools, the prompt and the tool activity.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, field_validator

from agent_eval.metrics.common import MetricNotApplicable, status_for
from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.adk import scored_by_adk, unscored
from agent_eval.metrics.judged.mode import AGENT_EVAL, AdkJudgedOptions
from agent_eval.metrics.judged.voting import (
    Answer,
    Question,
    Sampler,
    Scored,
    Verdict,
    Vote,
    gather_scored,
    invocation_result,
    judged_result,
    majority_vote,
    mean_or_none,
    normalised_label,
    sampler_for,
)
from agent_eval.metrics.registry import MetricContext, metric
from agent_eval.schema import (
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    Rubric,
    RubricScore,
)

__all__ = [
    "FINAL_RESPONSE_QUALITY",
    "TOOL_USE_QUALITY",
    "RubricAnswer",
    "RubricOptions",
    "effective_rubrics",
    "merge_rubrics",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "rubric_means",
    "rubric_votes_result",
    "with_case_rubrics",
]

FINAL_RESPONSE_QUALITY = "FINAL_RESPONSE_QUALITY"
TOOL_USE_QUALITY = "TOOL_USE_QUALITY"


class RubricOptions(AdkJudgedOptions):
    """Options of the rubric-based metrics (ADK's RubricsBasedCriterion)."""

    rubrics: list[Rubric] = Field(default_factory=list)

    @field_validator("rubrics")
    @classmethod
    def _unique_ids(cls, rubrics: list[Rubric]) -> list[Rubric]:
        ids = [rubric.rubric_id for rubric in rubrics]
        if duplicates := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"rubric_id {duplicates[0]!r} is given more than once; rubric ids must be unique")
        return rubrics


class RubricVerdict(Answer):
    """The verdict on one rubric."""

    rubric_id: str
    rationale: str = ""
    verdict: Literal["yes", "no"]

    @field_validator("rubric_id", mode="before")
    @classmethod
    def _bare_id(cls, value: object) -> object:
        return value.strip().removeprefix("[id:").removesuffix("]").strip() if isinstance(value, str) else value

    @field_validator("verdict", mode="before")
    @classmethod
    def _label(cls, value: object) -> object:
        return normalised_label(value, {"true": "yes", "false": "no", "pass": "yes", "fail": "no"})


class RubricAnswer(Answer):
    """The verdicts on every rubric of the question."""

    verdicts: list[RubricVerdict]


# ------------------------------------------------------------------------------------------ which rubrics
def merge_rubrics(*groups: list[Rubric] | None) -> list[Rubric]:
    """The rubrics of every group, once each (in order of appearance).

    Raises:
        ValueError: two different rubrics share an id.
    """
    merged: dict[str, Rubric] = {}
    for rubric in (rubric for group in groups for rubric in group or []):
        if merged.setdefault(rubric.rubric_id, rubric) != rubric:
            raise ValueError(f"two different rubrics have the rubric_id {rubric.rubric_id!r}; ids must be unique")
    return list(merged.values())


def with_case_rubrics(case_rubrics: list[Rubric] | None, invocations: list[Invocation]) -> list[Invocation]:
    """Copies of `invocations` with the case's rubrics added to each (what ADK does before any metric runs).

    Raises:
        ValueError: a case rubric has the id of a different rubric of an invocation.
    """
    return [
        invocation.model_copy(update={"rubrics": merge_rubrics(invocation.rubrics, case_rubrics)})
        for invocation in invocations
    ]


def effective_rubrics(
    options: RubricOptions, kind: str, actual: Invocation, expected: Invocation | None
) -> tuple[list[Rubric], list[str]]:
    """The rubrics that apply to an invocation, and the ids of its untyped rubrics (ignored, as in ADK)."""
    own = merge_rubrics(actual.rubrics, expected.rubrics if expected else None)
    typed = [rubric for rubric in own if rubric.type == kind]
    return merge_rubrics(options.rubrics, typed), [rubric.rubric_id for rubric in own if rubric.type is None]


# ----------------------------------------------------------------------------------------------- judging
def _rubric_prompt(kind: str, rubrics: list[Rubric], actual: Invocation, include_intermediate: bool) -> str:
    listed = [{"rubric_id": r.rubric_id, "property": r.rubric_content.text_property or r.description} for r in rubrics]
    context = jp.agent_context(actual, jp.tool_activity(actual))
    if kind == TOOL_USE_QUALITY:
        context = context[1:]  # the tool-use judge needs no instructions
    else:
        context.append(jp.fence("agent_response", jp.response_text(actual, include_intermediate=include_intermediate)))
    rubrics_text = jp.fence("rubrics", json.dumps(listed, ensure_ascii=False, indent=1))
    return jp.user_message([*context, rubrics_text], "Give your verdict on every rubric, as the system message says.")


def _rubric_verdict(answer: RubricAnswer | str, rubric_id: str) -> Verdict:
    if isinstance(answer, str):
        return Verdict.unusable(answer)
    found = next((verdict for verdict in answer.verdicts if verdict.rubric_id == rubric_id), None)
    if found is None:
        return Verdict.unusable(f"no verdict for rubric {rubric_id!r}")
    return Verdict(float(found.verdict == "yes"), found.rationale, found.verdict)


def rubric_votes_result(
    votes: dict[str, Vote],
    score: float | None,
    pair: tuple[Invocation, Invocation | None],
    threshold: float | None,
    *,
    unusable: int,
    names: dict[str, str] | None = None,
) -> Scored:
    """An invocation's result from its rubric votes: `rubric_scores`, one explanation per rubric, the details."""
    result = PerInvocationResult(
        actual_invocation=pair[0],
        expected_invocation=pair[1],
        score=score,
        eval_status=status_for(score, threshold),
        rubric_scores=[
            RubricScore(rubric_id=i, score=v.score, rationale=(v.rationales() or [v.reason or ""])[0])
            for i, v in votes.items()
        ],
        explanation="; ".join(f"{(names or {}).get(i, i)}: {v.explanation()}" for i, v in votes.items()),
    )
    agreement = mean_or_none([vote.agreement for vote in votes.values()])
    details = {
        "agreement": agreement,
        "unusable_samples": unusable,
        "rubrics": {i: v.details() for i, v in votes.items()},
    }
    return result, details


@dataclass(frozen=True)
class _RubricJudge:
    """Judges the rubrics of one turn after another, for one metric."""

    sampler: Sampler
    kind: str
    system: str
    include_intermediate: bool
    threshold: float | None

    async def turn(self, rubrics: list[Rubric], actual: Invocation, expected: Invocation | None) -> Scored:
        """Every rubric voted by majority; the turn's score is the mean of the voted rubrics."""
        if not rubrics:
            return unscored(actual, expected, f"no rubric of type {self.kind} applies to this invocation")
        prompt = _rubric_prompt(self.kind, rubrics, actual, self.include_intermediate)
        answers = await self.sampler.ask(Question(self.system, prompt, RubricAnswer))
        problems = [answer for answer in answers if isinstance(answer, str)]
        if len(problems) == len(answers):
            vote = majority_vote([Verdict.unusable(problem) for problem in problems])
            return invocation_result(vote, actual, expected, self.threshold)
        votes = {r.rubric_id: majority_vote([_rubric_verdict(a, r.rubric_id) for a in answers]) for r in rubrics}
        score = mean_or_none([vote.score for vote in votes.values()])
        return rubric_votes_result(votes, score, (actual, expected), self.threshold, unusable=len(problems))


def rubric_means(scored: Sequence[Scored]) -> list[RubricScore]:
    """Each rubric's mean score over the invocations that scored it."""
    by_id: dict[str, list[float | None]] = {}
    for result, _ in scored:
        for rubric_score in result.rubric_scores or []:
            by_id.setdefault(rubric_score.rubric_id, []).append(rubric_score.score)
    return [
        RubricScore(rubric_id=i, score=mean_or_none(s), rationale=f"mean over {sum(x is not None for x in s)} turn(s)")
        for i, s in by_id.items()
    ]


async def _rubric_metric(ctx: MetricContext[RubricOptions], kind: str, system: str) -> EvaluationResult:
    options = ctx.options
    pairs = ctx.pairs()
    plans = [effective_rubrics(options, kind, a, e) for a, e in pairs]
    ignored = sorted({rubric_id for _, ids in plans for rubric_id in ids})
    if not any(rubrics for rubrics, _ in plans):
        untyped = f" (untyped rubrics are ignored: {', '.join(ignored)}; set their type)" if ignored else ""
        raise MetricNotApplicable(f"no rubric: give the criterion 'rubrics', or rubrics of type {kind}{untyped}")
    if (exact := await scored_by_adk(dataclasses.replace(ctx, scenario=None))) is not None:
        return exact
    threshold = ctx.threshold
    judge = _RubricJudge(
        sampler_for(options),
        kind,
        system,
        options.include_intermediate_responses_in_final,
        threshold,
    )
    scored = await gather_scored([judge.turn(rubrics, a, e) for (a, e), (rubrics, _) in zip(pairs, plans, strict=True)])
    overall = mean_or_none([s.score for result, _ in scored for s in result.rubric_scores or []])
    result = judged_result(
        scored, threshold, options.judge_model_options, ignored_rubrics=ignored, judge_mode=AGENT_EVAL
    )
    return result.model_copy(
        update={
            "overall_score": overall,
            "overall_eval_status": status_for(overall, threshold),
            "overall_rubric_scores": rubric_means(scored),
        }
    )


# ------------------------------------------------------------------------------------------------ metrics
@metric(
    "rubric_based_final_response_quality_v1",
    options=RubricOptions,
    requires_expected=False,
    description="Mean of the judge's yes/no verdicts on rubrics about the final response (ADK; LLM judge).",
)
async def rubric_based_final_response_quality_v1(ctx: MetricContext[RubricOptions]) -> EvaluationResult:
    """ADK's rubric-based final response quality (see the module docstring)."""
    return await _rubric_metric(ctx, FINAL_RESPONSE_QUALITY, jp.RUBRIC_FINAL_RESPONSE_SYSTEM)


@metric(
    "rubric_based_tool_use_quality_v1",
    options=RubricOptions,
    requires_expected=False,
    description="Mean of the judge's yes/no verdicts on rubrics about the tool calls (ADK; LLM judge).",
)
async def rubric_based_tool_use_quality_v1(ctx: MetricContext[RubricOptions]) -> EvaluationResult:
    """ADK's rubric-based tool use quality (see the module docstring)."""
    return await _rubric_metric(ctx, TOOL_USE_QUALITY, jp.RUBRIC_TOOL_USE_SYSTEM)
