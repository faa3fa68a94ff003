"""A Python API run in a fresh process on Prefect's temporary server (what a script or a notebook gets without
a configured server) ends cleanly: no traceback of Prefect's shutdown or its server's telemetry on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.flows.helpers import write_echo_set

AGENT = "tests.flows.agents_for_tests:echo_agent"
REPO = Path(__file__).resolve().parents[2]


def test_a_python_api_run_on_prefects_temporary_server_prints_no_traceback(tmp_path: Path) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["one", "two"])
    store = f"sqlite:///{tmp_path / 's.db'}"
    code = (
        "from agent_eval import evaluate\n"
        f"report = evaluate({str(eval_file)!r}, agent={AGENT!r}, db_url={store!r})\n"
        "print('PASSED', report.summary.passed)\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_SERVER")}
    env.update(AGENT_EVAL_PREFECT_SERVER="ephemeral", PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert (done.returncode, done.stdout.strip().splitlines()[-1]) == (0, "PASSED 2"), done.stderr
    for noise in ("Traceback", "Error flushing events", "CancelledError", "ERROR"):
        assert noise not in done.stderr
