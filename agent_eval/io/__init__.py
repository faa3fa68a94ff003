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
    from agent_eval.io.adk import legacy_rows_to_eval_set as legacy_rows_to_eval_set
    from agent_eval.io.files import DATASET_SUFFIXES as DATASET_SUFFIXES
    from agent_eval.io.files import EVAL_FILE_SUFFIXES as EVAL_FILE_SUFFIXES
    from agent_eval.io.loading import CONFIG_FILE_NAME as CONFIG_FILE_NAME
    from agent_eval.io.loading import InputFormat as InputFormat
    from agent_eval.io.loading import config_file_for as config_file_for
    from agent_eval.io.loading import config_from_data as config_from_data
    from agent_eval.io.loading import eval_set_from_dataframe as eval_set_from_dataframe
    from agent_eval.io.loading import find_config_file as find_config_file
    from agent_eval.io.loading import load_eval_config as load_eval_config
    from agent_eval.io.loading import load_eval_set as load_eval_set
    from agent_eval.io.loading import load_eval_sets as load_eval_sets
    from agent_eval.io.loading import load_eval_sets_with_configs as load_eval_sets_with_configs
    from agent_eval.io.loading import write_eval_set as write_eval_set


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
