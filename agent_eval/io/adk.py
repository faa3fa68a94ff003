"""ADK and ADK-Rust eval files: EvalSet JSON, ADK's legacy list format, ADK-Rust test files and eval sets.

- ADK EvalSet (`*.evalset.json`, `*.test.json`): snake_case or camelCase, including files full of `null`s.
- ADK legacy list `[{query, expected_tool_use, reference}]` (one file = one case) and the grouped form
  `[{name, data, initial_session}]` (one case per group); `initial.session.json` beside the file gives the
  session input.
- ADK-Rust test files: the same shape plus `tags`, `description`, `tool_uses[{name, args, expected_response}]`
  (the expected response becomes a tool response), `intermediate_responses` as Contents, untagged
  `{name, args}` / `{name, response}` parts; and ADK-Rust eval sets `{test_files: [...], eval_cases: [...]}`
  whose test files are relative to the eval set's folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.genai import types as genai_types
from pydantic import ValidationError

from agent_eval.errors import EvalInputError
from agent_eval.io.files import EVAL_FILE_SUFFIXES, read_json
from agent_eval.io.tool_steps import calls_from_steps, shown
from agent_eval.schema import EvalCase, EvalSet, IntermediateData, InvocationEvents, validation_input_error

__all__ = ["eval_set_from_json", "legacy_rows_to_eval_set", "rust_to_adk_case"]

INITIAL_SESSION_FILE_NAME = "initial.session.json"


def eval_set_from_json(data: Any, path: Path, *, root: Path | None = None) -> EvalSet:
    """An EvalSet from a parsed ADK / ADK-Rust / legacy JSON value (`root`: the folder it was found under)."""
    if isinstance(data, list):
        return legacy_rows_to_eval_set(data, path, root=root)
    if not isinstance(data, dict):
        raise EvalInputError(f"expected a JSON object or list, got {type(data).__name__}", file=path)
    if "test_files" in data or "testFiles" in data:
        data = _inline_test_files(data, path)
    cases = data.get("eval_cases", data.get("evalCases"))
    if isinstance(cases, list):
        data = {**data, "eval_cases": [rust_to_adk_case(c) for c in cases]}
        data.pop("evalCases", None)
    try:
        eval_set = EvalSet.model_validate(data)
    except ValidationError as error:
        raise validation_input_error(error, EvalSet, file=path, data=data) from None
    check_unique_case_ids(eval_set, path)
    check_tool_call_names(eval_set, path)
    return eval_set


def rust_to_adk_case(case: Any) -> Any:
    """ADK-Rust's additions mapped onto ADK's shape; an ADK case passes through unchanged."""
    if not isinstance(case, dict) or not isinstance(case.get("conversation"), list):
        return case
    return {**case, "conversation": [_rust_turn(turn) for turn in case["conversation"]]}


def _rust_turn(turn: Any) -> Any:
    if not isinstance(turn, dict):
        return turn
    turn = {
        key: _rust_content(value) if key in ("user_content", "final_response") else value for key, value in turn.items()
    }
    data = turn.get("intermediate_data")
    if isinstance(data, dict) and isinstance(data.get("tool_uses"), list):
        turn["intermediate_data"] = _rust_intermediate(data)
    return turn


def _rust_intermediate(data: dict[str, Any]) -> dict[str, Any]:
    uses = [dict(use) if isinstance(use, dict) else use for use in data["tool_uses"]]
    responses = list(data.get("tool_responses") or [])
    for use in uses:
        if isinstance(use, dict) and "expected_response" in use:
            expected = use.pop("expected_response")
            if expected is not None:
                response = expected if isinstance(expected, dict) else {"result": expected}
                responses.append({"name": use.get("name"), "response": response})
    intermediate = [_rust_intermediate_response(item) for item in data.get("intermediate_responses") or []]
    return {**data, "tool_uses": uses, "tool_responses": responses, "intermediate_responses": intermediate}


def _rust_intermediate_response(item: Any) -> Any:
    """ADK-Rust writes intermediate responses as Contents; ADK as `[author, parts]` pairs."""
    if isinstance(item, dict) and "parts" in item:
        content = _rust_content(item)
        return [content.get("role") or "agent", content["parts"]]
    return item


def _rust_content(content: Any) -> Any:
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return content
    return {**content, "parts": [_rust_part(part) for part in content["parts"]]}


def _rust_part(part: Any) -> Any:
    """ADK-Rust's untagged parts: `{name, args}` is a function call, `{name, response}` a function response."""
    if isinstance(part, dict) and "name" in part and "text" not in part:
        if "args" in part:
            return {"function_call": {"name": part["name"], "args": part["args"]}}
        if "response" in part:
            return {"function_response": {"name": part["name"], "response": part["response"]}}
    return part


def _inline_test_files(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """ADK-Rust's eval set: the cases of every listed test file (relative to this file) after the inline ones."""
    files = data.get("test_files", data.get("testFiles")) or []
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise EvalInputError("expected a list of file paths", file=path, field="test_files")
    cases = list(data.get("eval_cases", data.get("evalCases")) or [])
    for position, name in enumerate(files):
        if not (path.parent / name).is_file():
            raise EvalInputError(f"no such test file {name!r}", file=path, field=f"test_files[{position}]")
        included = read_json(path.parent / name)
        if not isinstance(included, dict) or not isinstance(included.get("eval_cases"), list):
            raise EvalInputError("a test file must be an object with 'eval_cases'", file=path.parent / name)
        cases.extend(included["eval_cases"])
    rest = {k: v for k, v in data.items() if k not in ("test_files", "testFiles", "eval_cases", "evalCases")}
    return {**rest, "eval_cases": cases}


def legacy_rows_to_eval_set(data: list[Any], path: Path, *, root: Path | None = None) -> EvalSet:
    """Convert ADK's legacy list format to an EvalSet.

    One file is one eval case whose invocations are the rows (`query` → user content, `reference` → final
    response, `expected_tool_use[{tool_name, tool_input}]` → tool uses). The grouped form
    `[{name, data, initial_session}]` gives one case per group. Unlike ADK, which draws a random eval set id,
    the id is the file's path relative to `root` (or its name when loaded alone) without its suffix, e.g.
    `test_files/simple_test`, so history and caching stay stable across runs and two files of the same name
    in different folders stay apart.
    """
    set_id = _legacy_set_id(path, root)
    session = _initial_session_beside(path)
    if data and all(isinstance(group, dict) and "data" in group for group in data):
        groups = [
            (str(g.get("name") or f"{set_id}_{i}"), g["data"], g.get("initial_session")) for i, g in enumerate(data)
        ]
    else:
        groups = [(set_id, data, session)]
    cases = [_legacy_case(name, rows, initial or session, path) for name, rows, initial in groups]
    eval_set = EvalSet(eval_set_id=set_id, name=set_id, eval_cases=cases)
    check_unique_case_ids(eval_set, path)
    return eval_set


def _legacy_case(name: str, rows: Any, session: dict[str, Any] | None, path: Path) -> EvalCase:
    if not isinstance(rows, list):
        raise EvalInputError(
            "expected a list of {query, expected_tool_use, reference} rows", file=path, case=name, field="data"
        )
    invocations = [_legacy_invocation(row, i, name, path) for i, row in enumerate(rows)]
    payload: dict[str, Any] = {"eval_id": name, "conversation": invocations}
    if session:
        payload["session_input"] = {
            "app_name": session.get("app_name", ""),
            "user_id": session.get("user_id", ""),
            "state": session.get("state", {}),
        }
    try:
        return EvalCase.model_validate(payload)
    except ValidationError as error:
        raise validation_input_error(error, EvalCase, file=path, data=payload, case=name) from None


def _legacy_invocation(row: Any, index: int, case: str, path: Path) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise EvalInputError(f"expected an object, got {type(row).__name__}", file=path, case=case, field=f"[{index}]")
    if not isinstance(row.get("query"), str):
        raise EvalInputError("'query' must be a string", file=path, case=case, field=f"[{index}].query")
    where = f"[{index}].expected_tool_use"
    tool_uses = calls_from_steps(row.get("expected_tool_use"), file=path, case=case, field=where)
    intermediate = _legacy_intermediate_responses(row, f"[{index}].expected_intermediate_agent_responses", case, path)
    invocation: dict[str, Any] = {
        "invocation_id": f"{case}-{index}",
        "user_content": {"role": "user", "parts": [{"text": row["query"]}]},
        "intermediate_data": {"tool_uses": tool_uses, "intermediate_responses": intermediate},
    }
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        message = f"'reference' must be a string, got {shown(reference)}"
        raise EvalInputError(message, file=path, case=case, field=f"[{index}].reference")
    if reference is not None:
        invocation["final_response"] = {"role": "model", "parts": [{"text": reference}]}
    return invocation


def _legacy_intermediate_responses(row: dict[str, Any], field: str, case: str, path: Path) -> list[Any]:
    """`expected_intermediate_agent_responses[{author, text}]` as ADK's `(author, parts)` pairs."""
    responses = row.get("expected_intermediate_agent_responses")
    if responses is None:
        return []
    if not isinstance(responses, list) or not all(isinstance(r, dict) for r in responses):
        message = f"expected a list of {{author, text}}, got {shown(responses)}"
        raise EvalInputError(message, file=path, case=case, field=field)
    return [(r.get("author", ""), [{"text": r.get("text", "")}]) for r in responses]


def _initial_session_beside(path: Path) -> dict[str, Any] | None:
    session_file = path.parent / INITIAL_SESSION_FILE_NAME
    if not session_file.is_file():
        return None
    data = read_json(session_file)
    if not isinstance(data, dict):
        raise EvalInputError("expected a JSON object {app_name, user_id, state}", file=session_file)
    return data


def check_unique_case_ids(eval_set: EvalSet, path: Path) -> None:
    """Two cases of one eval set may not share an id."""
    seen: set[str] = set()
    for case in eval_set.eval_cases:
        if case.eval_id in seen:
            raise EvalInputError("duplicate eval_id", file=path, case=case.eval_id, field="eval_id")
        seen.add(case.eval_id)


def check_tool_call_names(eval_set: EvalSet, path: Path) -> None:
    """Every tool call (expected or actual, in either intermediate-data shape) names its tool.

    genai's `FunctionCall` makes `name` optional, so a call written without one would load and never match.
    """
    for case in eval_set.eval_cases:
        for field, call in _tool_calls_with_fields(case):
            if call.name is None:
                raise EvalInputError("is required but missing", file=path, case=case.eval_id, field=f"{field}.name")
            if not call.name.strip():
                message = f"expected the tool's name (a non-empty string), got {call.name!r}"
                raise EvalInputError(message, file=path, case=case.eval_id, field=f"{field}.name")


def _tool_calls_with_fields(case: EvalCase) -> Iterator[tuple[str, genai_types.FunctionCall]]:
    """Each tool call of a case's conversations with its place in the file (`conversation.0....tool_uses.1`)."""
    for key, invocations in (("conversation", case.conversation), ("actual_conversation", case.actual_conversation)):
        for i, invocation in enumerate(invocations or []):
            yield from _tool_calls_of_data(invocation.intermediate_data, f"{key}.{i}.intermediate_data")


def _tool_calls_of_data(
    data: IntermediateData | InvocationEvents | None, at: str
) -> Iterator[tuple[str, genai_types.FunctionCall]]:
    if isinstance(data, IntermediateData):
        yield from ((f"{at}.tool_uses.{j}", call) for j, call in enumerate(data.tool_uses))
        return
    for k, event in enumerate(data.invocation_events if data is not None else []):
        for m, part in enumerate((event.content.parts if event.content is not None else None) or []):
            if part.function_call is not None:
                yield f"{at}.invocation_events.{k}.content.parts.{m}.function_call", part.function_call


def _legacy_set_id(path: Path, root: Path | None) -> str:
    name = path.relative_to(root).as_posix() if root is not None else path.name
    for suffix in (*EVAL_FILE_SUFFIXES, ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
