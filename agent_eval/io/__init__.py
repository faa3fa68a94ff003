"""Loading eval sets and eval configs, with errors that name the file, the case and the field.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(a new input format) and may change between releases.

Formats are detected from content (`format="auto"`), or forced with `format="adk"` (ADK / ADK-Rust EvalSet
JSON and ADK's legacy lists) or `format="vertex"` (Vertex AI style datasets). Paths are files, folders
(recursive, sorted), globs, or `FILE:case_id1,case_id2` selections as in `adk eval`.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.io.adk import legacy_rows_to_eval_set
    from agent_eval.io.files import DATASET_SUFFIXES, EVAL_FILE_SUFFIXES
    from agent_eval.io.loading import (
        CONFIG_FILE_NAME,
        InputFormat,
        config_file_for,
        config_from_data,
        eval_set_from_dataframe,
        find_config_file,
        load_eval_config,
        load_eval_set,
        load_eval_sets,
        load_eval_sets_with_configs,
        write_eval_set,
    )

_EXPORTS = {
    "agent_eval.io.loading": (
        "CONFIG_FILE_NAME",
        "InputFormat",
        "config_file_for",
        "config_from_data",
        "eval_set_from_dataframe",
        "find_config_file",
        "load_eval_config",
        "load_eval_set",
        "load_eval_sets",
        "load_eval_sets_with_configs",
        "write_eval_set",
    ),
    "agent_eval.io.files": ("DATASET_SUFFIXES", "EVAL_FILE_SUFFIXES"),
    "agent_eval.io.adk": ("legacy_rows_to_eval_set",),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
