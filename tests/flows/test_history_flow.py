"""Two real runs with a change in the agent between them: `history` lists both, `compare` names the flips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval import evaluate
from agent_eval.cli import main
from tests.flows import regression_agents
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.regression_agents:switchable_agent"


def test_history_and_compare_after_the_agent_changed(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["a", "b", "c", "d"])
    before = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    regression_agents.MODES[messages["b"]] = "wrong_tool"
    regression_agents.MODES[messages["d"]] = "wrong_tool"
    after = evaluate(eval_file, agent=AGENT, db_url=sqlite_url, refresh_cache=True)
    capsys.readouterr()

    assert main(["history", "--json", "--db-url", sqlite_url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(row["run_id"], row["passed"], row["total"]) for row in listed] == [
        (after.run_id, 2, 4),
        (before.run_id, 4, 4),
    ]

    assert main(["compare", before.run_id, after.run_id, "--json", "--db-url", sqlite_url]) == 0
    comparison = json.loads(capsys.readouterr().out)
    flipped = sorted(case["eval_id"] for case in comparison["cases"] if case["change"] == "passed → failed")
    assert flipped == ["b", "d"]
    trajectory = next(m for m in comparison["metrics"] if m["metric_name"] == "tool_trajectory_avg_score")
    assert (trajectory["mean_a"], trajectory["mean_b"], trajectory["delta"]) == (1.0, 0.5, -0.5)
