"""Loading eval sets and eval configs from disk, with errors that name the file, the case and the field.

Supported now: ADK EvalSet JSON (`*.evalset.json`, `*.test.json`, snake_case or camelCase, `null`-laden files
of older ADK versions) and ADK's legacy list format (`[{query, expected_tool_use, reference}]`, or the grouped
`[{name, data, initial_session}]`), from a file, a directory (recursive, sorted) or several paths. A path may
end in `:case_id1,case_id2` to select cases, as in `adk eval`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from google.genai import types as genai_types
from pydantic import ValidationError

from agent_eval.errors import EvalInputError, from_validation_error
from agent_eval.schema import EvalCase, EvalConfig, EvalSet

__all__ = [
    "CONFIG_FILE_NAME",
    "EVAL_FILE_SUFFIXES",
    "find_config_file",
    "find_eval_files",
    "legacy_rows_to_eval_set",
    "load_eval_config",
    "load_eval_set",
    "load_eval_sets",
]

EVAL_FILE_SUFFIXES = (".evalset.json", ".test.json")
CONFIG_FILE_NAME = "test_config.json"
INITIAL_SESSION_FILE_NAME = "initial.session.json"


def load_eval_sets(paths: str | Path | Sequence[str | Path]) -> list[EvalSet]:
    """Load every eval set named by `paths` (files, directories, `FILE:case1,case2` selections).

    Raises:
        EvalInputError: a path does not exist, holds no eval file, or a file is not a valid eval set.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    eval_sets: list[EvalSet] = []
    for item in items:
        path, selected = _split_case_selection(str(item))
        root = Path(path) if Path(path).is_dir() else None
        for file in find_eval_files(path):
            eval_sets.append(_select_cases(load_eval_set(file, root=root), selected, file))
    _check_unique_set_ids(eval_sets)
    return eval_sets


def find_eval_files(path: str | Path) -> list[Path]:
    """The eval files at `path`: the file itself, or every `*.evalset.json` / `*.test.json` below a folder."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.exists():
        raise EvalInputError("no such file or directory", file=root)
    files = sorted(p for p in root.rglob("*.json") if p.name.endswith(EVAL_FILE_SUFFIXES))
    if not files:
        raise EvalInputError(f"no eval files ({', '.join('*' + s for s in EVAL_FILE_SUFFIXES)}) found", file=root)
    return files


def load_eval_set(file: str | Path, *, root: Path | None = None) -> EvalSet:
    """Load one eval file: ADK EvalSet JSON, or the legacy list format when the top level is a list.

    `root` is the folder the file was found under; it names legacy eval sets (see `legacy_rows_to_eval_set`).
    """
    path = Path(file)
    data = _read_json(path)
    if isinstance(data, list):
        return legacy_rows_to_eval_set(data, path, root=root)
    if not isinstance(data, dict):
        raise EvalInputError(f"expected a JSON object or list, got {type(data).__name__}", file=path)
    try:
        eval_set = EvalSet.model_validate(data)
    except ValidationError as error:
        raise from_validation_error(error, file=path, data=data) from None
    _check_unique_case_ids(eval_set.eval_cases, path)
    return eval_set


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
    _check_unique_case_ids(eval_set.eval_cases, path)
    return eval_set


def _legacy_case(name: str, rows: Any, session: dict[str, Any] | None, path: Path) -> EvalCase:
    if not isinstance(rows, list):
        raise EvalInputError(
            "expected a list of {query, expected_tool_use, reference} rows",
            file=path,
            case=name,
            field="data",
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
        raise from_validation_error(error, file=path, case=name) from None


def _legacy_invocation(row: Any, index: int, case: str, path: Path) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise EvalInputError(f"expected an object, got {type(row).__name__}", file=path, case=case, field=f"[{index}]")
    if not isinstance(row.get("query"), str):
        raise EvalInputError("'query' must be a string", file=path, case=case, field=f"[{index}].query")
    tool_uses = []
    for j, use in enumerate(row.get("expected_tool_use") or []):
        if not isinstance(use, dict) or not isinstance(use.get("tool_name"), str):
            raise EvalInputError(
                "expected {tool_name, tool_input}",
                file=path,
                case=case,
                field=f"[{index}].expected_tool_use[{j}]",
            )
        tool_uses.append({"name": use["tool_name"], "args": use.get("tool_input") or {}})
    intermediate = [
        (r.get("author", ""), [{"text": r.get("text", "")}])
        for r in row.get("expected_intermediate_agent_responses") or []
        if isinstance(r, dict)
    ]
    invocation: dict[str, Any] = {
        "invocation_id": f"{case}-{index}",
        "user_content": genai_types.Content(role="user", parts=[genai_types.Part(text=row["query"])]),
        "intermediate_data": {"tool_uses": tool_uses, "intermediate_responses": intermediate},
    }
    if isinstance(row.get("reference"), str):
        invocation["final_response"] = genai_types.Content(
            role="model", parts=[genai_types.Part(text=row["reference"])]
        )
    return invocation


def load_eval_config(file: str | Path | None) -> EvalConfig:
    """Load an ADK `test_config.json`; `None` gives ADK's default criteria."""
    if file is None:
        return EvalConfig()
    path = Path(file)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise EvalInputError("expected a JSON object with 'criteria'", file=path)
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as error:
        raise from_validation_error(error, file=path, data=data) from None


def find_config_file(paths: Iterable[str | Path]) -> Path | None:
    """`test_config.json` in the first eval path's folder (or the folder itself), as `adk eval` does."""
    for item in paths:
        path = Path(_split_case_selection(str(item))[0])
        folder = path if path.is_dir() else path.parent
        candidate = folder / CONFIG_FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise EvalInputError("no such file", file=path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise EvalInputError(f"not UTF-8 text (byte {error.start})", file=path) from None
    if not text.strip():
        raise EvalInputError("the file is empty", file=path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise EvalInputError(
            f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}", file=path
        ) from None


def _initial_session_beside(path: Path) -> dict[str, Any] | None:
    session_file = path.parent / INITIAL_SESSION_FILE_NAME
    if not session_file.is_file():
        return None
    data = _read_json(session_file)
    if not isinstance(data, dict):
        raise EvalInputError("expected a JSON object {app_name, user_id, state}", file=session_file)
    return data


def _split_case_selection(item: str) -> tuple[str, list[str] | None]:
    """`FILE:case1,case2` → (FILE, [case1, case2]) when FILE exists; any other string → (it, None).

    Case ids may contain `/` (ADK names legacy cases after their file path), so the split is on the last `:`
    whose left side is an existing path.
    """
    head, sep, tail = item.rpartition(":")
    if not sep or not head or Path(item).exists() or not Path(head).exists():
        return item, None
    return head, [case.strip() for case in tail.split(",") if case.strip()]


def _select_cases(eval_set: EvalSet, selected: list[str] | None, file: Path) -> EvalSet:
    if selected is None:
        return eval_set
    known = {case.eval_id for case in eval_set.eval_cases}
    missing = [case for case in selected if case not in known]
    if missing:
        raise EvalInputError(f"no case {missing[0]!r}; cases are {sorted(known)}", file=file)
    keep = [case for case in eval_set.eval_cases if case.eval_id in selected]
    return eval_set.model_copy(update={"eval_cases": keep})


def _check_unique_case_ids(cases: list[EvalCase], path: Path) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.eval_id in seen:
            raise EvalInputError("duplicate eval_id", file=path, case=case.eval_id, field="eval_id")
        seen.add(case.eval_id)


def _check_unique_set_ids(eval_sets: list[EvalSet]) -> None:
    seen: set[str] = set()
    for eval_set in eval_sets:
        if eval_set.eval_set_id in seen:
            raise EvalInputError(f"eval_set_id {eval_set.eval_set_id!r} is loaded twice; give each eval set its own id")
        seen.add(eval_set.eval_set_id)


def _legacy_set_id(path: Path, root: Path | None) -> str:
    name = path.relative_to(root).as_posix() if root is not None else path.name
    for suffix in (*EVAL_FILE_SUFFIXES, ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
