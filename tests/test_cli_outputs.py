"""The demo's run as Vertex AI tables, ADK eval history and ADK-Rust report: through the API and `--output-dir`."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from agent_eval import evaluate, metrics_table, summary_metrics
from agent_eval.cli import main
from tests.flows.test_evaluate import DEMO_FAILURES

TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"
THRESHOLDS = {TRAJECTORY: 1.0, RESPONSE: 0.8}  # examples/home_automation/test_config.json


def _failing_rows(table: pd.DataFrame) -> dict[str, list[str]]:
    """Per failing row, the metrics whose score is below the demo's threshold."""
    failing: dict[str, list[str]] = {}
    for row in table.to_dict(orient="records"):
        below = [name for name, threshold in THRESHOLDS.items() if row[f"{name}/score"] < threshold]
        if below:
            failing[row["eval_id"]] = below
    return failing


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_demo_metrics_table_shows_the_designed_failures(demo_dir: Path, sqlite_url: str) -> None:
    report = evaluate(demo_dir, db_url=sqlite_url)

    table = metrics_table(report)
    assert len(table) == 33
    assert table["failure"].tolist() == [0] * 33
    assert _failing_rows(table) == {case: [metric] for case, metric in DEMO_FAILURES.items()}
    garage = table.set_index("eval_id").loc["turn_on_garage_device"]
    assert [call["tool_name"] for call in garage["predicted_trajectory"]] == ["set_device_info", "get_device_info"]
    assert "get_device_info" in garage[f"{TRAJECTORY}/explanation"]
    summary = summary_metrics(report).iloc[0]
    assert summary["row_count"] == 33
    for name in THRESHOLDS:
        assert summary[f"{name}/mean"] == pytest.approx(report.summary.avg_scores[name])
        assert summary[f"{name}/std"] == pytest.approx(statistics.stdev(table[f"{name}/score"].tolist()))
    assert summary["failure/mean"] == 0.0


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_run_with_output_dir_writes_every_file(
    demo_dir: Path, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "outputs"

    code = main(["run", str(demo_dir), "--db-url", sqlite_url, "--output-dir", str(out)])

    assert code == 1  # six cases fail by design
    assert "Total: 33  Passed: 27  Failed: 6" in capsys.readouterr().out
    table = pd.read_csv(out / "metrics_table.csv")
    assert len(table) == 33
    assert _failing_rows(table) == {case: [metric] for case, metric in DEMO_FAILURES.items()}
    assert all(isinstance(json.loads(cell), list) for cell in table["predicted_trajectory"])
    assert len(json.loads((out / "metrics_table.json").read_text(encoding="utf-8"))) == 33
    assert pd.read_csv(out / "summary_metrics.csv").iloc[0]["row_count"] == 33
    assert json.loads((out / "summary_metrics.json").read_text(encoding="utf-8"))[0]["row_count"] == 33
    assert len(json.loads((out / "report.json").read_text(encoding="utf-8"))["cases"]) == 33
    rust = json.loads((out / "rust_report.json").read_text(encoding="utf-8"))
    assert (rust["summary"]["total"], rust["summary"]["failed"]) == (33, 6)
    (history,) = out.glob("*.evalset_result.json")
    assert history.name.startswith("home_automation_home_automation_demo_")
    eval_set_result = json.loads(history.read_text(encoding="utf-8"))
    assert len(eval_set_result["eval_case_results"]) == 33
    assert sum(case["final_eval_status"] == 2 for case in eval_set_result["eval_case_results"]) == 6


def test_an_output_dir_that_cannot_be_created_is_bad_input(
    tmp_path: Path, demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")

    code = main(
        ["run", str(demo_dir), "--db-url", f"sqlite:///{tmp_path / 's.db'}", "--output-dir", str(blocker / "x")]
    )

    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"agent-eval: error: {blocker / 'x'}: cannot create the output folder")
    assert not (tmp_path / "s.db").exists()  # nothing ran
