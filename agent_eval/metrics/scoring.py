"""Running one metric over case runs: failures become records, never exceptions."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import (
    CONTENT_NOT_CAPTURED,
    NO_EXPECTED_INVOCATIONS,
    NO_REFERENCE_FOR_RECORDED,
    MetricNotApplicable,
)
from agent_eval.metrics.custom import call_metric
from agent_eval.metrics.judged.credentials import DEFAULT_CONCURRENCY, judge_concurrency
from agent_eval.metrics.judged.policy import configured_retry
from agent_eval.metrics.judged.rubrics import with_case_rubrics
from agent_eval.metrics.judged.usage import judge_usage_of
from agent_eval.metrics.registry import MetricSpec
from agent_eval.results.model import NOT_APPLICABLE, InvocationScore, MetricResult
from agent_eval.results.pricing import JUDGE_TOKENS
from agent_eval.schema import AgentRun, EvalCase, EvalMetric, EvalStatus, EvaluationResult, JudgeConfig, ModelUsage

__all__ = ["MIN_CASE_RUNS_IN_FLIGHT", "case_runs_in_flight", "score_case_run", "score_criterion"]

MIN_CASE_RUNS_IN_FLIGHT = 4
"""The fewest case runs one criterion scores at once: ADK's `EvaluateConfig.parallelism` default."""


async def score_criterion(
    spec: MetricSpec,
    eval_metric: EvalMetric,
    runs: Sequence[tuple[EvalCase, AgentRun]],
    *,
    judge: JudgeConfig | None = None,
) -> list[MetricResult]:
    """One metric over every case run; one result per case run, in the order of `runs` (a run that cannot be
    scored gets a NOT_EVALUATED record, see `score_case_run`).

    Case runs are scored concurrently, at most `case_runs_in_flight()` at once (that many worker coroutines
    take the next case run as they finish one, so 5,000 case runs never make 5,000 coroutines). This follows
    google-adk 2.13's `LocalEvalService.evaluate`, which evaluates case runs concurrently under a semaphore
    of `EvaluateConfig.parallelism` (default 4), while inside one case run its `LlmAsJudge.evaluate_invocations`
    gathers the samples of all its invocations under one semaphore of `judge_model_options.parallelism_limit`
    (default 1). Here the same holds: a judged metric makes one `Sampler` per case run, whose semaphore of
    `parallelism_limit` bounds that case run's judge calls, and `judge_limiter()` (an adaptive limit whose ceiling
    is `AGENT_EVAL_JUDGE_CONCURRENCY`, default 64) bounds every judge call of the event loop. With ADK's
    `parallelism_limit` of 1 a case run has one call in flight, so as many case runs as the judge ceiling are
    scored at once (at least ADK's 4): fewer would leave slots the adaptive limit grows to unused, and a worker
    beyond the limit's current value only waits for a slot. Measured with the cap at 8
    against the fake Gemini server: 16 case runs x 1 sample with a 0.3 s judge took 0.85 s (4.8 s one after
    another), 33 x 5 samples with a 0.1 s judge 4.1 s (16.5 s), never more than 8 calls in flight.

    Deterministic metrics take the same path: a synchronous metric never yields, so its case runs are scored
    one after another inside the workers; measured on 5,000 case runs of `response_match_score` (warm, on a
    shared 2-core machine), the workers took 0.3-1.5 s and a plain loop 0.7-1.6 s: no cost, one code path.

    Args:
        spec: the metric.
        eval_metric: the criterion (threshold, options).
        runs: the case runs with their cases.
        judge: the config's `judge` section: judges made while scoring retry with its settings first (then
            `AGENT_EVAL_JUDGE_RETRY_*`, then ADK's defaults); `None` leaves the retries as they are.
    """
    retry = (
        configured_retry(judge.retry_attempts, judge.retry_initial_delay, judge.retry_max_delay)
        if judge is not None
        else contextlib.nullcontext()
    )
    with retry:
        return await _score_bounded(spec, eval_metric, runs, case_runs_in_flight())


def case_runs_in_flight() -> int:
    """How many case runs one criterion scores at once: the judge ceiling (`AGENT_EVAL_JUDGE_CONCURRENCY`, default
    64), at least `MIN_CASE_RUNS_IN_FLIGHT`.

    Each is a worker coroutine; a judged one waits for a slot of `judge_limiter()`, which starts at 16 and lets
    more in only while the provider keeps up, so 64 workers cost nothing when the limit stays lower. A custom
    async metric that calls a service of its own is bounded by this number alone: lower the variable to hold it.
    """
    try:
        cap = judge_concurrency()
    except EvalInputError:  # reported before the run by check_judge_credentials; scoring never raises for it
        cap = DEFAULT_CONCURRENCY  # the limiter's ceiling falls back to it too (policy._new_limiter)
    return max(cap, MIN_CASE_RUNS_IN_FLIGHT)


async def _score_bounded(
    spec: MetricSpec, eval_metric: EvalMetric, runs: Sequence[tuple[EvalCase, AgentRun]], workers: int
) -> list[MetricResult]:
    """`score_case_run` over `runs` by at most `workers` coroutines; results in input order."""
    results: list[MetricResult | None] = [None] * len(runs)
    pending = iter(enumerate(runs))

    async def work() -> None:
        for index, (case, run) in pending:  # one iterator shared by the workers: each case run is taken once
            results[index] = await score_case_run(spec, eval_metric, case, run)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(workers, len(runs))):
            group.create_task(work())
    return [result for result in results if result is not None]


async def score_case_run(spec: MetricSpec, eval_metric: EvalMetric, case: EvalCase, run: AgentRun) -> MetricResult:
    """One metric on one case run.

    The agent's own failure, a metric that does not apply, raises, returns the wrong type or a score outside
    its interval: each gives a NOT_EVALUATED result whose `error` (or `explanation`) says why.

    A metric does not apply when its spec `requires_expected` and the case has no expected invocations (a
    conversation scenario, a recorded session), or when it `needs_content` and the case was recorded without
    message content: decided here, before the metric is called, so every metric follows the one rule; a
    metric (a custom one) may also raise `MetricNotApplicable` itself.
    """
    record = MetricResult(
        metric_name=spec.name,
        eval_set_id=run.eval_set_id,
        eval_id=run.eval_id,
        run_index=run.run_index,
        threshold=eval_metric.effective_threshold,
    )
    if run.failed or run.not_started:  # a case run the budget did not start says why itself
        why = f"the agent failed ({run.error})" if run.failed else run.error
        return record.model_copy(update={"explanation": f"not scored: {why}"})
    if spec.requires_expected and case.conversation is None:
        reason = NO_REFERENCE_FOR_RECORDED if case.recorded is not None else NO_EXPECTED_INVOCATIONS
        return record.model_copy(update={"explanation": f"{NOT_APPLICABLE}: {reason}"})
    if spec.needs_content and case.recorded is not None and not case.recorded.content_captured:
        return record.model_copy(update={"explanation": f"{NOT_APPLICABLE}: {CONTENT_NOT_CAPTURED}"})
    with judge_usage_of() as judge_tokens:  # every judge call of this case run and metric, for its cost
        try:
            # As ADK does before any metric runs: the case's rubrics join every actual invocation's own.
            actual = with_case_rubrics(case.rubrics, run.invocations) if case.rubrics else run.invocations
            outcome = call_metric(spec.function, eval_metric, actual, case.conversation, case.conversation_scenario)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            result = _as_evaluation_result(outcome)
        except MetricNotApplicable as reason:
            return record.model_copy(update={"explanation": f"{NOT_APPLICABLE}: {reason}"})
        except Exception as error:  # a metric bug is recorded, the run goes on
            record = record.model_copy(update={"error": f"{type(error).__name__}: {error}"})
            return _with_judge_tokens(record, judge_tokens)
    return _with_judge_tokens(_fill(record, spec, result), judge_tokens)


def _with_judge_tokens(record: MetricResult, used: dict[str, ModelUsage]) -> MetricResult:
    """The result with its judge calls' tokens in `details["judge_tokens"]` (none: unchanged)."""
    if not used:
        return record
    tokens = {model: usage.model_dump(mode="json", exclude_none=True) for model, usage in used.items()}
    return record.model_copy(update={"details": {**record.details, JUDGE_TOKENS: tokens}})


def _as_evaluation_result(outcome: object) -> EvaluationResult:
    """Accept our `EvaluationResult` or any model of the same shape (e.g. ADK's own, with its enum statuses).

    ADK's breakdown fields go to `details`: `overall_token_usage_details` / `overall_duration_details` as
    `token_usage_details` / `duration_details`, the per-invocation ones as `per_invocation_<name>` lists.
    """
    if isinstance(outcome, EvaluationResult):
        return outcome
    if isinstance(outcome, BaseModel):
        data = outcome.model_dump(mode="json", exclude_none=True)
        data["details"] = {**data.get("details", {}), **_adk_details(data)}
        try:
            return EvaluationResult.model_validate(data)
        except ValidationError as error:
            raise TypeError(f"the metric returned an unusable {type(outcome).__name__}: {error}") from None
    raise TypeError(f"the metric must return an EvaluationResult, got {type(outcome).__name__}")


def _adk_details(data: dict[str, Any]) -> dict[str, Any]:
    """Pop ADK's breakdown fields (which our models do not have) out of a dumped result, as details."""
    details: dict[str, Any] = {}
    per_invocation = data.get("per_invocation_results", [])
    for name in ("token_usage_details", "duration_details"):
        if (overall := data.pop(f"overall_{name}", None)) is not None:
            details[name] = overall
        values = [result.pop(name, None) for result in per_invocation]
        if any(value is not None for value in values):
            details[f"per_invocation_{name}"] = values
    return details


def _fill(record: MetricResult, spec: MetricSpec, result: EvaluationResult) -> MetricResult:
    score = result.overall_score
    if score is not None and not spec.interval.contains(score):
        interval = spec.interval
        return record.model_copy(
            update={"error": f"score {score!r} is outside [{interval.min_value}, {interval.max_value}]"}
        )
    status = EvalStatus.INFORMATIONAL if spec.informational and score is not None else result.overall_eval_status
    per_invocation = [
        InvocationScore(score=r.score, status=r.eval_status, explanation=r.explanation, rubric_scores=r.rubric_scores)
        for r in result.per_invocation_results
    ]
    details = dict(result.details)
    if result.overall_rubric_scores:
        details["overall_rubric_scores"] = [s.model_dump(mode="json") for s in result.overall_rubric_scores]
    return record.model_copy(
        update={
            "score": score,
            "status": status,
            "explanation": result.explanation,
            "per_invocation": per_invocation,
            "details": details,
        }
    )
