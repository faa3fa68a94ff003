"""Render: a run report as the console summary, JSON, HTML, JUnit XML, Vertex AI tables, and ADK and ADK-Rust
result files. Renderers read `agent_eval.results` and never a metric's internals. The formats `--output-dir`
writes, and the JSON shapes of `report_json`, are one registry: `agent_eval.render.formats`.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(a new renderer) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.render.adk_results import eval_set_results as eval_set_results
    from agent_eval.render.adk_results import write_eval_set_results as write_eval_set_results
    from agent_eval.render.console import format_summary as format_summary
    from agent_eval.render.console import summary_table_rows as summary_table_rows
    from agent_eval.render.export import OUTPUT_FILES as OUTPUT_FILES
    from agent_eval.render.export import report_json as report_json
    from agent_eval.render.export import write_outputs as write_outputs
    from agent_eval.render.formats import OutputFormat as OutputFormat
    from agent_eval.render.formats import output_formats as output_formats
    from agent_eval.render.formats import register_format as register_format
    from agent_eval.render.formats import unregister_format as unregister_format
    from agent_eval.render.html import render_html as render_html
    from agent_eval.render.html import write_html as write_html
    from agent_eval.render.html_charts import HistoryPoint as HistoryPoint
    from agent_eval.render.junit import junit_xml as junit_xml
    from agent_eval.render.junit import write_junit as write_junit
    from agent_eval.render.rust_results import rust_report as rust_report
    from agent_eval.render.tables import metrics_table as metrics_table
    from agent_eval.render.tables import summary_metrics as summary_metrics
    from agent_eval.render.tables import write_table as write_table


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
