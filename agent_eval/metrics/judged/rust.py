"""ADK-Rust's judged criteria: `semantic_match_score`, `rubric_quality_score`, `safety_score`, `hallucination_score`.

Each scores every invocation from 0 to 1 with the judge's reasoning, and takes the options of ADK's judged
metrics (`judge_model_options`, `include_intermediate_responses_in_final`). With `num_samples` samples an
invocation's score is the lower median of the usable samples' scores (`voting.median_vote`; agreement = the
share of samples within 0.1 of it). A sample that errors, does not parse or gives a score outside [0, 1] is
unusable: dropped and counted, never scored 0 (ADK-Rust's parse failures) or 1 (its fail-open safety and
hallucination parsing). An invocation without a usable sample is NOT_EVALUATED with the reason. Overall = mean
over the scored invocations.

- `semantic_match_score` (needs expected invocations): is the response equivalent to the expected one?
- `rubric_quality_score`: option `rubrics`, a non-empty list of `{rubric_id?, name?, description, weight=1,
  levels?: [{score, description}]}` (a rubric's id is its `rubric_id`, else its `name`, else `rubric_<n>`;
  weights >= 0 with a positive sum). One question per rubric; invocation score = Σ score·weight / Σ weight over
  the rubrics with a usable vote (a rubric without one leaves both sums, and the explanation says so);
  `rubric_scores` per invocation, `overall_rubric_scores` = each rubric's mean over the invocations.
- `safety_score`: 1 completely safe, lower for each issue; the user's prompt is context only.
- `hallucination_score`: 1 no hallucination; the context is the earlier turns, the prompt and the tool
  activity, and the expected final response (when there is one) is the ground truth.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, alias_generators, field_validator

from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.mode import JudgedOptions
from agent_eval.metrics.judged.rubrics import rubric_means, rubric_votes_result
from agent_eval.metrics.judged.voting import (
    Question,
    Sampler,
    Scored,
    Verdict,
    VerdictAnswer,
    Vote,
    gather_scored,
    invocation_result,
    judge_turns,
    judged_result,
    median_vote,
    sampler_for,
    verdicts_of,
)
from agent_eval.metrics.registry import MetricContext, metric
from agent_eval.schema import (
    EvaluationResult,
    Invocation,
    content_text,
)

__all__ = [
    "GradedAnswer",
    "RubricLevel",
    "RubricQualityOptions",
    "WeightedRubric",
    "hallucination_score",
    "rubric_quality_score",
    "safety_score",
    "semantic_match_score",
]


class GradedAnswer(VerdictAnswer):
    """A score from 0 to 1 with the judge's reasoning and the issues it found."""

    reasoning: str = ""
    score: float = Field(ge=0.0, le=1.0)
    issues: list[str] = Field(default_factory=list)

    def verdict(self) -> Verdict:
        """The score; the issues join the reasoning."""
        return Verdict(self.score, "; ".join([self.reasoning, *self.issues]) if self.issues else self.reasoning)


# ------------------------------------------------------------------------------------------------- options
class _RustModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=alias_generators.to_camel, populate_by_name=True, loc_by_alias=False
    )


class RubricLevel(_RustModel):
    """A scoring level of a rubric: what earns `score`."""

    score: float = Field(ge=0.0, le=1.0)
    description: str


class WeightedRubric(_RustModel):
    """An ADK-Rust rubric: what it measures, its weight and optional scoring levels."""

    rubric_id: str | None = None
    name: str | None = None
    description: str = Field(min_length=1)
    weight: float = Field(default=1.0, ge=0.0)
    levels: list[RubricLevel] = Field(default_factory=list)


class RubricQualityOptions(JudgedOptions):
    """Options of `rubric_quality_score`: the weighted rubrics, each with an id."""

    rubrics: list[WeightedRubric] = Field(min_length=1)

    @field_validator("rubrics")
    @classmethod
    def _ids_and_weights(cls, rubrics: list[WeightedRubric]) -> list[WeightedRubric]:
        rubrics = [
            rubric.model_copy(update={"rubric_id": rubric.rubric_id or rubric.name or f"rubric_{number}"})
            for number, rubric in enumerate(rubrics, start=1)
        ]
        ids = [rubric.rubric_id for rubric in rubrics]
        if duplicates := sorted({i for i in ids if i is not None and ids.count(i) > 1}):
            raise ValueError(f"rubric id {duplicates[0]!r} is given more than once; rubric ids must be unique")
        if sum(rubric.weight for rubric in rubrics) <= 0:
            raise ValueError("the rubrics' weights sum to 0; give at least one rubric a positive weight")
        return rubrics


# ------------------------------------------------------------------------------------------------- judging
async def _graded(sampler: Sampler, question: Question[GradedAnswer]) -> Vote:
    return median_vote(verdicts_of(await sampler.ask(question)))


def _question(system: str, sections: list[str], task: str) -> Question[GradedAnswer]:
    return Question(system, jp.user_message(sections, task), GradedAnswer)


async def _graded_invocation(
    sampler: Sampler,
    question: Question[GradedAnswer],
    pair: tuple[Invocation, Invocation | None],
    threshold: float | None,
) -> Scored:
    return invocation_result(await _graded(sampler, question), *pair, threshold)


def _response(actual: Invocation, options: JudgedOptions) -> str:
    return jp.fence(
        "agent_response", jp.response_text(actual, include_intermediate=options.include_intermediate_responses_in_final)
    )


def _weighted(votes: dict[str, Vote], weights: dict[str, float]) -> float | None:
    """Σ score·weight / Σ weight over the rubrics with a score; None without any (or with zero weight)."""
    voted = {rubric_id: vote.score for rubric_id, vote in votes.items() if vote.score is not None}
    total = sum(weights[rubric_id] for rubric_id in voted)
    return sum(score * weights[rubric_id] for rubric_id, score in voted.items()) / total if total > 0 else None


async def _rubric_invocation(
    sampler: Sampler, options: RubricQualityOptions, actual: Invocation, threshold: float | None
) -> Scored:
    """Each rubric judged on its own; the invocation's score is their weighted mean."""
    context = [
        jp.fence("user_prompt", content_text(actual.user_content)),
        jp.fence("tool_activity", jp.tool_activity(actual)),
        _response(actual, options),
    ]
    questions = [
        _question(jp.RUST_RUBRIC_SYSTEM, [*context, jp.fence("rubrics", _rubric_text(rubric))], "Score the response.")
        for rubric in options.rubrics
    ]
    weights = {rubric.rubric_id or "": rubric.weight for rubric in options.rubrics}
    votes = dict(zip(weights, await asyncio.gather(*(_graded(sampler, q) for q in questions)), strict=True))
    unusable = sum(vote.unusable for vote in votes.values())
    names = {key: f"{key} (weight {weight:g})" for key, weight in weights.items()}
    result, details = rubric_votes_result(
        votes, _weighted(votes, weights), (actual, None), threshold, unusable=unusable, names=names
    )
    for key, rubric_details in details["rubrics"].items():
        rubric_details["weight"] = weights[key]
    return result, details


def _rubric_text(rubric: WeightedRubric) -> str:
    shown: dict[str, Any] = {"name": rubric.name or rubric.rubric_id, "description": rubric.description}
    if rubric.levels:
        shown["levels"] = [{"score": level.score, "description": level.description} for level in rubric.levels]
    return json.dumps(shown, ensure_ascii=False, indent=1)


# ------------------------------------------------------------------------------------------------- metrics
@metric(
    "semantic_match_score",
    options=JudgedOptions,
    description="The judge's 0..1 score of the response's semantic equivalence to the expected one (ADK-Rust).",
)
async def semantic_match_score(ctx: MetricContext[JudgedOptions]) -> EvaluationResult:
    """ADK-Rust's semantic match (see the module docstring)."""
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    include = options.include_intermediate_responses_in_final
    jobs = []
    for actual, expected in ctx.expected_pairs():
        sections = [
            jp.fence("user_prompt", content_text(expected.user_content)),
            _response(actual, options),
            jp.fence("reference_response", jp.response_text(expected, include_intermediate=include)),
        ]
        question = _question(jp.RUST_SEMANTIC_SYSTEM, sections, "Score the semantic equivalence.")
        jobs.append(_graded_invocation(sampler, question, (actual, expected), threshold))
    return await judge_turns(ctx, jobs)


@metric(
    "rubric_quality_score",
    options=RubricQualityOptions,
    requires_expected=False,
    description="Weighted mean of the judge's 0..1 scores on the criterion's rubrics (ADK-Rust).",
)
async def rubric_quality_score(ctx: MetricContext[RubricQualityOptions]) -> EvaluationResult:
    """ADK-Rust's rubric quality (see the module docstring)."""
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    scored = await gather_scored([_rubric_invocation(sampler, options, a, threshold) for a in ctx.actual])
    result = judged_result(scored, threshold, options.judge_model_options)
    return result.model_copy(update={"overall_rubric_scores": rubric_means(scored)})


@metric(
    "safety_score",
    options=JudgedOptions,
    requires_expected=False,
    description="The judge's 0..1 safety score of the response, 1 completely safe (ADK-Rust).",
)
async def safety_score(ctx: MetricContext[JudgedOptions]) -> EvaluationResult:
    """ADK-Rust's safety score (see the module docstring)."""
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    jobs = []
    for actual, expected in ctx.pairs():
        sections = [jp.fence("user_prompt", content_text(actual.user_content)), _response(actual, options)]
        question = _question(jp.RUST_SAFETY_SYSTEM, sections, "Score the safety of the response.")
        jobs.append(_graded_invocation(sampler, question, (actual, expected), threshold))
    return await judge_turns(ctx, jobs)


@metric(
    "hallucination_score",
    options=JudgedOptions,
    requires_expected=False,
    description="The judge's 0..1 score of the response's factual grounding, 1 no hallucination (ADK-Rust).",
)
async def hallucination_score(ctx: MetricContext[JudgedOptions]) -> EvaluationResult:
    """ADK-Rust's hallucination score (see the module docstring)."""
    options = ctx.options
    sampler, threshold = sampler_for(options), ctx.threshold
    pairs = ctx.pairs()
    jobs = []
    for index, (actual, expected) in enumerate(pairs):
        truth = content_text(expected.final_response) if expected is not None else ""
        sections = [
            jp.fence("conversation_history", jp.conversation_history(ctx.actual[:index])),
            jp.fence("user_prompt", content_text(actual.user_content)),
            jp.fence("tool_activity", jp.tool_activity(actual)),
            jp.fence("ground_truth", truth or "Not given."),
            _response(actual, options),
        ]
        question = _question(jp.RUST_HALLUCINATION_SYSTEM, sections, "Score the response's factual accuracy.")
        jobs.append(_graded_invocation(sampler, question, (actual, expected), threshold))
    return await judge_turns(ctx, jobs)
