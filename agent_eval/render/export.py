"""Every machine-readable rendering of a run, as one JSON string or as files in a folder.

Which renderings exist, and the files each writes, is the registry of `agent_eval.render.formats`; this module
writes them (`write_outputs`, `report_json`) and holds the built-in formats' functions the registry names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_eval.render.adk_results import eval_set_results
from agent_eval.render.formats import fixed_output_files, json_format_names, output_format, output_formats
from agent_eval.render.rust_results import rust_report
from agent_eval.render.tables import frame_records, metrics_table, summary_metrics, write_table
from agent_eval.results.model import JsonFormat, RunReport

__all__ = [
    "OUTPUT_FILES",
    "JsonFormat",
    "adk_document",
    "report_document",
    "report_json",
    "rust_document",
    "vertex_document",
    "write_outputs",
    "write_vertex_tables",
]

OUTPUT_FILES = fixed_output_files()
"""The files `write_outputs` always writes (the built-in formats'); the ADK `*.evalset_result.json` files come on
top."""


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def report_document(report: RunReport) -> str:
    """The `report` format: our `RunReport` as indented JSON."""
    return report.model_dump_json(indent=2)


def vertex_document(report: RunReport) -> str:
    """The `vertex` format: `{summary_metrics, metrics_table}` as Vertex AI's `EvalResult`."""
    return _dumps(
        {
            "summary_metrics": frame_records(summary_metrics(report))[0],
            "metrics_table": frame_records(metrics_table(report)),
        }
    )


def adk_document(report: RunReport) -> str:
    """The `adk` format: a list of ADK `EvalSetResult`s, one per eval set."""
    return _dumps(eval_set_results(report))


def rust_document(report: RunReport) -> str:
    """The `rust` format: ADK-Rust's `EvaluationReport`."""
    return _dumps(rust_report(report))


def write_vertex_tables(report: RunReport, folder: Path) -> list[Path]:
    """The `vertex` format's files: `metrics_table` and `summary_metrics`, each as CSV and as JSON records."""
    tables = {"metrics_table": metrics_table(report), "summary_metrics": summary_metrics(report)}
    return [
        write_table(frame, folder / f"{name}{suffix}") for name, frame in tables.items() for suffix in (".csv", ".json")
    ]


def report_json(report: RunReport, format: JsonFormat = "report") -> str:
    """The run as JSON in one of the supported shapes (the output formats that have a `document`).

    Args:
        report: the run report.
        format: `report` (our `RunReport`), `vertex` (`{summary_metrics, metrics_table}` as Vertex AI's
            `EvalResult`), `adk` (a list of ADK `EvalSetResult`s) or `rust` (ADK-Rust's `EvaluationReport`).

    Returns:
        Indented JSON.

    Raises:
        ValueError: an unknown format; the message lists the valid ones.
    """
    shapes = json_format_names()
    if format not in shapes:
        raise ValueError(f"unknown JSON format {format!r}; choose one of {', '.join(shapes)}")
    return output_format(format).render_document(report)


def write_outputs(report: RunReport, folder: str | Path) -> list[Path]:
    """Write every output format of the run into `folder` (created if missing).

    The formats, and the files each writes, are `agent_eval.render.formats.output_formats()`: our `report.json`,
    Vertex AI's `metrics_table` and `summary_metrics` as CSV and JSON records, ADK's
    `<app>_<eval_set_id>_<timestamp>.evalset_result.json` per eval set and ADK-Rust's `rust_report.json`.

    Args:
        report: the run report.
        folder: the output folder.

    Returns:
        The files written: those with fixed names (`OUTPUT_FILES`) in the formats' order, then those named after
        the run.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    written = [path for fmt in output_formats() for path in fmt.write_files(report, target)]
    fixed = set(fixed_output_files())
    return sorted(written, key=lambda path: path.name not in fixed)
