"""`agent-eval run` stopped by SIGTERM or SIGINT mid-run: exit 130 within seconds, one line on stderr, the run
stored `cancelled`, and no process left behind (Prefect's temporary server included)."""

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

from agent_eval.runtime import server
from agent_eval.runtime.processes import descendants, process_alive
from agent_eval.store import get_engine, get_run, list_runs
from tests.conftest import REPO_ROOT
from tests.flows.helpers import write_echo_set
from tests.prefect_http import prefect_api

pytestmark = pytest.mark.flow

STARTUP_TIMEOUT = 150.0
EXIT_DEADLINE = 20.0
SLOW_AGENT = """
import time
from agent_eval.agents import AgentTurn, ToolCallRecord

def agent(message, session):
    time.sleep(1.0)
    return AgentTurn(
        response=f"answer: {message}",
        tool_calls=[ToolCallRecord(name="lookup", args={"query": message}, response={"ok": True})],
    )
"""


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    # as a user runs it: no Prefect API of the tests, Prefect's console at the CLI's default (silent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_", "PREFECT_LOGGING_"))}
    env.update(
        AGENT_EVAL_DB_URL=url,
        AGENT_EVAL_HOME=str(tmp_path / "agent_eval"),
        PREFECT_HOME=str(tmp_path / "prefect"),
        PREFECT_LOCAL_STORAGE_PATH=str(tmp_path / "prefect" / "storage"),
        PYTHONPATH=str(tmp_path),
    )
    return env


def _wait_for_a_stored_case(process: subprocess.Popen[str], url: str, store: Path) -> str:
    """The run id, once the run has stored its first case run."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        runs = list_runs(get_engine(url)) if store.exists() else []
        if runs and runs[0].updated_at and runs[0].updated_at > runs[0].started_at:
            return runs[0].id
        time.sleep(0.2)
    raise AssertionError("the run did not store a case in time")


def _start_slow_ci_run(tmp_path: Path) -> tuple[subprocess.Popen[str], str, Path]:
    """A CI-mode run (Prefect's temporary server, its child) of 30 one-second cases, one at a time, in its own
    process group: (the process, the store URL, the store file)."""
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT, encoding="utf-8")
    eval_file, _ = write_echo_set(tmp_path, [f"case{i}" for i in range(30)])
    store = tmp_path / "store.db"
    url = f"sqlite:///{store}"
    command = [sys.executable, "-m", "agent_eval.cli", "run", str(eval_file), "--agent", "slow_agent:agent", "-q"]
    process = subprocess.Popen(
        [*command, "--max-concurrency", "1"], cwd=REPO_ROOT, env=_env(tmp_path, url), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    return process, url, store


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_run_cancels_the_run_and_leaves_no_process(tmp_path: Path, signum: signal.Signals) -> None:
    process, url, store = _start_slow_ci_run(tmp_path)
    try:
        run_id = _wait_for_a_stored_case(process, url, store)
        children = descendants(process.pid)
        assert children, "Prefect's temporary server should be a child of the run"
        sent = time.monotonic()
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=EXIT_DEADLINE)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)

    assert process.returncode == 130
    assert took < EXIT_DEADLINE
    assert stderr.strip().splitlines() == [f"agent-eval: stopped by {signum.name}; run(s) marked cancelled: {run_id}"]
    run = get_run(run_id, get_engine(url))
    assert run.status == "cancelled"
    assert run.error in (f"stopped by {signum.name}", "CancelledError")  # by our handler, or by the flow itself
    assert _left_after(children, seconds=3.0) == []  # the server's watchdog leaves a moment after the run


SELF_STOPPING_AGENT = """
import asyncio, os, signal

async def agent(message, session):
    if message.startswith("case1 "):
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs inside this coroutine's step, in the event loop
    await asyncio.sleep(0.5)
    return f"answer: {message}"
"""


def test_a_sigterm_that_lands_inside_a_running_case_stops_the_run_not_only_that_case(tmp_path: Path) -> None:
    """While a flow runs, Prefect's own SIGTERM handler raises in whatever the main thread runs: inside the event
    loop that is one case's step, which then fails while the run goes on. The CLI's handler is kept in force."""
    (tmp_path / "self_stopping.py").write_text(SELF_STOPPING_AGENT, encoding="utf-8")
    eval_file, _ = write_echo_set(tmp_path, [f"case{i}" for i in range(6)])
    url = f"sqlite:///{tmp_path / 'store.db'}"
    command = [sys.executable, "-m", "agent_eval.cli", "run", str(eval_file), "--agent", "self_stopping:agent", "-q"]
    result = subprocess.run(
        [*command, "--max-concurrency", "1"], cwd=REPO_ROOT, env=_env(tmp_path, url), text=True,
        capture_output=True, timeout=STARTUP_TIMEOUT, check=False,
    )  # fmt: skip
    (run,) = list_runs(get_engine(url))
    assert result.returncode == 130, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [f"agent-eval: stopped by SIGTERM; run(s) marked cancelled: {run.id}"]
    assert get_run(run.id, get_engine(url)).status == "cancelled"


def _left_after(pids: list[int], seconds: float) -> list[int]:
    """Those of `pids` still alive after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in pids if process_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_a_sigkilled_run_leaves_no_temporary_server_behind(tmp_path: Path) -> None:
    """SIGKILL gives the run no chance to stop Prefect's temporary server: its watchdog does, within seconds."""
    process, url, store = _start_slow_ci_run(tmp_path)
    try:
        _wait_for_a_stored_case(process, url, store)
        children = descendants(process.pid)
        servers = [pid for pid in children if b"uvicorn" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(servers) == 1, children
        process.kill()  # the run alone, as the OOM killer would: not its process group
        process.communicate(timeout=EXIT_DEADLINE)
        left = _left_after(children, seconds=15.0)
    finally:
        for pid in descendants(process.pid) + [pid for pid in children if process_alive(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    assert left == []  # the temporary server and its watchdog are gone


def test_a_run_sigkilled_while_the_temporary_server_starts_leaves_no_server_behind(tmp_path: Path) -> None:
    """The server is guarded from its first moment, not once it answers: a run SIGKILLed during the server's
    start (its database migrations take seconds) leaves no server behind either."""
    process, url, store = _start_slow_ci_run(tmp_path)
    try:
        server_pid, watchdog = _wait_for_a_guarded_server(process)
        children = descendants(process.pid)
        answered = _answers(_command(server_pid))
        process.kill()
        process.communicate(timeout=EXIT_DEADLINE)
        left = _left_after([server_pid, watchdog], seconds=15.0)
    finally:
        for pid in descendants(process.pid) + [pid for pid in children if process_alive(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not answered  # killed while the server started
    assert not store.exists() or list_runs(get_engine(url)) == []
    assert left == []


def _wait_for_a_guarded_server(process: subprocess.Popen[str]) -> tuple[int, int]:
    """(the temporary server's pid, its watchdog's pid), as soon as both run."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        commands = {pid: _command(pid) for pid in descendants(process.pid)}
        servers = [pid for pid, command in commands.items() if b"uvicorn" in command]
        watchdogs = [pid for pid, command in commands.items() if b"import watch" in command]
        if servers and watchdogs:
            return servers[0], watchdogs[0]
        time.sleep(0.02)
    raise AssertionError("no guarded temporary server in time")


def _answers(server_command: bytes) -> bool:
    """Whether the server that `server_command` runs answers its health check already."""
    words = server_command.split(b"\0")
    return server._healthy(f"http://127.0.0.1:{int(words[words.index(b'--port') + 1])}/api")


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_signal_on_the_local_server_cancels_the_flow_run_there_and_the_server_lives_on(tmp_path: Path) -> None:
    """The local Prefect server outlives the run (`agent_eval.runtime.server`): the stopped run's flow run must not stay
    `Running` in its UI, and the server itself must not be stopped with the run's child processes."""
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT, encoding="utf-8")
    eval_file, _ = write_echo_set(tmp_path, [f"case{i}" for i in range(30)])
    store = tmp_path / "store.db"
    url = f"sqlite:///{store}"
    env = {**_env(tmp_path, url), "AGENT_EVAL_PREFECT_SERVER": "local"}
    env.pop("CI", None)
    command = [sys.executable, "-m", "agent_eval.cli", "run", str(eval_file), "--agent", "slow_agent:agent", "-q"]
    process = subprocess.Popen(
        [*command, "--max-concurrency", "1"], cwd=REPO_ROOT, env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    state_file = tmp_path / "agent_eval" / "prefect-server.json"
    try:
        run_id = _wait_for_a_stored_case(process, url, store)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=EXIT_DEADLINE)
        local = json.loads(state_file.read_text(encoding="utf-8"))
        flow_run_id = get_run(run_id, get_engine(url)).flow_run_id
        flow_run = prefect_api(f"http://127.0.0.1:{local['port']}/api/flow_runs/{flow_run_id}")
        assert process.returncode == 130
        assert (flow_run["state"]["type"], flow_run["state"]["message"]) == ("CANCELLED", "stopped by SIGINT")
        assert process_alive(local["pid"])  # the server outlives the stopped run
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        subprocess.run([sys.executable, "-m", "agent_eval.cli", "server", "stop"], env=env, check=False)
    assert not state_file.exists()
