"""Reports: the report model, aggregation, and renderers."""

from agent_eval.report.aggregate import build_report, case_status, summarize
from agent_eval.report.console import format_summary, summary_table_rows
from agent_eval.report.models import CaseResult, InvocationScore, MetricResult, RunReport, RunSummary

__all__ = [
    "CaseResult",
    "InvocationScore",
    "MetricResult",
    "RunReport",
    "RunSummary",
    "build_report",
    "case_status",
    "format_summary",
    "summarize",
    "summary_table_rows",
]
