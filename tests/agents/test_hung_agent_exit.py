"""A sync agent that hangs past the turn timeout: the case run times out, `evaluate()` returns, and the process
exits at once with nothing left behind (the hung turn runs on a daemon thread that is never joined)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

SCRIPT = """
import json, sys, time
from agent_eval import evaluate

report = evaluate(sys.argv[1], agent="tests.agents.failing_agents:hangs", db_url=sys.argv[2], turn_timeout_seconds=1)
run = report.cases[0].agent_run
print(json.dumps({"error": run.error, "kind": run.error_kind, "passed": report.summary.passed, "at": time.time()}))
sys.stdout.flush()
"""
RUN_LIMIT = 120.0
"""Generous for a loaded machine: the run itself (Prefect's start, 4 timed-out attempts with backoff)."""
EXIT_AFTER_RESULT = 10.0
"""What the test is about: once `evaluate()` returned, the process is gone within seconds."""


def _group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_hung_sync_agent_times_out_and_the_process_exits(tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL

    eval_file, _ = write_echo_set(tmp_path, ["stuck"])
    script = tmp_path / "run_hung.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = os.environ | {"PREFECT_API_URL": str(PREFECT_API_URL.value())}
    command = [sys.executable, str(script), str(eval_file), f"sqlite:///{tmp_path / 'store.db'}"]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=RUN_LIMIT)
        exited_at = time.time()
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"the process did not exit; stdout: {stdout.decode()[-500:]!r}, stderr: {stderr.decode()[-2000:]}")

    assert process.returncode == 0, stderr.decode()[-3000:]
    result = json.loads(stdout.decode().strip().splitlines()[-1])
    assert (result["error"], result["kind"], result["passed"]) == (
        "TurnTimeoutError: turn 1 took longer than 1 s",
        "timeout",
        0,
    )
    assert exited_at - result["at"] < EXIT_AFTER_RESULT
    assert _group_is_gone(process.pid), "the run left a process behind"
