"""Aggregation: metric results and agent runs into case results and a run report (pure functions)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from agent_eval.report.models import CaseResult, MetricResult, RunReport, RunSummary
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalStatus

__all__ = ["build_report", "case_status", "summarize"]

RunKey = tuple[str, str, int]


def case_status(run: AgentRun, metrics: Sequence[MetricResult]) -> EvalStatus:
    """FAILED when the agent failed or a metric failed or raised; PASSED when some metric passed (or is
    informational) and none failed; NOT_EVALUATED when no metric could score the case."""
    if run.failed or any(result.gates for result in metrics):
        return EvalStatus.FAILED
    if any(result.status in (EvalStatus.PASSED, EvalStatus.INFORMATIONAL) for result in metrics):
        return EvalStatus.PASSED
    return EvalStatus.NOT_EVALUATED


def summarize(cases: Sequence[CaseResult]) -> RunSummary:
    """Totals over case runs (one row per case run), mean score per metric over the scored ones."""
    total = len(cases)
    passed = sum(case.status is EvalStatus.PASSED for case in cases)
    failed = sum(case.status is EvalStatus.FAILED for case in cases)
    scores: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        for result in case.metrics:
            if result.score is not None:
                scores[result.metric_name].append(result.score)
    latencies = [case.agent_run.latency_seconds for case in cases]
    return RunSummary(
        total=total,
        passed=passed,
        failed=failed,
        not_evaluated=total - passed - failed,
        pass_rate=passed / total if total else 0.0,
        avg_scores={name: statistics.fmean(values) for name, values in scores.items()},
        agent_failures=sum(case.agent_run.failed for case in cases),
        mean_latency_seconds=statistics.fmean(latencies) if latencies else 0.0,
    )


def build_report(
    *,
    run_id: str,
    runs: Sequence[tuple[EvalCase, AgentRun]],
    metric_results: Iterable[MetricResult],
    config: EvalConfig,
    eval_set_ids: list[str],
    agent_reference: str,
    agent_fingerprint: str,
    num_runs: int,
    started_at: datetime,
    completed_at: datetime,
    flow_run_id: str | None = None,
    source_run_id: str | None = None,
) -> RunReport:
    """The run report: one case result per (case, agent run), in the order of `runs`, with its metric results."""
    by_run: dict[RunKey, list[MetricResult]] = defaultdict(list)
    for result in metric_results:
        by_run[(result.eval_set_id, result.eval_id, result.run_index)].append(result)
    cases = []
    for case, run in runs:
        metrics = by_run.get((run.eval_set_id, run.eval_id, run.run_index), [])
        cases.append(
            CaseResult(
                eval_set_id=run.eval_set_id,
                eval_id=run.eval_id,
                run_index=run.run_index,
                status=case_status(run, metrics),
                agent_run=run,
                expected_invocations=case.conversation,
                metrics=metrics,
            )
        )
    return RunReport(
        run_id=run_id,
        eval_set_ids=eval_set_ids,
        agent_reference=agent_reference,
        agent_fingerprint=agent_fingerprint,
        config=config.model_dump(mode="json", exclude_none=True),
        config_hash=config.fingerprint(),
        num_runs=num_runs,
        started_at=started_at,
        completed_at=completed_at,
        flow_run_id=flow_run_id,
        source_run_id=source_run_id,
        cases=cases,
        summary=summarize(cases),
    )
