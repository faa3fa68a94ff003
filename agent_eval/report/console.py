"""The console summary (in the style of `adk eval` and ADK-Rust's `format_summary`) and artifact rows."""

from __future__ import annotations

from typing import Any

from agent_eval.report.models import CaseResult, MetricResult, RunReport
from agent_eval.schema import EvalStatus

__all__ = ["format_summary", "summary_table_rows"]

_MAX_EXPLANATION = 300


def format_summary(report: RunReport) -> str:
    """Totals, pass rate, average score per metric, and each failed case with the criteria that failed."""
    s = report.summary
    lines = [
        f"agent-eval run {report.run_id}  eval sets: {', '.join(report.eval_set_ids)}",
        f"agent: {report.agent_reference}  runs per case: {report.num_runs}",
        f"Total: {s.total}  Passed: {s.passed}  Failed: {s.failed}"
        + (f"  Not evaluated: {s.not_evaluated}" if s.not_evaluated else "")
        + f"  Pass rate: {s.pass_rate:.1%}",
    ]
    if s.agent_failures:
        lines.append(f"Agent failures: {s.agent_failures}")
    if s.avg_scores:
        lines.append("Average scores:")
        thresholds = _thresholds(report)
        width = max(len(name) for name in s.avg_scores)
        for name, score in s.avg_scores.items():
            threshold = thresholds.get(name)
            suffix = f"  (threshold {threshold:g})" if threshold is not None else ""
            lines.append(f"  {name:<{width}}  {score:.3f}{suffix}")
    failed = report.failed_cases()
    if failed:
        lines.append("Failed cases:")
        lines.extend(line for case in failed for line in _case_lines(case, report.num_runs))
    return "\n".join(lines)


def _thresholds(report: RunReport) -> dict[str, float | None]:
    return {m.metric_name: m.threshold for case in report.cases for m in case.metrics}


def _case_lines(case: CaseResult, num_runs: int) -> list[str]:
    run = f" (run {case.run_index + 1})" if num_runs > 1 else ""
    lines = [f"  FAIL {case.eval_set_id}/{case.eval_id}{run}"]
    if case.agent_run.error:
        lines.append(f"      agent error: {_clip(case.agent_run.error)}")
    lines.extend(f"      {_metric_line(m)}" for m in case.metrics if m.gates)
    return lines


def _metric_line(result: MetricResult) -> str:
    if result.error:
        return f"{result.metric_name}: not evaluated, {_clip(result.error)}"
    score = f"{result.score:.3f}" if result.score is not None else "-"
    threshold = f"{result.threshold:g}" if result.threshold is not None else "-"
    why = f": {_clip(result.explanation)}" if result.explanation else ""
    return f"{result.metric_name}: score {score} < threshold {threshold}{why}"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_EXPLANATION else text[: _MAX_EXPLANATION - 3] + "..."


def summary_table_rows(report: RunReport) -> list[dict[str, Any]]:
    """One row per case run for the Prefect table artifact: status, failure, latency, score per metric."""
    rows = []
    for case in report.cases:
        row: dict[str, Any] = {
            "eval_set_id": case.eval_set_id,
            "eval_id": case.eval_id,
            "run_index": case.run_index,
            "status": EvalStatus(case.status).name,
            "failure": case.failure,
            "latency_in_seconds": round(case.agent_run.latency_seconds, 4),
        }
        for result in case.metrics:
            row[f"{result.metric_name}/score"] = result.score
        rows.append(row)
    return rows
