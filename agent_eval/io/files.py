"""Reading input files safely: size limit, UTF-8, JSON with line and column in errors; path expansion."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from agent_eval.errors import EvalInputError
from agent_eval.settings import settings

__all__ = [
    "DATASET_SUFFIXES",
    "EVAL_FILE_SUFFIXES",
    "MAX_INPUT_MB_ENV",
    "check_paths_exist",
    "expand_path",
    "max_input_mb",
    "read_json",
    "read_text",
    "split_case_selection",
]

EVAL_FILE_SUFFIXES = (".evalset.json", ".test.json")
DATASET_SUFFIXES = (".jsonl", ".csv")
MAX_INPUT_MB_ENV = "AGENT_EVAL_MAX_INPUT_MB"


def read_text(path: Path) -> str:
    """The file's text, refusing files over the size limit, binary files and empty ones."""
    if not path.is_file():
        raise EvalInputError("no such file", file=path)
    limit = max_input_mb()
    size_mb = path.stat().st_size / 1_000_000
    if size_mb > limit:
        raise EvalInputError(
            f"the file is {size_mb:.1f} MB, over the {limit:g} MB limit (raise it with {MAX_INPUT_MB_ENV})", file=path
        )
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise EvalInputError("binary file, expected JSON, JSONL or CSV text", file=path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise EvalInputError(f"not UTF-8 text (byte {error.start})", file=path) from None
    if not text.strip():
        raise EvalInputError("the file is empty", file=path)
    return text


def max_input_mb() -> float:
    """The largest input file accepted, in MB: `$AGENT_EVAL_MAX_INPUT_MB`, default 25.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid, e.g. this one is not a number above 0
            (`agent_eval.settings.settings`).
    """
    return settings().max_input_mb


def read_json(path: Path) -> Any:
    """The file's JSON value; invalid JSON is reported with its line and column."""
    text = read_text(path)
    try:
        return json.loads(text)
    except RecursionError:
        raise EvalInputError("the JSON is nested too deeply to read", file=path) from None
    except json.JSONDecodeError as error:
        raise EvalInputError(
            f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}", file=path
        ) from None


def expand_path(item: str) -> list[Path]:
    """The eval files an argument names: a file; every eval file or dataset below a folder (recursive, sorted);
    or the files a glob matches (sorted).

    Raises:
        EvalInputError: nothing exists or matches there.
    """
    path = Path(item)
    if path.is_file():
        return [path]
    if path.is_dir():
        return _eval_files_below(path)
    if glob.has_magic(item):
        matches = sorted(Path(p) for p in glob.glob(item, recursive=True))
        files = [file for match in matches for file in (_eval_files_below(match) if match.is_dir() else [match])]
        if files:
            return files
        raise EvalInputError("the pattern matches no file", file=item)
    raise EvalInputError("no such file or directory", file=item)


def _eval_files_below(folder: Path) -> list[Path]:
    suffixes = (*EVAL_FILE_SUFFIXES, *DATASET_SUFFIXES)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(suffixes))
    if not files:
        shown = ", ".join("*" + suffix for suffix in suffixes)
        raise EvalInputError(f"no eval files ({shown}) found", file=folder)
    return files


def check_paths_exist(items: list[str]) -> None:
    """Fail fast on a path that names nothing (the common typo), before anything heavy is imported.

    Raises:
        EvalInputError: a file, folder or glob of `items` names nothing (the same error loading would raise).
    """
    for item in items:
        expand_path(split_case_selection(item)[0])


def split_case_selection(item: str) -> tuple[str, list[str] | None]:
    """`FILE:case1,case2` → (FILE, [case1, case2]) when FILE exists; any other string → (it, None).

    Case ids may contain `/` (ADK names legacy cases after their file path), so the split is on the last `:`
    whose left side is an existing path.
    """
    head, sep, tail = item.rpartition(":")
    if not sep or not head or Path(item).exists() or not Path(head).exists():
        return item, None
    selected = [case.strip() for case in tail.split(",") if case.strip()]
    if not selected:
        raise EvalInputError("no case ids after ':'; write FILE:case_id1,case_id2 or just FILE", file=head)
    return head, selected
