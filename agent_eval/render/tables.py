"""Vertex AI-shaped tables of a run: `metrics_table` (one row per case run) and `summary_metrics` (one row).

Columns follow Vertex AI's `EvalResult`, plus `eval_set_id`, `eval_id` and
`run_index` to name each row. Multi-turn rule: `prompt`, `response` and `reference` join the text of every
turn, in order, with `TURN_SEPARATOR` ("\\n", the separator ADK uses between the text parts of one content);
a turn without text contributes an empty string, so a case of n turns always has n - 1 separators.
`predicted_trajectory` and `reference_trajectory` are the tool calls of every turn, in order, as Vertex's
`{tool_name, tool_input}` dicts. A case with no expected conversation (a conversation scenario) has
`reference` and `reference_trajectory` None; its `prompt` is the users' text of the actual turns.

pandas is imported only when a table is built.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.schema import Invocation, content_text, tool_calls_of

__all__ = [
    "CASE_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "TURN_SEPARATOR",
    "frame_records",
    "metric_names",
    "metrics_table",
    "metrics_table_rows",
    "summary_metrics",
    "trajectory",
    "turn_texts",
    "write_table",
]

TURN_SEPARATOR = "\n"
CASE_COLUMNS = (
    "eval_set_id",
    "eval_id",
    "run_index",
    "prompt",
    "response",
    "reference",
    "predicted_trajectory",
    "reference_trajectory",
    "latency_in_seconds",
    "failure",
)
TRAJECTORY_COLUMNS = ("predicted_trajectory", "reference_trajectory")


def _pandas() -> Any:
    """pandas, imported on first use (it is untyped, hence `Any`)."""
    return importlib.import_module("pandas")


def turn_texts(contents: Sequence[Any]) -> str:
    """The text of each content (`None` counts as empty), joined with `TURN_SEPARATOR`."""
    return TURN_SEPARATOR.join(content_text(content) for content in contents)


def trajectory(invocations: Sequence[Invocation]) -> list[dict[str, Any]]:
    """Every tool call of the invocations, in order, as Vertex's `{tool_name, tool_input}` dicts."""
    return [
        {"tool_name": call.name or "", "tool_input": dict(call.args or {})}
        for invocation in invocations
        for call in tool_calls_of(invocation)
    ]


def metric_names(report: RunReport) -> list[str]:
    """Every metric of the report, in order of first appearance."""
    return list(dict.fromkeys(result.metric_name for case in report.cases for result in case.metrics))


def _case_row(case: CaseResult) -> dict[str, Any]:
    actual = case.agent_run.invocations
    expected = case.expected_invocations
    prompts = expected if expected is not None else actual
    return {
        "eval_set_id": case.eval_set_id,
        "eval_id": case.eval_id,
        "run_index": case.run_index,
        "prompt": turn_texts([invocation.user_content for invocation in prompts]),
        "response": turn_texts([invocation.final_response for invocation in actual]),
        "reference": None if expected is None else turn_texts([i.final_response for i in expected]),
        "predicted_trajectory": trajectory(actual),
        "reference_trajectory": None if expected is None else trajectory(expected),
        "latency_in_seconds": case.agent_run.latency_seconds,
        "failure": case.failure,
    }


def _metric_cells(name: str, result: MetricResult | None) -> dict[str, Any]:
    """`<metric>/score` and `<metric>/explanation` (the explanation, else the metric's error)."""
    if result is None:
        return {f"{name}/score": None, f"{name}/explanation": None}
    return {f"{name}/score": result.score, f"{name}/explanation": result.explanation or result.error}


def metrics_table_rows(report: RunReport) -> list[dict[str, Any]]:
    """The rows of `metrics_table` as plain dicts (no pandas needed)."""
    names = metric_names(report)
    rows = []
    for case in report.cases:
        by_name = {result.metric_name: result for result in case.metrics}
        row = _case_row(case)
        for name in names:
            row.update(_metric_cells(name, by_name.get(name)))
        rows.append(row)
    return rows


def metrics_table(report: RunReport) -> Any:
    """Vertex AI's `metrics_table`: one row per case run.

    Args:
        report: the run report.

    Returns:
        A pandas DataFrame with `CASE_COLUMNS`, then `<metric>/score` and `<metric>/explanation` for every
        metric of the run (None where a case run has no result for that metric).
    """
    names = metric_names(report)
    columns = [*CASE_COLUMNS, *(f"{name}/{kind}" for name in names for kind in ("score", "explanation"))]
    return _pandas().DataFrame(metrics_table_rows(report), columns=columns)


def summary_metrics(report: RunReport) -> Any:
    """Vertex AI's `summary_metrics`: one row of aggregates over the case runs.

    Means skip case runs without a score; `/std` is the sample standard deviation (ddof=1), NaN with fewer
    than two scores, as pandas (and so Vertex AI) computes it.

    Args:
        report: the run report.

    Returns:
        A one-row pandas DataFrame: `row_count`, `<metric>/mean` and `<metric>/std` for every metric,
        `latency_in_seconds/mean`, `failure/mean`.
    """
    pd = _pandas()
    table = metrics_table(report)
    row: dict[str, Any] = {"row_count": len(table)}
    for name in metric_names(report):
        scores = pd.to_numeric(table[f"{name}/score"], errors="coerce")
        row[f"{name}/mean"] = float(scores.mean())
        row[f"{name}/std"] = float(scores.std(ddof=1))
    row["latency_in_seconds/mean"] = float(table["latency_in_seconds"].astype(float).mean())
    row["failure/mean"] = float(table["failure"].astype(float).mean())
    return pd.DataFrame([row])


def _json_value(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def frame_records(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame's rows as JSON-ready dicts: NaN becomes None, trajectory cells stay lists."""
    return [{key: _json_value(value) for key, value in row.items()} for row in frame.to_dict(orient="records")]


def _csv_ready(frame: Any) -> Any:
    """A copy whose list cells (trajectories) are JSON strings, so `json.loads` of a cell gives the list back."""
    copy = frame.copy()
    for column in copy.columns:
        if copy[column].map(lambda value: isinstance(value, list | dict)).any():
            copy[column] = copy[column].map(lambda v: json.dumps(v, ensure_ascii=False) if v is not None else None)
    return copy


def write_table(frame: Any, path: str | Path) -> Path:
    """Write a table as `.csv`, `.json` (a list of records) or `.jsonl` (one record per line).

    In CSV, list cells (the trajectories) are written as JSON; a None cell is empty.

    Args:
        frame: a DataFrame such as `metrics_table(report)`.
        path: the file to write; its suffix picks the format.

    Returns:
        The path written.

    Raises:
        ValueError: the suffix is not one of .csv, .json, .jsonl.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".csv":
        _csv_ready(frame).to_csv(target, index=False, encoding="utf-8")
    elif suffix == ".json":
        target.write_text(json.dumps(frame_records(frame), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    elif suffix == ".jsonl":
        lines = (json.dumps(record, ensure_ascii=False) for record in frame_records(frame))
        target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    else:
        raise ValueError(f"cannot write a table to {str(target)!r}: use a .csv, .json or .jsonl file")
    return target
