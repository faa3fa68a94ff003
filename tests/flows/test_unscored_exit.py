"""A criterion that scored no case run makes `run` exit 1 with one line that names it, even when every case that
was scored passed: an evaluation whose judge (or metric) gave nothing usable is not a green run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.cli import main
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

NEVER_SCORES = """
from agent_eval.schema import EvaluationResult, EvalStatus

def never_scores(eval_metric, actual_invocations, expected_invocations, conversation_scenario=None):
    return EvaluationResult(overall_eval_status=EvalStatus.NOT_EVALUATED, explanation="the judge gave nothing usable")
"""


def test_a_criterion_that_scored_nothing_exits_1_with_its_name(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "never_scores_metric.py").write_text(NEVER_SCORES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    eval_file, _ = write_echo_set(tmp_path, ["one", "two"])
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "criteria": {"tool_trajectory_avg_score": 1.0, "judge_like": 0.5},
                "custom_metrics": {"judge_like": {"code_config": {"name": "never_scores_metric.never_scores"}}},
            }
        ),
        encoding="utf-8",
    )
    agent = "tests.flows.agents_for_tests:echo_agent"

    code = main(["run", str(eval_file), "--agent", agent, "--config", str(config), "--db-url", sqlite_url])

    captured = capsys.readouterr()
    assert code == 1
    assert "Passed: 0  Failed: 0  Not evaluated: 2" in captured.out
    lines = [line for line in captured.err.splitlines() if "scored no case run" in line]
    assert len(lines) == 1
    assert lines[0].startswith("agent-eval: criterion judge_like scored no case run (the judge gave nothing usable)")
