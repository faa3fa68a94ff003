"""Nothing left running that nobody uses: real local Prefect servers in three homes, all seen by `agent-eval server
status --all`; one stops itself once idle, one is kept up by requests (as a browsed UI does) and then by a flow run
in progress, the rest stopped by `server stop --all`; no process and no registry entry is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from agent_eval.runtime import registry
from agent_eval.runtime.prefect_server import ActivityTracker, check_interval
from agent_eval.runtime.processes import process_alive
from tests.prefect_http import prefect_api

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[1]
IDLE_MINUTES = 0.05  # 3 s, checked every second
IDLE_SECONDS = IDLE_MINUTES * 60
GONE_TIMEOUT = 90.0  # generous: a busy 2-core machine


@dataclass
class Home:
    """One agent-eval home: its folder and the environment of a command run in it."""

    name: str
    folder: Path
    env: dict[str, str]

    @property
    def state(self) -> dict[str, int]:
        return dict(json.loads((self.folder / "prefect-server.json").read_text(encoding="utf-8")))

    @property
    def log(self) -> str:
        return (self.folder / "prefect-server.log").read_text(encoding="utf-8")


class Pinger:
    """A thread that GETs `/api/health` of each chosen home's server every second, as a browsed UI polls it."""

    def __init__(self) -> None:
        self.homes: set[Path] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for folder in list(self.homes):
                try:
                    port = json.loads((folder / "prefect-server.json").read_text(encoding="utf-8"))["port"]
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2).close()
                except (OSError, ValueError, KeyError):
                    continue  # not up yet

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _processes_of(root: Path) -> list[psutil.Process]:
    """The processes whose agent-eval home (or command line) lies under `root`."""
    found = []
    for process in psutil.process_iter():
        try:
            mine = process.environ().get("AGENT_EVAL_HOME", "").startswith(str(root))
            mine = mine or any(str(root) in argument for argument in process.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if mine and process.pid != os.getpid():
            found.append(process)
    return found


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Home]]:
    """Three homes sharing a private registry: `a` and `b` idle out after 3 s, `c` never, and only `c` has a warm
    process. Whatever happens, every process of theirs is killed at the end."""
    registry_dir = tmp_path / "registry"
    monkeypatch.setenv(registry.REGISTRY_ENV, str(registry_dir))
    base = {key: value for key, value in os.environ.items() if key not in ("PREFECT_API_URL", "CI")}
    base |= {registry.REGISTRY_ENV: str(registry_dir), "AGENT_EVAL_PREFECT_SERVER": "local", "PYTHONPATH": str(REPO)}
    made = {}
    for name, idle, warm in (("a", IDLE_MINUTES, "0"), ("b", IDLE_MINUTES, "0"), ("c", 0, "1")):
        env = base | {
            "AGENT_EVAL_HOME": str(tmp_path / name / "home"),
            "PREFECT_HOME": str(tmp_path / name / "prefect"),
            "AGENT_EVAL_SERVER_IDLE_MINUTES": f"{idle:g}",
            "AGENT_EVAL_WARM": warm,
        }
        made[name] = Home(name, tmp_path / name / "home", env)
    yield made
    for process in _processes_of(tmp_path):
        for child in [*process.children(recursive=True), process]:
            child.kill()


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent_eval.cli", *args]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=240, check=False)


def _gone(pid: int, timeout: float = GONE_TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not process_alive(pid)


def _api(port: int, path: str, body: object) -> dict[str, object]:
    return dict(prefect_api(f"http://127.0.0.1:{port}/api{path}", body))


def _status_rows(env: dict[str, str]) -> set[tuple[str, int, str, str]]:
    """(kind, pid, address, home) of each line of `server status --all`."""
    done = _cli(["server", "status", "--all"], env)
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.split()[:5] == ["kind", "pid", "up", "idle", "memory"]
    rows = set()
    for line in lines:
        kind, pid, _up, _idle, memory, mib, address, _home_word, home = line.split()
        assert mib == "MiB" and int(memory) > 20  # a Python process's resident memory
        rows.add((kind, int(pid), address, home))
    return rows


def test_idle_servers_leave_used_ones_stay_and_stop_all_stops_the_rest(homes: dict[str, Home], tmp_path: Path) -> None:
    a, b, c = homes["a"], homes["b"], homes["c"]
    pinger = Pinger()
    pinger.homes |= {a.folder, b.folder}  # up until `status --all` has seen them
    try:
        starts = [
            subprocess.Popen(
                [sys.executable, "-m", "agent_eval.cli", "server", "start"],
                env=home.env,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for home in (a, b, c)
        ]
        for start in starts:
            out, err = start.communicate(timeout=240)
            assert start.returncode == 0, err
            assert out.startswith("Local Prefect server started: UI http://127.0.0.1:"), out

        warm_pid = json.loads((c.folder / "warm.json").read_text(encoding="utf-8"))["pid"]
        assert _status_rows(c.env) == {
            *(("server", h.state["pid"], f"http://127.0.0.1:{h.state['port']}", str(h.folder)) for h in (a, b, c)),
            ("warm", warm_pid, str(c.folder / "warm.sock"), str(c.folder)),
        }

        # a: nobody asks any more -> it stops itself, says so in its log, and leaves no state and no entry
        pinger.homes.discard(a.folder)
        a_pid = a.state["pid"]
        assert _gone(a_pid)
        assert "idle for 0.05 min: stopping" in a.log
        assert not (a.folder / "prefect-server.json").exists()
        assert a_pid not in [entry.pid for entry in registry.entries()]

        # b: polled every second for twice its idle period after a stopped -> still up
        b_pid, b_port = b.state["pid"], b.state["port"]
        kept_until = time.monotonic() + 2 * IDLE_SECONDS + check_interval(IDLE_SECONDS)
        while time.monotonic() < kept_until:
            time.sleep(0.5)
        assert process_alive(b_pid)
        assert "stopping" not in b.log

        # b: no request, but a flow run Running -> still up after three periods; once it completes, it leaves
        flow = _api(b_port, "/flows/", {"name": "idle-test"})
        run = _api(b_port, "/flow_runs/", {"flow_id": flow["id"], "state": {"type": "RUNNING"}})
        pinger.homes.discard(b.folder)
        quiet_until = time.monotonic() + 3 * IDLE_SECONDS + check_interval(IDLE_SECONDS)
        while time.monotonic() < quiet_until:
            time.sleep(0.5)
        assert process_alive(b_pid)
        assert "stopping" not in b.log
        _api(b_port, f"/flow_runs/{run['id']}/set_state", {"state": {"type": "COMPLETED"}, "force": True})
        assert _gone(b_pid)
        assert "idle for 0.05 min: stopping" in b.log

        # c (idle limit 0: never) and its warm process: stopped by `stop --all`, from another home
        c_pid, c_ui = c.state["pid"], f"http://127.0.0.1:{c.state['port']}"
        stopped = _cli(["server", "stop", "--all"], a.env)
        assert stopped.returncode == 0, stopped.stderr
        assert sorted(stopped.stdout.splitlines()) == [
            f"Stopped the local Prefect server, UI {c_ui} (pid {c_pid}, home {c.folder})",
            f"Stopped the warm process (pid {warm_pid}, home {c.folder})",
        ]
    finally:
        pinger.close()
    assert not process_alive(c_pid) and not process_alive(warm_pid)
    assert registry.entries() == []
    assert list((tmp_path / "registry").glob("*.json")) == []
    assert not (c.folder / "prefect-server.json").exists() and not (c.folder / "warm.json").exists()
    assert _processes_of(tmp_path) == []
    assert _cli(["server", "status", "--all"], c.env).stdout == "No background process of agent-eval runs\n"


# ------------------------------------------------------------------------------- the pieces, without a server
def test_the_idle_check_runs_a_tenth_of_the_period_at_least_every_second() -> None:
    assert check_interval(3600.0) == 360.0
    assert check_interval(3.0) == 1.0
    assert check_interval(10.0) == 1.0


def test_a_request_in_progress_is_never_idle() -> None:
    import asyncio

    started, finish = asyncio.Event(), asyncio.Event()

    async def slow_app(scope: object, receive: object, send: object) -> None:
        started.set()
        await finish.wait()

    tracker = ActivityTracker(slow_app)  # type: ignore[arg-type]

    async def scenario() -> tuple[float, int, float, int]:
        request = asyncio.create_task(tracker({"type": "http"}, None, None))  # type: ignore[arg-type]
        await started.wait()
        during, in_progress = tracker.idle_seconds(), tracker.in_progress
        finish.set()
        await request
        await asyncio.sleep(0.05)
        return during, in_progress, tracker.idle_seconds(), tracker.in_progress

    during, in_progress, after, left = asyncio.run(scenario())
    assert (during, in_progress, left) == (0.0, 1, 0)
    assert after > 0.0


def test_all_goes_with_stop_or_status_and_nothing_running_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, registry.REGISTRY_ENV: str(tmp_path / "registry"), "PYTHONPATH": str(REPO)}
    started = _cli(["server", "start", "--all"], env)
    assert (started.returncode, started.stdout) == (2, "")
    assert started.stderr.strip() == (
        "agent-eval: error: `server start` starts the current home's server only: --all goes with stop or status"
    )
    for action in ("status", "stop"):
        done = _cli(["server", action, "--all"], env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "No background process of agent-eval runs\n", "")
