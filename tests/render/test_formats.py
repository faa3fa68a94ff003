"""The output-format registry (`agent_eval.render.formats`): today's formats and files, each writing exactly what it
declares; a format added in one registration is written by `write_outputs`, is a `report_json` shape when it has a
document, and is listed by `agent-eval run --help`, which the README points to."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from agent_eval.cli import main
from agent_eval.render import OUTPUT_FILES, OutputFormat, output_formats, register_format, report_json, write_outputs
from agent_eval.render.adk_results import eval_set_results
from agent_eval.render.formats import BUILT_IN_FORMATS, json_format_names, unregister_format
from agent_eval.results.model import JsonFormat, RunReport
from tests.render.builders import sample_report

REPO = Path(__file__).resolve().parents[2]
TODAY = [
    ("report", ("report.json",)),
    ("vertex", ("metrics_table.csv", "metrics_table.json", "summary_metrics.csv", "summary_metrics.json")),
    ("adk", ("*.evalset_result.json",)),
    ("rust", ("rust_report.json",)),
]
HELP_ENTRY = re.compile(r"(\w[\w-]*) \(([^()]*)\): ")
"""One format in the `--output-dir` help: `name (file, file): description`."""


def write_tiny(report: RunReport, folder: Path) -> list[Path]:
    """A test format's writer: one line per case run."""
    path = folder / "tiny.txt"
    path.write_text("".join(f"{case.eval_id} {case.failure}\n" for case in report.cases), encoding="utf-8")
    return [path]


def tiny_document(report: RunReport) -> str:
    """A test JSON shape: the ids of the case runs."""
    return json.dumps([case.eval_id for case in report.cases])


TINY = OutputFormat("tiny", ("tiny.txt",), "one line per case run", write=f"{__name__}:write_tiny")
TINY_JSON = OutputFormat("tiny-json", ("tiny.json",), "the case ids", document=f"{__name__}:tiny_document")


@pytest.fixture
def tiny_formats() -> Iterator[None]:
    register_format(TINY)
    try:
        register_format(TINY_JSON)
        yield
    finally:
        for name in ("tiny", "tiny-json"):
            if name in {fmt.name for fmt in output_formats()}:
                unregister_format(name)


def _run_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """`agent-eval run --help` on one line (a wide terminal: argparse would break lines at hyphens)."""
    monkeypatch.setenv("COLUMNS", "10000")
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--help"])
    assert stopped.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def _help_formats(help_text: str) -> list[tuple[str, tuple[str, ...]]]:
    start = help_text.index("--output-dir OUTPUT_DIR also write")  # its entry, not the usage line
    entry = help_text[start : help_text.index("--junit JUNIT", start)]
    return [(name, tuple(files.split(", "))) for name, files in HELP_ENTRY.findall(entry)]


def test_the_registry_lists_todays_formats_and_files() -> None:
    assert [(fmt.name, fmt.files) for fmt in output_formats()] == TODAY
    assert output_formats() == BUILT_IN_FORMATS
    assert OUTPUT_FILES == (
        "report.json",
        "metrics_table.csv",
        "metrics_table.json",
        "summary_metrics.csv",
        "summary_metrics.json",
        "rust_report.json",
    )


def test_json_format_spells_the_registrys_json_shapes() -> None:
    assert get_args(JsonFormat) == json_format_names() == ("report", "vertex", "adk", "rust")


@pytest.mark.parametrize("fmt", BUILT_IN_FORMATS, ids=lambda fmt: fmt.name)
def test_each_format_writes_exactly_the_files_it_declares(fmt: OutputFormat, tmp_path: Path) -> None:
    paths = fmt.write_files(sample_report(), tmp_path)

    names = [path.name for path in paths]
    assert sorted(names) == sorted(path.name for path in tmp_path.iterdir())
    assert [name for name in names if name in fmt.fixed_files] == list(fmt.fixed_files)
    assert [name for name in names if not fmt.declares(name)] == []
    assert [pattern for pattern in fmt.files if not fnmatch.filter(names, pattern)] == []


def test_a_json_shapes_file_holds_its_report_json(tmp_path: Path) -> None:
    report = sample_report()

    write_outputs(report, tmp_path)

    for name, file in (("report", "report.json"), ("rust", "rust_report.json")):
        assert (tmp_path / file).read_text(encoding="utf-8") == report_json(report, name) + "\n"  # type: ignore[arg-type]
    (adk_file,) = tmp_path.glob("*.evalset_result.json")
    assert [json.loads(adk_file.read_text(encoding="utf-8"))] == json.loads(report_json(report, "adk"))
    assert json.loads(report_json(report, "adk")) == eval_set_results(report)


@pytest.mark.usefixtures("tiny_formats")
def test_a_registered_format_is_written_by_write_outputs(tmp_path: Path) -> None:
    report = sample_report()

    paths = write_outputs(report, tmp_path / "out")

    adk_name = f"{eval_set_results(report)[0]['eval_set_result_name']}.evalset_result.json"
    assert [path.name for path in paths] == [*OUTPUT_FILES, "tiny.txt", "tiny.json", adk_name]
    lines = (tmp_path / "out" / "tiny.txt").read_text(encoding="utf-8").splitlines()
    assert lines == ["two_turns 0", "lowercase 0", "boom 1", "fine 0", "broken_metric 0"]
    tiny_json = (tmp_path / "out" / "tiny.json").read_text(encoding="utf-8")
    assert tiny_json == '["two_turns", "lowercase", "boom", "fine", "broken_metric"]\n'


@pytest.mark.usefixtures("tiny_formats")
def test_a_registered_document_is_a_report_json_shape() -> None:
    report = sample_report()

    assert json.loads(report_json(report, "tiny-json")) == [case.eval_id for case in report.cases]  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match="unknown JSON format 'tiny'; choose one of report, vertex, adk, rust, tiny-json"
    ):
        report_json(report, "tiny")  # type: ignore[arg-type]


def test_the_cli_help_lists_the_registry_and_a_registered_format(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _run_help(capsys, monkeypatch)
    register_format(TINY)
    try:
        during = _run_help(capsys, monkeypatch)
    finally:
        unregister_format("tiny")
    after = _run_help(capsys, monkeypatch)

    assert _help_formats(before) == TODAY
    assert _help_formats(during) == [*TODAY, ("tiny", ("tiny.txt",))]
    assert "tiny (tiny.txt): one line per case run" in during
    assert "rust (rust_report.json): ADK-Rust's EvaluationReport" in before
    assert after == before


def test_the_readme_names_only_registered_files_and_points_to_the_help() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")

    (said,) = re.findall(r"`--output-dir DIR` \(([^)]*)\)", readme)

    quoted = re.findall(r"`([^`]+)`", said)
    assert "agent-eval run --help" in quoted
    named = [text for text in quoted if re.fullmatch(r"[\w*.-]+\.\w+", text)]
    assert named == ["report.json"]
    assert [name for name in named if not any(fmt.declares(name) for fmt in output_formats())] == []


def test_a_second_format_of_the_same_name_is_refused() -> None:
    with pytest.raises(ValueError, match="output format 'report' is already registered; give the new one another"):
        register_format(OutputFormat("report", ("mine.json",), "mine", document=f"{__name__}:tiny_document"))
    assert [fmt.name for fmt in output_formats()] == [name for name, _ in TODAY]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            {"files": ("a.json", "b.json"), "document": f"{__name__}:tiny_document"},
            "output format 'bad': without `write` it needs a `document` and one fixed file name",
        ),
        ({"files": ("*.json",), "document": f"{__name__}:tiny_document"}, "without `write` it needs a `document`"),
        ({"files": ("bad.txt",)}, "without `write` it needs a `document`"),
        ({"files": ("bad.txt",), "write": "write_tiny"}, "output format 'bad': 'write_tiny' is not 'module:function'"),
        ({"files": ()}, "output format 'bad': give it a name and the files it writes"),
    ],
)
def test_a_format_that_could_not_write_is_refused_where_declared(declared: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        OutputFormat("bad", description="bad", **declared)  # type: ignore[arg-type]


def test_a_renderer_that_does_not_import_names_its_reference(tmp_path: Path) -> None:
    missing = OutputFormat("gone", ("gone.txt",), "gone", write=f"{__name__}:no_such_writer")

    with pytest.raises(ValueError, match=f"renderer '{__name__}:no_such_writer': {__name__} has no function"):
        missing.write_files(sample_report(), tmp_path)
    assert list(tmp_path.iterdir()) == []
