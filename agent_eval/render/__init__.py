"""Render: a run report as the console summary, JSON, HTML, JUnit XML, Vertex AI tables, and ADK and ADK-Rust
result files. Renderers read `agent_eval.results` and never a metric's internals.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(a new renderer) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.render.adk_results import eval_set_results, write_eval_set_results
    from agent_eval.render.console import format_summary, summary_table_rows
    from agent_eval.render.export import OUTPUT_FILES, report_json, write_outputs
    from agent_eval.render.html import render_html, write_html
    from agent_eval.render.html_charts import HistoryPoint
    from agent_eval.render.junit import junit_xml, write_junit
    from agent_eval.render.rust_results import rust_report
    from agent_eval.render.tables import metrics_table, summary_metrics, write_table

_EXPORTS = {
    "agent_eval.render.adk_results": ("eval_set_results", "write_eval_set_results"),
    "agent_eval.render.console": ("format_summary", "summary_table_rows"),
    "agent_eval.render.export": ("OUTPUT_FILES", "report_json", "write_outputs"),
    "agent_eval.render.html": ("render_html", "write_html"),
    "agent_eval.render.html_charts": ("HistoryPoint",),
    "agent_eval.render.junit": ("junit_xml", "write_junit"),
    "agent_eval.render.rust_results": ("rust_report",),
    "agent_eval.render.tables": ("metrics_table", "summary_metrics", "write_table"),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "OUTPUT_FILES",
    "HistoryPoint",
    "eval_set_results",
    "format_summary",
    "junit_xml",
    "metrics_table",
    "render_html",
    "report_json",
    "rust_report",
    "summary_metrics",
    "summary_table_rows",
    "write_eval_set_results",
    "write_html",
    "write_junit",
    "write_outputs",
    "write_table",
]
