"""Loading eval sets and eval configs (the body of `agent_eval.io`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agent_eval.errors import EvalInputError
from agent_eval.io.adk import eval_set_from_json, legacy_rows_to_eval_set
from agent_eval.io.files import (
    DATASET_SUFFIXES,
    EVAL_FILE_SUFFIXES,
    expand_path,
    read_json,
    split_case_selection,
)
from agent_eval.io.vertex import eval_set_from_rows, is_vertex_rows, read_csv_rows, read_jsonl_rows
from agent_eval.schema import EvalConfig, EvalSet, validation_input_error

__all__ = [
    "CONFIG_FILE_NAME",
    "DATASET_SUFFIXES",
    "EVAL_FILE_SUFFIXES",
    "InputFormat",
    "config_file_for",
    "config_from_data",
    "eval_set_from_dataframe",
    "find_config_file",
    "legacy_rows_to_eval_set",
    "load_eval_config",
    "load_eval_set",
    "load_eval_sets",
    "load_eval_sets_with_configs",
    "write_eval_set",
]

CONFIG_FILE_NAME = "test_config.json"
InputFormat = Literal["auto", "adk", "vertex"]
_NOT_EVAL_FILES = {CONFIG_FILE_NAME, "initial.session.json"}


def load_eval_sets(paths: str | Path | Sequence[str | Path], *, format: InputFormat = "auto") -> list[EvalSet]:
    """Load every eval set named by `paths`, in order; eval set ids must be unique across them.

    Raises:
        EvalInputError: a path does not exist or matches nothing, or a file is not a valid eval set.
    """
    return [eval_set for eval_set, _ in load_eval_sets_with_configs(paths, format=format)]


def load_eval_sets_with_configs(
    paths: str | Path | Sequence[str | Path], *, format: InputFormat = "auto"
) -> list[tuple[EvalSet, Path | None]]:
    """Like `load_eval_sets`, each eval set with the `test_config.json` that applies to it (`config_file_for`).

    Raises:
        EvalInputError: a path does not exist or matches nothing, or a file is not a valid eval set.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    loaded: list[tuple[EvalSet, Path, Path | None]] = []
    for item in items:
        path, selected = split_case_selection(str(item))
        root = Path(path) if Path(path).is_dir() else None
        for file in expand_path(path):
            if file.name in _NOT_EVAL_FILES:
                continue
            eval_set = _select_cases(load_eval_set(file, root=root, format=format), selected, file)
            if eval_set.eval_cases:
                loaded.append((eval_set, file, root))
            elif root is None:  # named on purpose; an empty set found in a folder (as ADK creates them) is skipped
                raise EvalInputError("the eval set has no cases", file=file, field="eval_cases")
    if not loaded:
        raise EvalInputError(f"no eval cases in {', '.join(str(i) for i in items)}", field="eval_cases")
    _check_unique_set_ids([(eval_set, file) for eval_set, file, _ in loaded])
    return [(eval_set, config_file_for(file, root)) for eval_set, file, root in loaded]


def load_eval_set(file: str | Path, *, root: Path | None = None, format: InputFormat = "auto") -> EvalSet:
    """Load one eval file of any supported format (`root`: the folder it was found under, for legacy ids)."""
    path = Path(file)
    if path.name.endswith(".jsonl"):
        return eval_set_from_rows(read_jsonl_rows(path), _dataset_id(path, root), path)
    if path.name.endswith(".csv"):
        return eval_set_from_rows(read_csv_rows(path), _dataset_id(path, root), path)
    data = read_json(path)
    if format == "vertex" or (format == "auto" and is_vertex_rows(data)):
        if not isinstance(data, list):
            raise EvalInputError("a Vertex dataset in JSON must be a list of row objects", file=path)
        return eval_set_from_rows(data, _dataset_id(path, root), path)
    return eval_set_from_json(data, path, root=root)


def eval_set_from_dataframe(frame: Any, eval_set_id: str = "dataframe") -> EvalSet:
    """An eval set from a pandas DataFrame with Vertex columns (NaN cells count as missing)."""
    rows = [
        {str(k): v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}
        for row in frame.to_dict(orient="records")
    ]
    return eval_set_from_rows(rows, eval_set_id, f"<DataFrame {eval_set_id}>")


def load_eval_config(file: str | Path | None) -> EvalConfig:
    """Load an ADK `test_config.json`; `None` gives ADK's default criteria."""
    if file is None:
        return EvalConfig()
    path = Path(file)
    return config_from_data(read_json(path), path)


def config_from_data(data: Any, source: str | Path) -> EvalConfig:
    """An `EvalConfig` from parsed JSON (a file's, or one given inline), checked with errors naming `source`."""
    if not isinstance(data, dict):
        raise EvalInputError("expected a JSON object with 'criteria'", file=source)
    criteria = data.get("criteria")
    for name, value in criteria.items() if isinstance(criteria, dict) else ():
        if isinstance(value, bool) or not isinstance(value, int | float | dict):
            raise EvalInputError(
                f"expected a threshold (a number) or an object with 'threshold' and options, got {value!r}",
                file=source,
                field=f"criteria.{name}",
            )
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as error:
        raise validation_input_error(error, EvalConfig, file=source, data=data) from None


def config_file_for(eval_file: str | Path, root: str | Path | None = None) -> Path | None:
    """The `test_config.json` that scores `eval_file`: the one beside it, as ADK's `AgentEvaluator` looks for it;
    for a file found under a folder that was named (`root`), else the nearest one in the folders between them
    (so `run evals/` with `evals/test_config.json` scores `evals/sub/x.test.json` with it). None: ADK's defaults.
    """
    folder = Path(eval_file).parent
    top = Path(root).resolve() if root is not None else folder.resolve()
    while True:
        candidate = folder / CONFIG_FILE_NAME
        if candidate.is_file():
            return candidate
        if folder.resolve() == top or top not in folder.resolve().parents:
            return None
        folder = folder.parent


def find_config_file(paths: Sequence[str | Path]) -> Path | None:
    """`test_config.json` in the first eval path's folder (or the folder itself) that has one.

    One config for all the paths, as `adk eval` picks it for a single eval set file; an evaluation scores each
    eval file with its own (`config_file_for`, through `load_eval_sets_with_configs`).
    """
    for item in paths:
        path = Path(split_case_selection(str(item))[0])
        folder = path if path.is_dir() else path.parent
        candidate = folder / CONFIG_FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def write_eval_set(eval_set: EvalSet, file: str | Path) -> Path:
    """Write an eval set as ADK EvalSet JSON (snake_case, unset fields left out), as ADK writes its files."""
    path = Path(file)
    path.write_text(eval_set.model_dump_json(indent=2, exclude_none=True), encoding="utf-8")
    return path


def _select_cases(eval_set: EvalSet, selected: list[str] | None, file: Path) -> EvalSet:
    if selected is None:
        return eval_set
    known = {case.eval_id for case in eval_set.eval_cases}
    missing = [case for case in selected if case not in known]
    if missing:
        raise EvalInputError(f"no case {missing[0]!r}; cases are {sorted(known)}", file=file)
    keep = [case for case in eval_set.eval_cases if case.eval_id in selected]
    return eval_set.model_copy(update={"eval_cases": keep})


def _check_unique_set_ids(loaded: list[tuple[EvalSet, Path]]) -> None:
    seen: dict[str, Path] = {}
    for eval_set, file in loaded:
        first = seen.setdefault(eval_set.eval_set_id, file)
        if first != file:
            raise EvalInputError(
                f"eval_set_id {eval_set.eval_set_id!r} is already used by {first}; give each eval set its own id",
                file=file,
                field="eval_set_id",
            )


def _dataset_id(path: Path, root: Path | None) -> str:
    """A dataset's eval set id: its file name with the extension (so `x.json` and `x.jsonl` stay apart),
    relative to the folder it was found under."""
    return path.relative_to(root).as_posix() if root is not None else path.name
