"""Every file in tests/data evaluates through the flow: ADK files with the demo agent, the Vertex dataset
with predictions as it is (no agent), the others with the demo agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval import evaluate, metrics_table
from agent_eval.io import load_eval_sets
from agent_eval.schema import EvalStatus

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

DEMO_AGENT = "examples/home_automation/agent.py:root_agent"
DEFAULT_CRITERIA = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}


def test_every_adk_file_evaluates_with_the_demo_agent(data_dir: Path, sqlite_url: str) -> None:
    folder = data_dir / "adk"
    expected_cases = sum(len(s.eval_cases) for s in load_eval_sets(folder))

    report = evaluate(folder, agent=DEMO_AGENT, config=DEFAULT_CRITERIA, db_url=sqlite_url)

    assert report.summary.total == expected_cases
    scenario_runs = [c for c in report.cases if c.expected_invocations is None]
    assert {c.eval_id for c in scenario_runs} == {"CS-1", "background_task_scenario"}
    assert all("user simulator" in (c.agent_run.error or "") for c in scenario_runs)
    simple = next(c for c in report.cases if c.eval_set_id == "home_automation_agent/simple_test2")
    # The demo agent answers "Turn off device_3 in the Bedroom." with exactly ADK's expected call.
    trajectory = next(m for m in simple.metrics if m.metric_name == "tool_trajectory_avg_score")
    assert (trajectory.score, trajectory.status) == (1.0, EvalStatus.PASSED)


def test_vertex_dataset_with_predictions_is_scored_without_an_agent(data_dir: Path, sqlite_url: str) -> None:
    dataset = data_dir / "vertex" / "vertex_docs_on_device_trajectory_example.json"
    config = {
        "criteria": {name: 0.5 for name in ("trajectory_exact_match", "trajectory_precision", "trajectory_recall")}
    }

    report = evaluate(dataset, config=config, db_url=sqlite_url)

    assert report.agent_reference == "replay"
    table = metrics_table(report).set_index("eval_id")
    # Row 1 calls set_device_info on device_3 instead of device_2; row 2 is checked by hand below.
    assert table.loc["row_0001", "trajectory_exact_match/score"] == 0.0
    assert table.loc["row_0001", "trajectory_precision/score"] == 0.0
    assert list(table["failure"]) == [0, 0]
    assert report.summary.agent_failures == 0


def test_vertex_datasets_without_predictions_run_the_given_agent(data_dir: Path, sqlite_url: str) -> None:
    files = [str(data_dir / "vertex" / name) for name in
             ("vertex_notebook_product_agent_sample.json", "vertex_notebook_product_agent_sample.jsonl")]  # fmt: skip

    report = evaluate(files, agent=DEMO_AGENT, config={"criteria": {"trajectory_recall": 1.0}}, db_url=sqlite_url)

    assert report.summary.total == 10
    assert report.summary.agent_failures == 0
    # The home-automation agent knows no product tools: every recall is 0, every case fails.
    assert report.summary.avg_scores == {"trajectory_recall": 0.0}
    assert report.summary.failed == 10
