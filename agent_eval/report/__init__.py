"""Reports: the report model, aggregation, run comparison, and renderers (console, Vertex AI tables, ADK,
ADK-Rust, HTML, JUnit XML).

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.report.adk_results import eval_set_results, write_eval_set_results
    from agent_eval.report.aggregate import build_report, case_status, summarize
    from agent_eval.report.console import format_summary, summary_table_rows
    from agent_eval.report.export import OUTPUT_FILES, report_json, write_outputs
    from agent_eval.report.html import render_html, write_html
    from agent_eval.report.html_charts import HistoryPoint
    from agent_eval.report.junit import junit_xml, write_junit
    from agent_eval.report.models import CaseResult, InvocationScore, JsonFormat, MetricResult, RunReport, RunSummary
    from agent_eval.report.regression import RegressionReport, compare_runs
    from agent_eval.report.tables import metrics_table, summary_metrics, write_table

_EXPORTS = {
    "agent_eval.report.adk_results": ("eval_set_results", "write_eval_set_results"),
    "agent_eval.report.aggregate": ("build_report", "case_status", "summarize"),
    "agent_eval.report.console": ("format_summary", "summary_table_rows"),
    "agent_eval.report.export": ("OUTPUT_FILES", "report_json", "write_outputs"),
    "agent_eval.report.html": ("render_html", "write_html"),
    "agent_eval.report.html_charts": ("HistoryPoint",),
    "agent_eval.report.junit": ("junit_xml", "write_junit"),
    "agent_eval.report.models": (
        "CaseResult",
        "InvocationScore",
        "JsonFormat",
        "MetricResult",
        "RunReport",
        "RunSummary",
    ),
    "agent_eval.report.regression": ("RegressionReport", "compare_runs"),
    "agent_eval.report.tables": ("metrics_table", "summary_metrics", "write_table"),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

# Bound now: the function has its module's name, and importing the module (as `export` does) would otherwise
# leave the module, not the function, under this name.
from agent_eval.report.rust_report import rust_report  # noqa: E402

__all__ = [
    "OUTPUT_FILES",
    "CaseResult",
    "HistoryPoint",
    "InvocationScore",
    "JsonFormat",
    "MetricResult",
    "RegressionReport",
    "RunReport",
    "RunSummary",
    "build_report",
    "case_status",
    "compare_runs",
    "eval_set_results",
    "format_summary",
    "junit_xml",
    "metrics_table",
    "render_html",
    "report_json",
    "rust_report",
    "summarize",
    "summary_metrics",
    "summary_table_rows",
    "write_eval_set_results",
    "write_html",
    "write_junit",
    "write_outputs",
    "write_table",
]
