"""The warm process (`runtime.warm`): runs from the CLI go through it once `agent-eval server start` has started
it, report exactly as a cold run does, pass on signals, never outlive their client, and start cold when the code
or the environment changed. One real local Prefect server and one warm process serve the module."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_eval.runtime import warm
from agent_eval.runtime.processes import process_alive
from agent_eval.store import get_engine, get_run, list_runs
from tests.conftest import REPO_ROOT
from tests.flows.helpers import write_echo_set
from tests.flows.test_signals import SLOW_AGENT

pytestmark = pytest.mark.flow

AGENT = "tests.flows.agents_for_tests:echo_agent"
EXIT_DEADLINE = 20.0


@dataclass(frozen=True)
class WarmStack:
    """The module's local server and warm process: the environment that reaches them, and their home."""

    env: dict[str, str]
    home: Path
    folder: Path

    def cli(self, *args: str, cwd: Path = REPO_ROOT, **extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "agent_eval.cli", *args]
        env = {**self.env, **extra}
        return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=240, check=False)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "agent_eval.cli", *args]
        return subprocess.Popen(
            command, env=self.env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip

    def warm_pid(self) -> int:
        return int(json.loads((self.home / "warm.json").read_text(encoding="utf-8"))["pid"])

    def log_lines(self) -> list[str]:
        return (self.home / "warm.log").read_text(encoding="utf-8").splitlines()

    def runs_served(self) -> list[dict[str, str]]:
        """The warm log's run lines: pid, exit, argv..."""
        pattern = re.compile(r"^run pid=(\d+) exit=(\d+) wall_s=\S+ max_rss_mib=\S+ cpu_s=\S+ argv=(.*)$")
        found = (pattern.match(line) for line in self.log_lines())
        return [{"pid": m[1], "exit": m[2], "argv": m[3]} for m in found if m]

    def served_since(self, before: int, count: int = 1) -> list[dict[str, str]]:
        """The run lines after the first `before`, once `count` of them are there (or `EXIT_DEADLINE` passed): the
        warm process logs a run when it reaps the child, which may be just after the client has its exit code."""
        deadline = time.monotonic() + EXIT_DEADLINE
        while len(self.runs_served()) < before + count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.runs_served()[before:]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmStack]:
    folder = tmp_path_factory.mktemp("warm")
    (folder / "slow_agent.py").write_text(SLOW_AGENT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_", "PREFECT_LOGGING_", "CI"))}
    env.update(
        AGENT_EVAL_HOME=str(folder / "home"),
        PREFECT_HOME=str(folder / "prefect"),
        PREFECT_LOCAL_STORAGE_PATH=str(folder / "prefect" / "storage"),
        AGENT_EVAL_PREFECT_SERVER="local",
        AGENT_EVAL_DB_URL=f"sqlite:///{folder / 'store.db'}",
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(folder)]),
    )
    env.pop(warm.WARM_ENV, None)
    built = WarmStack(env=env, home=folder / "home", folder=folder)
    started = built.cli("server", "start")
    assert started.returncode == 0, started.stderr
    try:
        assert started.stdout.splitlines()[1].startswith("Warm process ready (pid ")
        yield built
    finally:
        stopped = built.cli("server", "stop")
    assert stopped.stdout.splitlines() == [
        stopped.stdout.splitlines()[0],
        "Stopped the warm process",
    ], stopped.stdout
    assert not (built.home / "warm.json").exists()
    assert built.cli("server", "status").stdout.splitlines()[:2] == [
        "No local Prefect server runs",
        "No warm process runs",
    ]


def _summary(stdout: str) -> list[str]:
    """The summary up to the regression check (the second run has the first as its baseline), without run ids."""
    lines = stdout.split("Regression check:", maxsplit=1)[0].splitlines()
    return [line for line in lines if not re.search(r"[0-9a-f]{32}", line)]


def test_a_run_goes_through_the_warm_process_and_reports_as_a_cold_run_does(stack: WarmStack) -> None:
    eval_file, _ = write_echo_set(stack.folder, ["alpha", "beta", "gamma"])
    served_before = len(stack.runs_served())
    warm_run = stack.cli("run", eval_file.name, "--agent", AGENT, "-q", cwd=stack.folder)  # a path relative to cwd
    cold_run = stack.cli("run", eval_file.name, "--agent", AGENT, "-q", cwd=stack.folder, AGENT_EVAL_WARM="0")

    assert (warm_run.returncode, cold_run.returncode) == (0, 0), warm_run.stderr + cold_run.stderr
    served = stack.served_since(served_before)
    assert [(run["exit"], json.loads(run["argv"])[:2]) for run in served] == [("0", ["run", eval_file.name])]
    assert "Total: 3  Passed: 3  Failed: 0  Pass rate: 100.0%" in warm_run.stdout
    assert _summary(warm_run.stdout) == _summary(cold_run.stdout)
    assert len(_summary(warm_run.stdout)) >= 5
    runs = list_runs(get_engine(stack.env["AGENT_EVAL_DB_URL"]))
    assert [run.status for run in runs[:2]] == ["completed", "completed"]
    status = stack.cli("server", "status").stdout.splitlines()
    assert status[1] == f"Running: the warm process, pid {stack.warm_pid()}"


def test_bad_input_is_one_line_and_exit_2_from_the_client_or_the_warm_process(stack: WarmStack) -> None:
    """A missing file is answered by the client at once; a bad agent reference, found in the run, by the child."""
    served_before = len(stack.runs_served())
    missing = stack.cli("run", "no_such_file.evalset.json", "--agent", AGENT)
    eval_file, _ = write_echo_set(stack.folder, ["alpha"])
    bad_agent = stack.cli("run", str(eval_file), "--agent", "tests.flows.agents_for_tests:no_such_agent")
    for result, named in ((missing, "no_such_file.evalset.json"), (bad_agent, "no_such_agent")):
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert named in result.stderr
    assert [run["exit"] for run in stack.served_since(served_before)] == ["2"]


def _slow_run(stack: WarmStack) -> tuple[subprocess.Popen[str], str]:
    """A 30-case run of a 1-second agent, through the warm process, once it stored its first case: (client,
    run id)."""
    eval_file, _ = write_echo_set(stack.folder, [f"case{i}" for i in range(30)])
    client = stack.popen("run", str(eval_file), "--agent", "slow_agent:agent", "-q", "--max-concurrency", "1")
    url = stack.env["AGENT_EVAL_DB_URL"]
    known = {run.id for run in list_runs(get_engine(url))}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert client.poll() is None, client.communicate()[1][-3000:]
        fresh = [run for run in list_runs(get_engine(url)) if run.id not in known]
        if fresh and fresh[0].updated_at and fresh[0].updated_at > fresh[0].started_at:
            return client, fresh[0].id
        time.sleep(0.2)
    raise AssertionError("the run did not store a case in time")


def test_a_signal_to_the_client_reaches_the_run_and_its_exit_code_comes_back(stack: WarmStack) -> None:
    client, run_id = _slow_run(stack)
    served_before = len(stack.runs_served())  # the slow run is not logged before it ends
    try:
        client.send_signal(signal.SIGINT)
        _, stderr = client.communicate(timeout=EXIT_DEADLINE)
    finally:
        if client.poll() is None:
            os.killpg(client.pid, signal.SIGKILL)
    assert client.returncode == 130
    assert stderr.strip().splitlines() == [f"agent-eval: stopped by SIGINT; run(s) marked cancelled: {run_id}"]
    assert get_run(run_id, get_engine(stack.env["AGENT_EVAL_DB_URL"])).status == "cancelled"
    assert [run["exit"] for run in stack.served_since(served_before)] == ["130"]


def test_a_killed_client_stops_its_run_within_seconds(stack: WarmStack) -> None:
    client, run_id = _slow_run(stack)
    served_before = len(stack.runs_served())
    killed = time.monotonic()
    os.killpg(client.pid, signal.SIGKILL)
    client.wait(timeout=5)
    while len(stack.runs_served()) == served_before and time.monotonic() - killed < EXIT_DEADLINE:
        time.sleep(0.1)
    assert len(stack.runs_served()) == served_before + 1, "the run outlived its killed client"
    assert stack.runs_served()[-1]["exit"] == "130"  # stopped as by SIGTERM
    assert get_run(run_id, get_engine(stack.env["AGENT_EVAL_DB_URL"])).status == "cancelled"


def test_a_different_prefect_environment_starts_cold_and_the_warm_process_stays(stack: WarmStack) -> None:
    eval_file, _ = write_echo_set(stack.folder, ["alpha"])
    served_before = len(stack.runs_served())
    pid = stack.warm_pid()
    result = stack.cli("run", str(eval_file), "--agent", AGENT, "-q", PREFECT_CLIENT_MAX_RETRIES="7")
    assert result.returncode == 0, result.stderr
    assert len(stack.runs_served()) == served_before  # it ran in the client's own process
    assert stack.log_lines()[-1] == (
        "cold: the environment differs from the warm process's in PREFECT_CLIENT_MAX_RETRIES"
    )  # the name only, never the value
    assert process_alive(pid)


def test_newer_code_starts_cold_and_the_run_starts_a_fresh_warm_process(
    stack: WarmStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Last in the module: it replaces the warm process."""
    old_pid = stack.warm_pid()
    for name, value in stack.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CI", raising=False)  # as the stack's commands run (CI sets it for this suite)
    monkeypatch.setattr(warm.client, "code_fingerprint", lambda: ["a newer agent-eval"])
    assert warm.run_in_warm_process(["history"]) is None  # run it yourself
    deadline = time.monotonic() + 30  # generous: CI runs two test processes on two busy cores
    while process_alive(old_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_alive(old_pid)  # stale: it stopped serving
    assert "cold: agent-eval or its packages changed since the warm process started" in stack.log_lines()

    eval_file, _ = write_echo_set(stack.folder, ["alpha"])
    assert stack.cli("run", str(eval_file), "--agent", AGENT, "-q").returncode == 0  # cold, then keeps warm
    new_pid = stack.warm_pid()
    assert new_pid != old_pid and process_alive(new_pid)
    assert warm.wait_until_ready(warm.start_warm_process())  # the one the run started (no second one)
    assert stack.warm_pid() == new_pid


def test_ci_and_the_opt_out_never_use_a_warm_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(warm.WARM_ENV, raising=False)
    monkeypatch.setenv("CI", "true")
    assert not warm.warm_wanted()
    monkeypatch.setenv("CI", "false")
    assert warm.warm_wanted()
    monkeypatch.setenv(warm.WARM_ENV, "0")
    assert not warm.warm_wanted()
    monkeypatch.setenv(warm.WARM_ENV, "off")
    assert not warm.warm_wanted()
    monkeypatch.setenv(warm.WARM_ENV, "maybe")  # not valid: the run starts cold, whose checks report it
    assert not warm.warm_wanted()


SERVE_ONLY = "from agent_eval.runtime.warm.serving import serve; serve(lambda argv: 0, preload=())"


def test_an_idle_warm_process_exits_and_removes_its_socket(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With no request for `AGENT_EVAL_WARM_IDLE_MINUTES`, the warm process leaves on its own (its memory freed)
    and says why in its log; its socket is gone, so the next run starts a fresh one."""
    env = {**os.environ, "AGENT_EVAL_HOME": str(tmp_path), warm.serving.IDLE_ENV: "0.03"}  # 1.8 s
    serving = subprocess.Popen(
        [sys.executable, "-c", SERVE_ONLY], env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path))
    socket_file = warm.protocol.socket_path()
    try:
        deadline = time.monotonic() + 30
        while not socket_file.exists() and serving.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert socket_file.exists()
        listening = time.monotonic()
        output, _ = serving.communicate(timeout=EXIT_DEADLINE)
    finally:
        serving.kill()
    assert 1.5 < time.monotonic() - listening < 1.8 + EXIT_DEADLINE
    assert serving.returncode == 0
    assert output.strip() == f"stopped: idle for 0.03 min ({warm.serving.IDLE_ENV})"
    assert not socket_file.exists()


def test_the_idle_limit_is_minutes_from_the_environment_and_zero_means_never(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    idle = warm.serving.idle_limit_seconds
    monkeypatch.delenv(warm.serving.IDLE_ENV, raising=False)
    assert idle() == 3600
    monkeypatch.setenv(warm.serving.IDLE_ENV, "2.5")
    assert idle() == 150
    monkeypatch.setenv(warm.serving.IDLE_ENV, "0")
    assert idle() is None
    monkeypatch.setenv(warm.serving.IDLE_ENV, "soon")
    assert idle() == 3600
    assert capsys.readouterr().out == (
        "AGENT_EVAL_WARM_IDLE_MINUTES='soon' is not valid: a number of minutes; idle limit: the default 60 min\n"
    )
