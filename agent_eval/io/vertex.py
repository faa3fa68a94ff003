"""Vertex AI style datasets: a pandas DataFrame, `.jsonl`, `.csv` or a `.json` list of rows.

Columns (all optional, at least one needed): `prompt`, `reference`, `reference_trajectory` (what is expected),
`response`, `predicted_trajectory` (what the agent did). A trajectory is a list, or a JSON string of a list, of
`{tool_name, tool_input}` (`tool_input` an object or a JSON string of one; the exact rules are in
`agent_eval.io.tool_steps`). Each row becomes an eval case with one invocation: the prompt is the user content,
the reference the expected final response, the reference trajectory the expected tool uses. When a row has
`response` or `predicted_trajectory`, those become the case's `actual_conversation`: the row is scored as it is,
with no agent ("bring your own dataset"). The case id is the row's `eval_id` or `id` column, else `row_0001`,
`row_0002`, ... in file order (the row's number, counting rows, not header or blank lines). Every error names
the file, the case and the column (with the step's index inside a trajectory).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import EvalInputError
from agent_eval.io.files import read_text
from agent_eval.io.tool_steps import calls_from_steps
from agent_eval.schema import EvalCase, EvalSet, validation_input_error

__all__ = ["VERTEX_COLUMNS", "eval_set_from_rows", "is_vertex_rows", "read_csv_rows", "read_jsonl_rows"]

VERTEX_COLUMNS = ("prompt", "reference", "reference_trajectory", "response", "predicted_trajectory")
PREDICTION_COLUMNS = ("response", "predicted_trajectory")
_LEGACY_KEYS = {"query", "expected_tool_use", "data"}


def is_vertex_rows(data: Any) -> bool:
    """A JSON list whose objects have Vertex columns and none of ADK's legacy keys (`query`, `data`)."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(row, dict) and not _LEGACY_KEYS & row.keys() for row in data)
        and any(column in row for row in data for column in VERTEX_COLUMNS)
    )


def read_jsonl_rows(path: Path) -> list[dict[str, Any]]:
    """One JSON object per non-empty line; a bad line is reported with its number."""
    rows = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise EvalInputError(
                f"invalid JSON at line {number} column {error.colno}: {error.msg}", file=path
            ) from None
        if not isinstance(row, dict):
            raise EvalInputError(f"line {number} is a {type(row).__name__}, expected a JSON object", file=path)
        rows.append(row)
    return rows


def read_csv_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV file with a header; empty cells count as missing."""
    text = read_text(path)
    csv.field_size_limit(max(len(text), 131072))  # a cell may be as long as the file (which is size-checked)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
        rows = list(reader)
    except csv.Error as error:
        raise EvalInputError(f"invalid CSV at line {reader.line_num}: {error}", file=path) from None
    if not any(column in header for column in VERTEX_COLUMNS):
        raise EvalInputError(
            f"no Vertex columns in the header {header!r}; expected some of {', '.join(VERTEX_COLUMNS)}", file=path
        )
    return [{key: value for key, value in row.items() if key and value not in (None, "")} for row in rows]


def eval_set_from_rows(rows: list[dict[str, Any]], eval_set_id: str, file: Path | str) -> EvalSet:
    """An eval set with one single-turn case per row (see the module docstring)."""
    if not rows:
        raise EvalInputError("the dataset has no rows", file=file)
    cases = [_row_case(row, index, file) for index, row in enumerate(rows)]
    eval_set = EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=cases)
    ids = [case.eval_id for case in cases]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    if duplicate is not None:
        raise EvalInputError("duplicate eval_id", file=file, case=duplicate, field="eval_id")
    return eval_set


def _row_case(row: dict[str, Any], index: int, file: Path | str) -> EvalCase:
    eval_id = str(row.get("eval_id") or row.get("id") or f"row_{index + 1:04d}")
    user = {"role": "user", "parts": [{"text": _text(row, "prompt", eval_id, file)}]}
    expected: dict[str, Any] = {"invocation_id": f"{eval_id}-0", "user_content": user}
    if "reference" in row:
        expected["final_response"] = _model_text(_text(row, "reference", eval_id, file))
    if "reference_trajectory" in row:
        expected["intermediate_data"] = {"tool_uses": _trajectory(row, "reference_trajectory", eval_id, file)}
    payload: dict[str, Any] = {"eval_id": eval_id, "conversation": [expected]}
    if any(column in row for column in PREDICTION_COLUMNS):
        payload["actual_conversation"] = [_actual(row, user, eval_id, file)]
    try:
        return EvalCase.model_validate(payload)
    except ValidationError as error:
        raise validation_input_error(error, EvalCase, file=file, data=payload, case=eval_id) from None


def _actual(row: dict[str, Any], user: dict[str, Any], eval_id: str, file: Path | str) -> dict[str, Any]:
    actual: dict[str, Any] = {"invocation_id": f"{eval_id}-0", "user_content": user}
    if "response" in row:
        actual["final_response"] = _model_text(_text(row, "response", eval_id, file))
    if "predicted_trajectory" in row:
        actual["intermediate_data"] = {"tool_uses": _trajectory(row, "predicted_trajectory", eval_id, file)}
    return actual


def _model_text(text: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"text": text}]}


def _text(row: dict[str, Any], column: str, eval_id: str, file: Path | str) -> str:
    value = row.get(column, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise EvalInputError(f"expected text, got {type(value).__name__}", file=file, case=eval_id, field=column)
    return value


def _trajectory(row: dict[str, Any], column: str, eval_id: str, file: Path | str) -> list[dict[str, Any]]:
    """`[{tool_name, tool_input}]` (or its JSON string) as genai function calls `[{name, args}]`."""
    return calls_from_steps(row[column], file=file, case=eval_id, field=column, json_strings=True)
