"""The `agent-eval` command line: exit codes, the summary, one-line errors with no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.cli import main
from tests.conftest import REPO_ROOT


def test_bad_config_exits_2_with_one_line_naming_file_and_field(
    tmp_path: Path, demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad_config.json"
    config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_scor": 1.0}}), encoding="utf-8")

    code = main(["run", str(demo_dir), "--config", str(config), "--db-url", f"sqlite:///{tmp_path / 's.db'}"])

    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert str(config) in err
    assert "criteria.tool_trajectory_avg_scor" in err
    assert "unknown metric 'tool_trajectory_avg_scor'" in err
    assert "response_match_score" in err  # lists the known metrics
    assert not (tmp_path / "s.db").exists()  # nothing written


def test_unknown_agent_exits_2(tmp_path: Path, demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(demo_dir), "--agent", "no_such_module_xyz:agent"])

    assert code == 2
    assert "cannot import 'no_such_module_xyz'" in capsys.readouterr().err


def test_console_script_on_bad_input_prints_no_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.evalset.json"
    broken.write_text('{"eval_set_id": "x", "eval_cases": [', encoding="utf-8")

    done = subprocess.run(
        [sys.executable, "-m", "agent_eval.cli", "run", str(broken), "--agent", "x:y"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 2
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert done.stderr.strip() == f"agent-eval: error: {broken}: invalid JSON at line 1 column 37: Expecting value"


@pytest.mark.flow
def test_console_script_runs_the_demo_on_a_temporary_server(tmp_path: Path) -> None:
    """The README's main command: no server started by hand, exit 1 because six cases fail by design."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["AGENT_EVAL_DB_URL"] = f"sqlite:///{tmp_path / 'demo.db'}"
    env["PREFECT_HOME"] = str(tmp_path / "prefect")

    done = subprocess.run(
        [sys.executable, "-m", "agent_eval.cli", "run", "examples/home_automation"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )

    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-4000:]
    assert "Total: 33  Passed: 27  Failed: 6  Pass rate: 81.8%" in done.stdout
    assert "FAIL home_automation_demo/turn_on_garage_device" in done.stdout
    assert "unexpected extra call(s): get_device_info(device_id='device_5')" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert (tmp_path / "demo.db").is_file()
