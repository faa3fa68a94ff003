"""Tool calls written as steps `[{tool_name, tool_input}]` (Vertex datasets, ADK's legacy files), checked.

Rules: the steps are a list (Vertex also takes a JSON string of one; a missing or null list is no calls); each
step is an object whose `tool_name` is a non-empty string; `tool_input` is an object (Vertex also takes a JSON
string of one), and a missing or null `tool_input` is no arguments. Any other value (`[]`, `""`, `0`, `"on"`) is
an error naming the file, the case and the field, never read as "no arguments". Other keys of a step are ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_eval.errors import EvalInputError

__all__ = ["calls_from_steps", "parse_json_string", "shown"]


def shown(value: Any, limit: int = 60) -> str:
    """`repr(value)`, cut to `limit` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_json_string(value: Any, *, file: Path | str, case: str, field: str) -> Any:
    """`value` parsed when it is a string of JSON, else as it is; a string that is not JSON is an error."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        message = f"not valid JSON ({error.msg} at column {error.colno}): {shown(value, 40)}"
        raise EvalInputError(message, file=file, case=case, field=field) from None


def calls_from_steps(
    steps: Any, *, file: Path | str, case: str, field: str, json_strings: bool = False
) -> list[dict[str, Any]]:
    """`[{tool_name, tool_input}]` as genai function calls `[{name, args}]` (the module docstring has the rules).

    Args:
        steps: the trajectory as read from the file.
        file: the file, for errors.
        case: the case's id, for errors.
        field: where the steps are in the case (a column, or `[0].expected_tool_use`), for errors.
        json_strings: whether the steps and each `tool_input` may be JSON strings (Vertex datasets).

    Raises:
        EvalInputError: a malformed trajectory, step, tool name or tool input, naming the file, case and field.
    """
    if json_strings:
        steps = parse_json_string(steps, file=file, case=case, field=field)
    if steps is None:
        return []
    if not isinstance(steps, list):
        message = f"expected a list of {{tool_name, tool_input}}, got {type(steps).__name__} {shown(steps)}"
        raise EvalInputError(message, file=file, case=case, field=field)
    where = {"file": file, "case": case}
    return [_call(step, f"{field}[{i}]", where, json_strings) for i, step in enumerate(steps)]


def _call(step: Any, field: str, where: dict[str, Any], json_strings: bool) -> dict[str, Any]:
    if not isinstance(step, dict):
        message = f"expected an object {{tool_name, tool_input}}, got {type(step).__name__} {shown(step)}"
        raise EvalInputError(message, **where, field=field)
    name = step.get("tool_name")
    if name is None:
        raise EvalInputError(
            f"is required but missing (the step is {shown(step)})", **where, field=f"{field}.tool_name"
        )
    if not isinstance(name, str) or not name.strip():
        message = f"expected the tool's name (a non-empty string), got {shown(name)}"
        raise EvalInputError(message, **where, field=f"{field}.tool_name")
    return {"name": name, "args": _arguments(step.get("tool_input"), f"{field}.tool_input", where, json_strings)}


def _arguments(tool_input: Any, field: str, where: dict[str, Any], json_strings: bool) -> dict[str, Any]:
    if tool_input is None:
        return {}
    args = parse_json_string(tool_input, **where, field=field) if json_strings else tool_input
    if not isinstance(args, dict):
        accepted = "an object of arguments" + (" or a JSON string of one" if json_strings else "")
        raise EvalInputError(f"expected {accepted}, got {shown(tool_input)}", **where, field=field)
    return args
