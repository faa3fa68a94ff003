"""The RunReport's Python API (failures, all_passed, to_json), the render functions over it, and write_outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agent_eval.render import (
    OUTPUT_FILES,
    eval_set_results,
    metrics_table,
    report_json,
    rust_report,
    summary_metrics,
    write_outputs,
)
from agent_eval.results.model import RunReport
from tests.render.builders import TRAJECTORY, repeated_report, sample_report


def test_failures_and_all_passed() -> None:
    report = sample_report()

    assert [case.eval_id for case in report.failures()] == ["two_turns", "lowercase", "boom"]
    assert [case.eval_id for case in report.not_evaluated_cases()] == ["broken_metric"]  # its metric raised
    assert report.failed_cases() == [*report.failures(), *report.not_evaluated_cases()]
    assert report.all_passed() is False
    assert repeated_report().all_passed() is True
    assert repeated_report().failures() == []


def test_table_properties_are_the_vertex_tables() -> None:
    report = sample_report()

    assert len(metrics_table(report)) == 5
    assert summary_metrics(report).iloc[0][f"{TRAJECTORY}/mean"] == pytest.approx(0.75)


def test_to_json_formats() -> None:
    report = sample_report()

    assert RunReport.model_validate_json(report.to_json()) == report
    assert json.loads(report_json(report, "adk")) == eval_set_results(report)
    assert json.loads(report_json(report, "rust")) == rust_report(report)
    vertex = json.loads(report_json(report, "vertex"))
    assert list(vertex) == ["summary_metrics", "metrics_table"]
    assert vertex["summary_metrics"]["row_count"] == 5
    assert vertex["summary_metrics"][f"{TRAJECTORY}/std"] == pytest.approx(0.5)
    assert [row["eval_id"] for row in vertex["metrics_table"]] == [case.eval_id for case in report.cases]


def test_single_row_std_is_null_in_vertex_json() -> None:
    vertex = json.loads(report_json(repeated_report(num_runs=1), "vertex"))

    assert vertex["summary_metrics"][f"{TRAJECTORY}/std"] is None


def test_unknown_json_format_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown JSON format 'xml'; choose one of report, vertex, adk, rust"):
        report_json(sample_report(), "xml")  # type: ignore[arg-type]


def test_write_outputs_writes_every_file(tmp_path: Path) -> None:
    report = sample_report()

    paths = write_outputs(report, tmp_path / "out")

    names = [path.name for path in paths]
    assert names[: len(OUTPUT_FILES)] == list(OUTPUT_FILES)
    assert names[len(OUTPUT_FILES) :] == [f"{eval_set_results(report)[0]['eval_set_result_id']}.evalset_result.json"]
    out = tmp_path / "out"
    assert len(pd.read_csv(out / "metrics_table.csv")) == 5
    assert len(json.loads((out / "metrics_table.json").read_text(encoding="utf-8"))) == 5
    assert pd.read_csv(out / "summary_metrics.csv").iloc[0]["row_count"] == 5
    assert json.loads((out / "summary_metrics.json").read_text(encoding="utf-8"))[0]["failure/mean"] == 0.2
    assert RunReport.model_validate_json((out / "report.json").read_text(encoding="utf-8")) == report
    assert json.loads((out / "rust_report.json").read_text(encoding="utf-8"))["summary"]["failed"] == 4
