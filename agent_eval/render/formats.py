"""The output formats: one registry that `write_outputs`, `report_json`, the CLI's `--output-dir` help and the
docs read.

Adding a format is a renderer module under `agent_eval/render/` and one `OutputFormat(...)` line in
`BUILT_IN_FORMATS`; tests/render/test_formats.py then checks that it writes exactly the files it declares.
A format that is also a `report_json` shape (it has a `document`) is spelled in `results.model.JsonFormat` too.

Renderers are named `"module:function"` and imported when a run is written, so that `agent-eval --help`, which
lists the formats, imports no renderer (they import pandas and google-genai).
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_eval.results.model import RunReport

__all__ = [
    "BUILT_IN_FORMATS",
    "OutputFormat",
    "fixed_output_files",
    "json_format_names",
    "output_dir_help",
    "output_format",
    "output_formats",
    "register_format",
    "unregister_format",
]

_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True)
class OutputFormat:
    """One output format: the files `--output-dir` gets from it and, for a JSON shape, what `report_json` returns.

    Attributes:
        name: the format's name; `report_json(report, name)` when it has a `document`.
        files: the names it writes into the output folder, in order; `*` stands for a part named after the run.
        description: one line for the CLI's help and the docs.
        write: `"module:function"`, a function `(report: RunReport, folder: Path) -> list[Path]` that writes
            `files` into the existing `folder`. Default: the `document` and a newline into the one file of `files`.
        document: `"module:function"`, a function `(report: RunReport) -> str` giving the format's JSON text;
            None: the format is not a `report_json` shape.
    """

    name: str
    files: tuple[str, ...]
    description: str
    write: str | None = None
    document: str | None = None

    def __post_init__(self) -> None:
        """A format that could not write its files is a programming error, raised where it is declared."""
        if not self.name or not self.files:
            raise ValueError(f"output format {self.name!r}: give it a name and the files it writes")
        for reference in (self.write, self.document):
            if reference is not None and not all(reference.partition(":")[::2]):
                raise ValueError(f"output format {self.name!r}: {reference!r} is not 'module:function'")
        if self.write is None and (self.document is None or len(self.fixed_files) != 1 or len(self.files) != 1):
            raise ValueError(
                f"output format {self.name!r}: without `write` it needs a `document` and one fixed file name"
            )

    @property
    def fixed_files(self) -> tuple[str, ...]:
        """The files of `files` whose names do not depend on the run."""
        return tuple(name for name in self.files if not _WILDCARDS & set(name))

    def declares(self, file_name: str) -> bool:
        """Whether `file_name` is one of `files` (a `*` matching any part)."""
        return any(fnmatch.fnmatchcase(file_name, pattern) for pattern in self.files)

    def render_document(self, report: RunReport) -> str:
        """The format's JSON text of the run (`document`).

        Raises:
            ValueError: the format has no `document`.
            TypeError: its function returned something else than a str.
        """
        if self.document is None:
            raise ValueError(f"output format {self.name!r} is not a JSON shape; choose one of {_json_names()}")
        text = _function(self.document)(report)
        if not isinstance(text, str):
            raise TypeError(f"{self.document!r} returned {type(text).__name__}, not the JSON text (str)")
        return text

    def write_files(self, report: RunReport, folder: Path) -> list[Path]:
        """Write the format's files of the run into the existing `folder`; returns the files written."""
        if self.write is None:
            path = folder / self.files[0]
            path.write_text(self.render_document(report) + "\n", encoding="utf-8")
            return [path]
        return [Path(path) for path in _function(self.write)(report, folder)]


BUILT_IN_FORMATS = (
    OutputFormat("report", ("report.json",), "our RunReport", document="agent_eval.render.export:report_document"),
    OutputFormat(
        "vertex",
        ("metrics_table.csv", "metrics_table.json", "summary_metrics.csv", "summary_metrics.json"),
        "Vertex AI's metrics_table and summary_metrics, as CSV and JSON records",
        write="agent_eval.render.export:write_vertex_tables",
        document="agent_eval.render.export:vertex_document",
    ),
    OutputFormat(
        "adk",
        ("*.evalset_result.json",),
        "ADK's eval history, one EvalSetResult per eval set (<app>_<eval_set_id>_<timestamp>)",
        write="agent_eval.render.adk_results:write_eval_set_results",
        document="agent_eval.render.export:adk_document",
    ),
    OutputFormat(
        "rust", ("rust_report.json",), "ADK-Rust's EvaluationReport", document="agent_eval.render.export:rust_document"
    ),
)
"""Every output format agent-eval ships, in the order the docs list them and `write_outputs` writes them."""

_FORMATS: dict[str, OutputFormat] = {fmt.name: fmt for fmt in BUILT_IN_FORMATS}


def output_formats() -> tuple[OutputFormat, ...]:
    """Every registered output format, built-in ones first, in order."""
    return tuple(_FORMATS.values())


def output_format(name: str) -> OutputFormat:
    """The registered output format called `name`.

    Raises:
        ValueError: no such format; the message lists the registered ones.
    """
    try:
        return _FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown output format {name!r}; choose one of {', '.join(_FORMATS)}") from None


def register_format(fmt: OutputFormat) -> OutputFormat:
    """Add an output format after the others; a second format of the same name is a programming error."""
    if fmt.name in _FORMATS:
        raise ValueError(f"output format {fmt.name!r} is already registered; give the new one another name")
    _FORMATS[fmt.name] = fmt
    return fmt


def unregister_format(name: str) -> None:
    """Remove an output format (a test's own, or a built-in one a program does not want written)."""
    output_format(name)
    del _FORMATS[name]


def json_format_names() -> tuple[str, ...]:
    """The `report_json` shapes: the registered formats that have a `document`, in order."""
    return tuple(fmt.name for fmt in _FORMATS.values() if fmt.document is not None)


def fixed_output_files() -> tuple[str, ...]:
    """The files every run writes into `--output-dir`, in order (the ones named after the run come on top)."""
    return tuple(name for fmt in _FORMATS.values() for name in fmt.fixed_files)


def output_dir_help() -> str:
    """The `--output-dir` help: every format with its files and description (`%` escaped for argparse)."""
    listed = "; ".join(f"{fmt.name} ({', '.join(fmt.files)}): {fmt.description}" for fmt in _FORMATS.values())
    return f"also write every output format into this folder: {listed}".replace("%", "%%")


def _json_names() -> str:
    return ", ".join(json_format_names())


def _function(reference: str) -> Callable[..., Any]:
    """The function a `"module:function"` reference names, imported now."""
    module, _, name = reference.partition(":")
    function: Callable[..., Any] | None = getattr(importlib.import_module(module), name, None)
    if not callable(function):
        raise ValueError(f"output format renderer {reference!r}: {module} has no function {name!r}")
    return function
