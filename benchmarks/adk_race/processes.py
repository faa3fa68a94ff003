"""Whole-process runs (wall time, peak RSS, output), the Prefect server the runs share, and ADK's own venv.

Peak RSS is `ru_maxrss` of the finished child as `os.wait4` reports it: the largest single process among the
child and the descendants it waited for (a Prefect server it started and reaped counts; a detached one does
not), not their sum. A server's own peak is read from `/proc/PID/status` (`VmHWM`) instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = [
    "SCRUBBED_VARIABLES",
    "Measured",
    "Server",
    "child_env",
    "ensure_adk_venv",
    "group_pids",
    "kill_group",
    "run_measured",
    "server_peak_mib",
    "settle",
    "start_server",
    "stop_server",
]

SCRUBBED_VARIABLES = (
    "PREFECT_API_URL",
    "PREFECT_PROFILE",
    "PREFECT_HOME",
    "AGENT_EVAL_HOME",
    "AGENT_EVAL_DB_URL",
    "AGENT_EVAL_PREFECT_SERVER",
    "AGENT_EVAL_JUDGE_BACKEND",
    "AGENT_EVAL_JUDGE_CONCURRENCY",
    "AGENT_EVAL_GEMINI_BASE_URL",
    "CI",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "PYTHONDONTWRITEBYTECODE",
)
"""Variables no child inherits: earlier settings, real credentials, and a ban on writing bytecode caches."""

SETTLE_WINDOW = 0.25  # seconds per CPU sample of the server
SETTLE_IDLE_CPU = 0.10  # idle below this fraction of one core ...
SETTLE_IDLE_WINDOWS = 2  # ... for this many windows in a row
SETTLE_MAX = 90.0
STARTUP_TIMEOUT = 180.0


@dataclass(frozen=True)
class Measured:
    """One finished process: wall seconds, CPU seconds (user + system, with the children it waited for), peak
    RSS in MiB, exit code, and what it printed (both streams). `warm`: agent-eval's warm process ran the command,
    and its forked child's CPU and peak RSS are counted in (`with_warm_child`)."""

    wall: float
    cpu: float
    peak_mib: float
    returncode: int
    output: str
    warm: bool = False


_WARM_RUN = re.compile(r"^run pid=\d+ exit=\d+ wall_s=\S+ max_rss_mib=(\S+) cpu_s=(\S+) ")


def warm_log_size(home: Path) -> int:
    """How many bytes `$AGENT_EVAL_HOME/warm.log` holds now (0 without one)."""
    log = home / "warm.log"
    return log.stat().st_size if log.exists() else 0


def with_warm_child(run: Measured, home: Path, log_offset: int) -> Measured:
    """`run` with the warm process's child counted in, when the warm log grew a run line since `log_offset`:
    the child's CPU added to the client's, the peak the larger of both (the largest single process)."""
    log = home / "warm.log"
    if not log.exists():
        return run
    with log.open("rb") as handle:
        handle.seek(log_offset)
        found = [_WARM_RUN.match(line) for line in handle.read().decode(errors="replace").splitlines()]
    children = [match for match in found if match]
    if not children:
        return run
    peak = max(float(match[1]) for match in children)
    cpu = sum(float(match[2]) for match in children)
    return replace(run, cpu=run.cpu + cpu, peak_mib=max(run.peak_mib, peak), warm=True)


@dataclass(frozen=True)
class Server:
    """A running Prefect server: its process group, API URL, and how it was started (`agent-eval server` or ours)."""

    pgid: int
    api_url: str
    started_by: str


def child_env(pycache: Path, **updates: str) -> dict[str, str]:
    """This process's environment without `SCRUBBED_VARIABLES`, bytecode cached under `pycache`, plus `updates`.

    Bytecode: some sandboxes set `PYTHONDONTWRITEBYTECODE`, which makes every run compile the sources that have
    no cached bytecode (agent-eval's own editable sources, the race agent); a user's machine caches it. Both tools
    get the same `PYTHONPYCACHEPREFIX` (outside the repository) and the same untimed warm-up.
    """
    env = {name: value for name, value in os.environ.items() if name not in SCRUBBED_VARIABLES}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env.update(updates)
    return env


def run_measured(command: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = 900.0) -> Measured:
    """Run `command` to its end in its own process group; kill the group at `timeout` seconds and after the end
    (anything it left in its group; a detached server has its own session and is left alone)."""
    with tempfile.TemporaryFile() as output:
        started = time.perf_counter()
        process = subprocess.Popen(
            list(command),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timer = threading.Timer(timeout, kill_group, (process.pid,))
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        kill_group(process.pid)
        output.seek(0)
        text = output.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(wall, cpu, usage.ru_maxrss / 1024, process.returncode, text)


def kill_group(pgid: int) -> None:
    """SIGKILL to process group `pgid` (a group this benchmark started); nothing if it is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def group_pids(pgid: int) -> list[int]:
    """The live processes of group `pgid`, from /proc (empty without /proc)."""
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


def _cpu_seconds(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def settle(server: Server | None) -> float:
    """Wait until the server's CPU use drops to idle (it writes a run's task states for a while after the run
    returns, and a run started meanwhile waits on it); returns how long it was busy (0 without a server), i.e.
    the wait less the idle windows that end it."""
    pids = group_pids(server.pgid) if server else []
    if not pids:
        return 0.0
    started, idle, previous = time.perf_counter(), 0, _cpu_seconds(pids)
    while idle < SETTLE_IDLE_WINDOWS and time.perf_counter() - started < SETTLE_MAX:
        time.sleep(SETTLE_WINDOW)
        current = _cpu_seconds(pids)
        idle = idle + 1 if (current - previous) / SETTLE_WINDOW < SETTLE_IDLE_CPU else 0
        previous = current
    return max(0.0, time.perf_counter() - started - SETTLE_IDLE_WINDOWS * SETTLE_WINDOW)


def server_peak_mib(server: Server | None) -> float:
    """The largest `VmHWM` (peak RSS since start) among the server's processes, in MiB (0 when unknown)."""
    peaks = [0.0]
    for pid in group_pids(server.pgid) if server else []:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
    return max(peaks)


def _healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_healthy(api_url: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not _healthy(api_url):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Prefect server at {api_url} did not answer within {STARTUP_TIMEOUT:g} s")
        time.sleep(0.2)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(agent_eval: Path, env: Mapping[str, str], cwd: Path) -> Server:
    """A reusable local Prefect server: `agent-eval server start` when the CLI has it (its state file
    `$AGENT_EVAL_HOME/prefect-server.json` names its group and port), else `prefect server start` on a free port."""

    def cli(*words: str) -> int:
        return subprocess.run(
            [str(agent_eval), *words], check=False, env=dict(env), cwd=cwd, capture_output=True
        ).returncode

    if cli("server", "--help") == 0:
        started = cli("server", "start")
        state = Path(env["AGENT_EVAL_HOME"]) / "prefect-server.json"
        if started == 0 and state.is_file():
            info = json.loads(state.read_text(encoding="utf-8"))
            server = Server(int(info["pgid"]), f"http://127.0.0.1:{info['port']}/api", "agent-eval server start")
            _wait_healthy(server.api_url)
            return server
        print(f"agent-eval server start failed (exit {started}); starting prefect server", file=sys.stderr)
    port = _free_port()
    command = [str(agent_eval.parent / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    server_env = {**env, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    Path(env["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    log = (Path(env["PREFECT_HOME"]) / "server.log").open("ab")
    process = subprocess.Popen(command, env=server_env, cwd=cwd, stdout=log, stderr=log, start_new_session=True)
    server = Server(process.pid, f"http://127.0.0.1:{port}/api", "prefect server start")
    _wait_healthy(server.api_url)
    return server


def stop_server(agent_eval: Path, server: Server, env: Mapping[str, str]) -> None:
    """Stop it the way it was started, then make sure its process group is gone."""
    if server.started_by.startswith("agent-eval"):
        subprocess.run([str(agent_eval), "server", "stop"], check=False, env=dict(env), capture_output=True, timeout=60)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pgid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while group_pids(server.pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
    kill_group(server.pgid)


def ensure_adk_venv(venv: Path) -> str:
    """ADK's own venv with `google-adk[eval]` (created and installed on first use); returns google-adk's version."""
    adk = venv / "bin" / "adk"
    if not adk.exists():
        print(f"creating {venv} and installing google-adk[eval] (once) ...", file=sys.stderr)
        venv.parent.mkdir(parents=True, exist_ok=True)
        base = Path(sys.base_prefix) / "bin" / "python3"
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "google-adk[eval]"], check=True)
    probe = "import importlib.metadata as m; print(m.version('google-adk'))"
    found = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True)
    return found.stdout.strip()
