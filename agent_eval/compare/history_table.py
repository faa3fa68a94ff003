"""`agent-eval history`'s table: one row per run of `agent_eval.compare.run_history.history()`, every column at
full width for pipes and files, or fitted into a terminal's width.

Internal: the interface is the `agent-eval history` command; this module's names may change between releases."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from agent_eval.render.console import TableColumn, format_table, format_usd

__all__ = ["HISTORY_PRIORITY", "format_history"]


def format_history(frame: Any, width: int | None = None) -> str:
    """`history()` as a table, one row per run: id, start, status, pass rate (passed/evaluated, the not-evaluated
    count after it; `-` until completed), pass@k (the highest k) and flaky cases, the regression verdict, the
    source run (`rerun of RUN`, `subset rerun of RUN`, `rescore of RUN`; a column only when a run has one), agent,
    eval sets, metric means. `-` where a run has no value.

    Without `width`: every column, whole run ids, times to the second. With it (a terminal's width), run ids
    are cut to 8 characters (more when two shown runs share them; any 6 or more name a run), times to the minute,
    and the columns that fit in `width` are shown, kept in the order of `HISTORY_PRIORITY` (the means wrap
    onto more lines before they go; `agent_eval.render.console.format_table`).
    """
    if frame.empty:
        return "No runs."
    rows = frame.to_dict(orient="records")
    short = _shortener([row["run_id"] for row in rows]) if width is not None else str
    columns = _history_columns(rows, short, fitted=width is not None)
    return "\n".join(format_table(columns, width, HISTORY_PRIORITY))


HISTORY_PRIORITY = (
    "run",
    "status",
    "pass_rate",
    "started",
    "regression",
    "source",
    "eval_sets",
    "means",
    "agent",
    "pass_at_k",
)
"""The columns of `format_history` fitted into a width, the first kept longest."""

_RATE_WIDTH = 16
_SHORT_ID = 8
_ID_WIDTH = 32
"""A run id's length: whole ids take this much, so that full tables line up from one command to the next."""


def _history_columns(rows: list[dict[str, Any]], short: Callable[[str], str], *, fitted: bool) -> list[TableColumn]:
    rate_width = max(len("PASS RATE"), *(len(_rate(row)) for row in rows)) if fitted else _RATE_WIDTH
    started = "%Y-%m-%d %H:%M" if fitted else "%Y-%m-%d %H:%M:%S"
    columns = [
        TableColumn("run", "RUN", [short(row["run_id"]) for row in rows], min_width=0 if fitted else _ID_WIDTH),
        TableColumn("started", "STARTED (UTC)", [f"{row['started_at']:{started}}" for row in rows]),
        TableColumn("status", "STATUS", [row["status"] for row in rows], min_width=len("completed")),
        TableColumn("pass_rate", f"{'PASS RATE':>{rate_width}}", [_rate_cell(row, rate_width) for row in rows]),
        TableColumn("pass_at_k", "PASS@K", [_pass_at_k_cell(row) for row in rows]),
        TableColumn("regression", "REGRESSION", [_regression_cell(row, short) for row in rows]),
        TableColumn("cost", "COST", [_cost_cell(row) for row in rows]),
        TableColumn("source", "SOURCE", [_source_cell(row, short) for row in rows]),
        TableColumn("agent", "AGENT", [row["agent_reference"] for row in rows]),
        TableColumn("eval_sets", "EVAL SETS", [",".join(row["eval_set_ids"]) for row in rows]),
        TableColumn("means", "MEANS", [_means_cell(row) for row in rows], wraps=True),
    ]
    has_source = any(isinstance(row.get("source_run_id"), str) for row in rows)
    has_cost = any(not _missing(row.get("tokens")) for row in rows)
    return [
        column for column in columns if (column.name != "source" or has_source) and (column.name != "cost" or has_cost)
    ]


def _cost_cell(row: dict[str, Any]) -> str:
    """`$0.0412`, `?` when tokens were reported but their cost is unknown, `-` when none were."""
    if _missing(row.get("tokens")):
        return "-"
    cost = row.get("cost_usd")
    return format_usd(cost) if isinstance(cost, int | float) and not _missing(cost) else "?"


def _shortener(run_ids: list[str]) -> Callable[[str], str]:
    """Cuts run ids to `_SHORT_ID` characters, or as many more as tell the given ids apart."""
    length = _SHORT_ID
    while len({run_id[:length] for run_id in run_ids}) < len(set(run_ids)):
        length += 1
    return lambda run_id: run_id[:length]


def _rate(row: dict[str, Any]) -> str:
    """`50.0% (1/2)`; `-` for a run not completed."""
    if row["status"] != "completed":
        return "-"
    evaluated = row["passed"] + row["failed"]
    rate = row["passed"] / evaluated if evaluated else 0.0
    return f"{rate:.1%} ({row['passed']}/{evaluated})"


def _rate_cell(row: dict[str, Any], width: int) -> str:
    """The rate right-aligned in `width`, `+1 not evaluated` after it when some case run was not."""
    not_evaluated = (row.get("not_evaluated") or 0) if row["status"] == "completed" else 0
    return f"{_rate(row):>{width}}" + (f" +{not_evaluated} not evaluated" if not_evaluated else "")


def _text_cell(value: Any) -> str:
    return "-" if _missing(value) else str(value)


def _pass_at_k_cell(row: dict[str, Any]) -> str:
    """`pass@3 0.950, 1 flaky` (the highest k), or `-` when cases ran once."""
    values = row.get("pass_at_k")
    if not isinstance(values, dict) or not values:
        return "-"
    k = max(values, key=int)
    flaky = row.get("flaky_cases") or 0
    return f"pass@{k} {values[k]:.3f}" + (f", {flaky} flaky" if flaky else "")


def _regression_cell(row: dict[str, Any], short: Callable[[str], str]) -> str:
    """The verdict (`regressed vs RUN`, `ok vs RUN`, ...), its baseline's id cut as the table cuts ids."""
    verdict, baseline = _text_cell(row.get("regression")), row.get("baseline_run_id")
    if isinstance(baseline, str) and verdict.endswith(f" vs {baseline}"):
        return verdict.removesuffix(baseline) + short(baseline)
    return verdict


def _source_cell(row: dict[str, Any], short: Callable[[str], str]) -> str:
    """E.g. `subset rerun of 1a2b3c4d`, or `-` for a run not made from another."""
    source = row.get("source_run_id")
    return f"{row['source']} of {short(source)}" if isinstance(source, str) else "-"


def _means_cell(row: dict[str, Any]) -> str:
    """`m=0.550 n=1.000`: each metric's mean, in name order."""
    means = [column for column in row if column.endswith("/mean") and not _missing(row[column])]
    return " ".join(f"{column.removesuffix('/mean')}={row[column]:.3f}" for column in means)


def _missing(value: Any) -> bool:
    """None or NaN (a pandas frame's missing value)."""
    return value is None or (isinstance(value, float) and math.isnan(value))
