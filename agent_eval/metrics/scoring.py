"""Running one metric over case runs: failures become records, never exceptions."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.custom import call_metric
from agent_eval.metrics.judged_rubrics import with_case_rubrics
from agent_eval.metrics.registry import MetricSpec
from agent_eval.report.models import InvocationScore, MetricResult
from agent_eval.schema import AgentRun, EvalCase, EvalMetric, EvalStatus, EvaluationResult

__all__ = ["score_case_run", "score_criterion"]


async def score_criterion(
    spec: MetricSpec, eval_metric: EvalMetric, runs: Sequence[tuple[EvalCase, AgentRun]]
) -> list[MetricResult]:
    """One metric over every case run, in order; a run that cannot be scored gets a NOT_EVALUATED record."""
    return [await score_case_run(spec, eval_metric, case, run) for case, run in runs]


async def score_case_run(spec: MetricSpec, eval_metric: EvalMetric, case: EvalCase, run: AgentRun) -> MetricResult:
    """One metric on one case run.

    The agent's own failure, a metric that does not apply, raises, returns the wrong type or a score outside
    its interval: each gives a NOT_EVALUATED result whose `error` (or `explanation`) says why.
    """
    record = MetricResult(
        metric_name=spec.name,
        eval_set_id=run.eval_set_id,
        eval_id=run.eval_id,
        run_index=run.run_index,
        threshold=eval_metric.effective_threshold,
    )
    if run.failed:
        return record.model_copy(update={"explanation": f"not scored: the agent failed ({run.error})"})
    try:
        # As ADK does before any metric runs: the case's rubrics join every actual invocation's own.
        actual = with_case_rubrics(case.rubrics, run.invocations) if case.rubrics else run.invocations
        outcome = call_metric(spec.function, eval_metric, actual, case.conversation, case.conversation_scenario)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        result = _as_evaluation_result(outcome)
    except MetricNotApplicable as reason:
        return record.model_copy(update={"explanation": f"not applicable: {reason}"})
    except Exception as error:  # a metric bug is recorded, the run goes on
        return record.model_copy(update={"error": f"{type(error).__name__}: {error}"})
    return _fill(record, spec, result)


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
