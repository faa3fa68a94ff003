"""A recorded input's temporary spill file never outlives its process: removed on a signal (whose path ends with
`os._exit`), and by the next spill when its process died without a word (SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agent_eval.io.recorded.spill import SPILL_PREFIX, TurnSpill, remove_own_spills
from agent_eval.store import get_engine, list_runs
from tests.conftest import REPO_ROOT
from tests.flows.test_signals import EXIT_DEADLINE, STARTUP_TIMEOUT
from tests.recorded.test_parts import session


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary folder, as `tempfile` sees it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_new_spill_removes_those_of_dead_processes_and_keeps_the_others(temporary: Path) -> None:
    dead = temporary / f"{SPILL_PREFIX}{_dead_pid()}-abc"
    living = temporary / f"{SPILL_PREFIX}{os.getppid()}-def"
    unrelated = temporary / "agent-eval-other-1"
    for folder in (dead, living, unrelated):
        folder.mkdir()
        (folder / "turns.sqlite3").write_bytes(b"x")
    spill = TurnSpill()
    made = sorted(path.name for path in temporary.iterdir())
    spill.close()
    ours = [name for name in made if name.startswith(f"{SPILL_PREFIX}{os.getpid()}-")]
    assert len(ours) == 1
    assert sorted(path.name for path in temporary.iterdir()) == sorted([living.name, unrelated.name])


def test_remove_own_spills_removes_only_this_processs(temporary: Path) -> None:
    spill = TurnSpill()
    living = temporary / f"{SPILL_PREFIX}{os.getppid()}-def"
    living.mkdir()
    remove_own_spills()
    assert [path.name for path in temporary.iterdir()] == [living.name]
    spill.close()  # its folder is already gone: no error


def test_a_recorded_run_stopped_by_sigterm_leaves_no_spill(tmp_path: Path) -> None:
    """A run of 12,000 recorded turns (parts of 500), stopped once its spill exists: exit 130, no spill left."""
    sessions = [session(f"s-{n:05d}", 2, 1_700_000_000.0 + 100 * n) for n in range(6000)]
    (tmp_path / "sessions.json").write_text(json.dumps(sessions), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps({"criteria": {"tool_call_count_v1": {}}}), encoding="utf-8")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    url = f"sqlite:///{tmp_path / 'store.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_", "PREFECT_LOGGING_"))}
    env.update(
        TMPDIR=str(temporary), AGENT_EVAL_DB_URL=url, AGENT_EVAL_HOME=str(tmp_path / "home"),
        PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_LOCAL_STORAGE_PATH=str(tmp_path / "prefect" / "storage"),
    )  # fmt: skip
    command = ["run", str(tmp_path / "sessions.json"), "--config", str(tmp_path / "config.json"), "-q"]
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_eval.cli", *command], cwd=REPO_ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_for_a_spill_and_a_run(process, temporary, url)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=EXIT_DEADLINE)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr[-3000:]
    assert [path.name for path in temporary.glob(f"{SPILL_PREFIX}*")] == []


def _wait_for_a_spill_and_a_run(process: subprocess.Popen[str], temporary: Path, url: str) -> None:
    """Until the run has its spill and its row in the store (it is then scoring its parts)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    store = Path(url.removeprefix("sqlite:///"))
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        if list(temporary.glob(f"{SPILL_PREFIX}{process.pid}-*")) and store.exists() and list_runs(get_engine(url)):
            return
        time.sleep(0.2)
    raise AssertionError("the run made no spill in time")
