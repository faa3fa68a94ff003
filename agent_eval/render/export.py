"""Every machine-readable rendering of a run, as one JSON string or as files in a folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from agent_eval.render.adk_results import eval_set_results, write_eval_set_results
from agent_eval.render.rust_results import rust_report
from agent_eval.render.tables import frame_records, metrics_table, summary_metrics, write_table
from agent_eval.results.model import JsonFormat, RunReport

__all__ = ["OUTPUT_FILES", "JsonFormat", "report_json", "write_outputs"]

OUTPUT_FILES = (
    "metrics_table.csv",
    "metrics_table.json",
    "summary_metrics.csv",
    "summary_metrics.json",
    "report.json",
    "rust_report.json",
)
"""The files `write_outputs` always writes; the ADK `*.evalset_result.json` files come on top."""


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _vertex(report: RunReport) -> dict[str, Any]:
    return {
        "summary_metrics": frame_records(summary_metrics(report))[0],
        "metrics_table": frame_records(metrics_table(report)),
    }


def report_json(report: RunReport, format: JsonFormat = "report") -> str:
    """The run as JSON in one of the supported shapes.

    Args:
        report: the run report.
        format: `report` (our `RunReport`), `vertex` (`{summary_metrics, metrics_table}` as Vertex AI's
            `EvalResult`), `adk` (a list of ADK `EvalSetResult`s) or `rust` (ADK-Rust's `EvaluationReport`).

    Returns:
        Indented JSON.

    Raises:
        ValueError: an unknown format; the message lists the valid ones.
    """
    if format == "report":
        return report.model_dump_json(indent=2)
    if format == "vertex":
        return _dumps(_vertex(report))
    if format == "adk":
        return _dumps(eval_set_results(report))
    if format == "rust":
        return _dumps(rust_report(report))
    raise ValueError(f"unknown JSON format {format!r}; choose one of {', '.join(get_args(JsonFormat))}")


def write_outputs(report: RunReport, folder: str | Path) -> list[Path]:
    """Write every rendering of the run into `folder` (created if missing).

    Writes `OUTPUT_FILES`: Vertex AI's `metrics_table` and `summary_metrics` as CSV and JSON records,
    our `report.json`, ADK-Rust's `rust_report.json`, and ADK's `<app>_<eval_set_id>_<timestamp>.evalset_result.json`
    per eval set.

    Args:
        report: the run report.
        folder: the output folder.

    Returns:
        The files written.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    tables = {"metrics_table": metrics_table(report), "summary_metrics": summary_metrics(report)}
    paths = [
        write_table(frame, target / f"{name}{suffix}") for name, frame in tables.items() for suffix in (".csv", ".json")
    ]
    documents: tuple[tuple[str, JsonFormat], ...] = (("report.json", "report"), ("rust_report.json", "rust"))
    for name, fmt in documents:
        path = target / name
        path.write_text(report_json(report, fmt) + "\n", encoding="utf-8")
        paths.append(path)
    return [*paths, *write_eval_set_results(report, target)]
