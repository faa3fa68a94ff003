"""The warm process forks a run only while its main thread is its only thread: a fork copies one thread, and a
lock another thread held stays held in the child. A preloaded module that starts a thread turns every run cold,
and `-v` says why in one line. Asked of a real warm process (`serving.serve`) over its socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from agent_eval.runtime import warm
from agent_eval.runtime.warm.lifecycle import WarmProcess
from tests.conftest import REPO_ROOT

THREAD_STARTER = """
import threading, time
threading.Thread(target=time.sleep, args=(3600,), name="telemetry-flusher", daemon=True).start()
"""
SERVE = (  # "serve_warm" in the command line: what the client checks a recorded pid runs
    "import sys; from pathlib import Path; serve_warm = True; from agent_eval.runtime.warm.serving import serve; "
    "serve(lambda argv, runs=Path(sys.argv[1]): runs.write_text(' '.join(argv)) and 0, preload=tuple(sys.argv[2:]))"
)
READY_DEADLINE = 30.0


@pytest.fixture
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable]:
    """Start a warm process that preloads the given modules; the test's environment is the one it expects."""
    (tmp_path / "thread_starter.py").write_text(THREAD_STARTER, encoding="utf-8")
    (tmp_path / "quiet_module.py").write_text("ANSWER = 42\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT), str(tmp_path)]))
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(warm.WARM_ENV, raising=False)
    started: list[subprocess.Popen[str]] = []

    def start(*preload: str) -> subprocess.Popen[str]:
        (tmp_path / "home").mkdir(exist_ok=True)
        command = [sys.executable, "-c", SERVE, str(tmp_path / "runs.txt"), *preload]
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        started.append(process)
        socket_file = warm.protocol.socket_path()
        deadline = time.monotonic() + READY_DEADLINE
        while not socket_file.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert socket_file.exists(), "the warm process did not listen"
        state = WarmProcess(pid=process.pid, socket_path=str(socket_file), started_at=time.time())
        (tmp_path / "home" / "warm.json").write_text(json.dumps(asdict(state)), encoding="utf-8")
        return process

    yield start
    for process in started:
        process.terminate()
        process.communicate(timeout=READY_DEADLINE)


def test_a_thread_started_by_a_preloaded_module_makes_the_run_start_cold_and_says_why(
    serving: Callable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    process = serving("thread_starter")
    assert warm.run_in_warm_process(["history"], verbose=True) is None  # the client runs it itself
    assert capsys.readouterr().err == (
        "agent-eval: the run starts cold: other threads run in the warm process (telemetry-flusher): "
        "forking it is unsafe\n"
    )
    assert not (tmp_path / "runs.txt").exists()  # nothing was forked
    process.terminate()
    log, _ = process.communicate(timeout=READY_DEADLINE)
    assert log.splitlines() == ["cold: other threads run in the warm process (telemetry-flusher): forking it is unsafe"]


def test_without_another_thread_the_run_is_forked_and_nothing_is_said(
    serving: Callable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serving("quiet_module")
    assert warm.run_in_warm_process(["history"], verbose=True) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "runs.txt").read_text(encoding="utf-8") == "history"


def test_without_verbose_a_cold_answer_is_silent(serving: Callable, capsys: pytest.CaptureFixture[str]) -> None:
    serving("thread_starter")
    assert warm.run_in_warm_process(["history"]) is None
    assert capsys.readouterr().err == ""
