"""Asking the judge and voting over its samples: majority for yes/no verdicts, median for graded ones.

The judge seam: a judged metric gets its `Judge` from `judge_for(model)`, which calls the installed factory
(`set_judge_factory`; by default `agent_eval.metrics.judged.client.make_judge`, imported on first use). Tests install
a scripted judge there.

A judged metric asks a `Question` `num_samples` times through a `Sampler` (at most `parallelism_limit` judge
calls at once), and turns each answer into a `Verdict`. A sample without a usable verdict (the judge failed or
raised, its answer did not parse or lacks the verdict) is kept as an unusable verdict: it is counted and
reported, never scored as 0 or 1.

- `majority_vote` (yes/no verdicts, scores 1 and 0): 1 when more usable samples say 1 than 0; a tie is 0
  (ADK's rule). The agreement is the share of usable samples on the winning side.
- `median_vote` (graded verdicts in [0, 1], ADK-Rust's criteria): the lower median of the usable scores (an
  actual sample's score, and the more cautious of the two middle ones). The agreement is the share of usable
  samples within `AGREEMENT_TOLERANCE` of it.

Either vote is unscored (`score is None`) only when no sample is usable; the reason lists the samples' problems.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import statistics
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_eval.metrics.common import overall_result, status_for
from agent_eval.metrics.judged.base import Judge, JudgeExample, JudgeModelOptions, JudgeRequest, JudgeSample
from agent_eval.metrics.judged.mode import JudgedOptions
from agent_eval.metrics.judged.prompts import examples_section
from agent_eval.metrics.judged.usage import ask_within_budget
from agent_eval.metrics.registry import MetricContext
from agent_eval.schema import EvaluationResult, Invocation, PerInvocationResult

__all__ = [
    "AGREEMENT_TOLERANCE",
    "Answer",
    "JudgeFactory",
    "Question",
    "Sampler",
    "Scored",
    "Verdict",
    "VerdictAnswer",
    "Vote",
    "default_judge_factory",
    "invocation_result",
    "judge_for",
    "judged_result",
    "majority_vote",
    "mean_or_none",
    "median_vote",
    "normalised_label",
    "parse_answer",
    "sampler_for",
    "set_judge_factory",
    "verdicts_of",
]

AGREEMENT_TOLERANCE = 0.1
"""Graded samples within this distance of the median agree with it."""


@dataclass(frozen=True)
class Verdict:
    """One sample's verdict on one question.

    Attributes:
        score: 1 or 0 for a yes/no question, a value in [0, 1] for a graded one; None when unusable.
        rationale: the judge's reason.
        label: the judge's label (e.g. `valid`, `contradictory`), when the question has labels.
        problem: why the sample is unusable (the judge failed, the answer did not parse or lacks this verdict).
    """

    score: float | None
    rationale: str = ""
    label: str | None = None
    problem: str | None = None

    @classmethod
    def unusable(cls, problem: str) -> Verdict:
        """A sample that gives no verdict, and why."""
        return cls(score=None, problem=problem)

    @property
    def usable(self) -> bool:
        """Whether the sample gives a score."""
        return self.score is not None

    def as_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready data (for `details`)."""
        if not self.usable:
            return {"error": self.problem}
        return {"score": self.score, "label": self.label, "rationale": self.rationale}


@dataclass(frozen=True)
class Vote:
    """The outcome of a vote over the samples of one question.

    Attributes:
        score: the voted score; None when no sample is usable.
        verdicts: every sample's verdict, in sample order.
        winners: the usable verdicts that agree with the outcome, in sample order.
        reason: why there is no score (only when `score` is None).
    """

    score: float | None
    verdicts: tuple[Verdict, ...]
    winners: tuple[Verdict, ...] = field(default=())
    reason: str | None = None

    @property
    def usable(self) -> int:
        """How many samples gave a verdict."""
        return sum(verdict.usable for verdict in self.verdicts)

    @property
    def unusable(self) -> int:
        """How many samples gave no verdict."""
        return len(self.verdicts) - self.usable

    @property
    def agreement(self) -> float | None:
        """The share of usable samples that agree with the outcome."""
        return len(self.winners) / self.usable if self.usable else None

    @property
    def label(self) -> str | None:
        """The most common label among the agreeing samples (the first one seen on a tie)."""
        labels = [verdict.label for verdict in self.winners if verdict.label]
        return Counter(labels).most_common(1)[0][0] if labels else None

    def rationales(self) -> list[str]:
        """The distinct rationales: the agreeing samples' first, then the dissenting ones."""
        ordered = [verdict.rationale for verdict in (*self.winners, *self.dissent()) if verdict.rationale]
        return list(dict.fromkeys(ordered))

    def dissent(self) -> list[Verdict]:
        """The usable verdicts that disagree with the outcome, in sample order."""
        return [verdict for verdict in self.verdicts if verdict.usable and verdict not in self.winners]

    def details(self) -> dict[str, Any]:
        """The vote as JSON-ready data: outcome, per-sample verdicts, agreement, unusable samples."""
        return {
            "score": self.score,
            "label": self.label,
            "agreement": self.agreement,
            "usable_samples": self.usable,
            "unusable_samples": self.unusable,
            "samples": [verdict.as_dict() for verdict in self.verdicts],
        }

    def explanation(self) -> str:
        """`<label or score>: <majority rationale>`, then the dissent and the dropped samples, if any."""
        if self.score is None:
            return self.reason or "no usable judge sample"
        head = self.label or f"{self.score:.2f}"
        text = f"{head}: {self.winners[0].rationale}" if self.winners[0].rationale else head
        notes = []
        if len(self.winners) < self.usable:
            dissent = [verdict.rationale for verdict in self.dissent() if verdict.rationale][:1]
            notes.append(
                f"{len(self.winners)} of {self.usable} samples agree" + "".join(f"; dissent: {d}" for d in dissent)
            )
        if self.unusable:
            notes.append(f"{self.unusable} of {len(self.verdicts)} samples unusable, dropped ({self._problems()})")
        return text + "".join(f" ({note})" for note in notes)

    def _problems(self) -> str:
        problems = [verdict.problem or "no verdict" for verdict in self.verdicts if not verdict.usable]
        return "; ".join(dict.fromkeys(problems))


def _no_vote(verdicts: tuple[Verdict, ...]) -> Vote:
    problems = "; ".join(dict.fromkeys(verdict.problem or "no verdict" for verdict in verdicts))
    reason = f"not evaluated: all {len(verdicts)} judge sample(s) unusable ({problems or 'no samples'})"
    return Vote(score=None, verdicts=verdicts, reason=reason)


def majority_vote(verdicts: Sequence[Verdict]) -> Vote:
    """Majority of the usable yes (1) / no (0) verdicts; a tie is 0. Unscored when none is usable."""
    samples = tuple(verdicts)
    usable = [verdict for verdict in samples if verdict.score is not None]
    if not usable:
        return _no_vote(samples)
    yes = sum(1 for verdict in usable if verdict.score == 1.0)
    outcome = 1.0 if yes > len(usable) - yes else 0.0
    return Vote(score=outcome, verdicts=samples, winners=tuple(v for v in usable if v.score == outcome))


def median_vote(verdicts: Sequence[Verdict]) -> Vote:
    """Lower median of the usable graded verdicts; agreement within `AGREEMENT_TOLERANCE`."""
    samples = tuple(verdicts)
    scores = [verdict.score for verdict in samples if verdict.score is not None]
    if not scores:
        return _no_vote(samples)
    outcome = statistics.median_low(scores)
    at_median = [v for v in samples if v.score == outcome]
    near = [v for v in samples if v.score is not None and v.score != outcome]
    near = [v for v in near if v.score is not None and abs(v.score - outcome) <= AGREEMENT_TOLERANCE + 1e-9]
    return Vote(score=outcome, verdicts=samples, winners=(*at_median, *near))


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """The mean of the values that are not None; None when there are none."""
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


# ------------------------------------------------------------------------------------------- the judge seam
JudgeFactory: TypeAlias = Callable[[str], Judge]
"""Makes the judge for a model name."""


def default_judge_factory(model: str) -> Judge:
    """`agent_eval.metrics.judged.client.make_judge(model)`, imported on first use."""
    client = importlib.import_module("agent_eval.metrics.judged.client")
    return cast(Judge, client.make_judge(model))


_factory: JudgeFactory = default_judge_factory


def set_judge_factory(factory: JudgeFactory | None) -> JudgeFactory:
    """Make every judged metric get its judge from `factory` (None: the default); returns the previous one."""
    global _factory
    previous, _factory = _factory, factory or default_judge_factory
    return previous


def judge_for(model: str) -> Judge:
    """The judge a judged metric uses for `model`."""
    return _factory(model)


# --------------------------------------------------------------------------------------------- sampling
class Answer(BaseModel):
    """Base of the judge's structured answers: unknown keys are ignored; fields by name or alias."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def normalised_label(value: object, synonyms: Mapping[str, str]) -> object:
    """A label as lower-case words joined by `_` (brackets and quotes stripped), mapped through `synonyms`."""
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        key = value.strip().strip("[]\"'").lower().replace(" ", "_")
        return synonyms.get(key, key)
    return value


class VerdictAnswer(Answer):
    """An answer that holds one verdict."""

    def verdict(self) -> Verdict:
        """The sample's verdict."""
        raise NotImplementedError


A = TypeVar("A", bound=Answer)
V = TypeVar("V", bound=VerdictAnswer)


@dataclass(frozen=True)
class Question(Generic[A]):
    """One question for the judge: the constant system prompt, the user message of fenced data, the answer shape."""

    system: str
    prompt: str
    schema: type[A]


_CODE_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_answer(sample: JudgeSample, schema: type[A]) -> A | str:
    """The sample's answer as `schema`, or why it has none (a judge error, an unparseable or empty answer).

    Takes the judge's parsed answer, else its raw text as JSON (inside a markdown code fence or not).
    """
    if sample.error is not None:
        return f"judge error: {sample.error}"
    try:
        if isinstance(sample.parsed, schema):
            return sample.parsed
        if sample.parsed is not None:
            return schema.model_validate(sample.parsed.model_dump(by_alias=True))
        if sample.raw_text.strip():
            match = _CODE_FENCE.match(sample.raw_text)
            return schema.model_validate_json(match.group(1) if match else sample.raw_text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"unparseable answer ({where + ': ' if where else ''}{first['msg']})"
    return "empty answer"


class Sampler:
    """Asks questions `num_samples` times each, at most `parallelism_limit` judge calls at once."""

    def __init__(self, judge: Judge, options: JudgeModelOptions, examples: Sequence[JudgeExample] = ()) -> None:
        """Sample `judge` as `options` say (model, generation config, samples, parallelism); `examples` (people's
        verdicts) follow every question's material (`prompts.examples_section`)."""
        self.judge = judge
        self.options = options
        self.examples = examples_section(examples) if examples else ""
        self._limit = asyncio.Semaphore(options.parallelism_limit)

    async def ask(self, question: Question[A]) -> list[A | str]:
        """Every sample's answer to `question`, in sample order (a string says why a sample has none)."""
        samples = range(self.options.num_samples)
        return list(await asyncio.gather(*(self._sample(question, index) for index in samples)))

    async def _sample(self, question: Question[A], index: int) -> A | str:
        request = JudgeRequest(
            model=self.options.judge_model,
            system=question.system,
            prompt=f"{question.prompt}\n\n{self.examples}" if self.examples else question.prompt,
            response_schema=question.schema,
            config=dict(self.options.judge_model_config or {}),
            sample_index=index,
        )
        async with self._limit:
            try:
                sample = await ask_within_budget(self.judge, request)
            except Exception as error:  # a judge must not raise; if one does, the sample is unusable
                return f"the judge raised {type(error).__name__}: {error}"
        return parse_answer(sample, question.schema)


def verdicts_of(answers: Sequence[V | str]) -> list[Verdict]:
    """Each sample's verdict; an answer-less sample is an unusable verdict with its reason."""
    return [Verdict.unusable(answer) if isinstance(answer, str) else answer.verdict() for answer in answers]


def sampler_for(options: JudgedOptions) -> Sampler:
    """A sampler over the judge for the criterion's `judge_model` (from `judge_for`), with its examples."""
    model_options = options.judge_model_options
    return Sampler(judge_for(model_options.judge_model), model_options, options.judge_examples)


# ---------------------------------------------------------------------------------------------- results
Scored: TypeAlias = tuple[PerInvocationResult, dict[str, Any]]
"""An invocation's result and the details of its votes."""


def invocation_result(vote: Vote, actual: Invocation, expected: Invocation | None, threshold: float | None) -> Scored:
    """An invocation's result from one vote, with the vote's details."""
    result = PerInvocationResult(
        actual_invocation=actual,
        expected_invocation=expected,
        score=vote.score,
        eval_status=status_for(vote.score, threshold),
        explanation=vote.explanation(),
    )
    return result, vote.details()


def judged_result(
    scored: Sequence[Scored], threshold: float | None, options: JudgeModelOptions, **extra: Any
) -> EvaluationResult:
    """The overall result (mean over the scored invocations) with the judge's reliability in `details`."""
    results = [result for result, _ in scored]
    overall = overall_result(results, threshold)
    invocations = [details for _, details in scored]
    details = {
        "judge_model": options.judge_model,
        "num_samples": options.num_samples,
        "agreement": mean_or_none([d.get("agreement") for d in invocations]),
        "unusable_samples": sum(d.get("unusable_samples", 0) for d in invocations),
        "invocations": invocations,
        **extra,
    }
    explanation = overall.explanation
    if overall.overall_score is None:
        explanation = "; ".join(r.explanation for r in results if r.explanation) or "no invocation to judge"
    return overall.model_copy(update={"details": details, "explanation": explanation})


async def gather_scored(jobs: Iterable[Coroutine[Any, Any, Scored]]) -> list[Scored]:
    """Run the invocations' jobs concurrently (each sampler caps its judge calls); results in order."""
    return list(await asyncio.gather(*jobs))


async def judge_turns(
    ctx: MetricContext[JudgedOptions], jobs: Iterable[Coroutine[Any, Any, Scored]], **extra: Any
) -> EvaluationResult:
    """A judged metric's result from its per-invocation jobs: gathered, then `judged_result` with the
    criterion's threshold and judge model options; `extra` joins `details` (e.g. `judge_mode`)."""
    return judged_result(await gather_scored(jobs), ctx.threshold, ctx.options.judge_model_options, **extra)
