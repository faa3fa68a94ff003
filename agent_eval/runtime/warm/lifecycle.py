"""Starting, finding and stopping the warm process (`agent-eval server start|stop|status`).

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from agent_eval.runtime import registry
from agent_eval.runtime.background import runs_command, spawn_detached, state_lock, stop_process
from agent_eval.runtime.processes import process_alive
from agent_eval.runtime.warm.protocol import socket_path
from agent_eval.settings import home_dir

__all__ = [
    "READY_TIMEOUT_SECONDS",
    "WarmProcess",
    "log_path",
    "start_warm_process",
    "stop_warm_process",
    "wait_until_ready",
    "warm_process_status",
]

READY_TIMEOUT_SECONDS = 60.0
_STATE_FILE = "warm.json"


@dataclass(frozen=True)
class WarmProcess:
    """The running warm process: its pid and the socket runs reach it on."""

    pid: int
    socket_path: str
    started_at: float


def warm_process_status(home: Path | None = None) -> WarmProcess | None:
    """The warm process of `home` (default: `$AGENT_EVAL_HOME`) when it runs and listens, else None (still
    importing, or not running)."""
    warm = _recorded(home)
    return warm if warm is not None and Path(warm.socket_path).exists() else None


def start_warm_process() -> WarmProcess:
    """The warm process, started detached in the background if none runs (`wait_until_ready` waits for its
    imports); it logs to `log_path()`. A file lock keeps two runs that end at once from starting two."""
    with state_lock(_state_path()):
        running = _recorded()
        if running is not None:
            return running
        # -P: no folder on sys.path before the installed packages (as for the `agent-eval` console script)
        command = [sys.executable, "-P", "-c", "from agent_eval.cli.main import serve_warm; serve_warm()"]
        pid = spawn_detached(command, log_path())
        warm = WarmProcess(pid=pid, socket_path=str(socket_path()), started_at=time.time())
        _state_path().write_text(json.dumps(asdict(warm)), encoding="utf-8")
        return warm


def wait_until_ready(warm: WarmProcess, timeout: float = READY_TIMEOUT_SECONDS) -> bool:
    """Whether the warm process listens within `timeout` seconds (False: it died or is still importing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process_alive(warm.pid):
        if Path(warm.socket_path).exists():
            return True
        time.sleep(0.1)
    return False


def stop_warm_process(grace_seconds: float = 5.0, home: Path | None = None) -> WarmProcess | None:
    """Stop the warm process of `home` (default: `$AGENT_EVAL_HOME`; SIGTERM, then SIGKILL), listening or not;
    runs it started go on to their end."""
    with state_lock(_state_path(home)):
        warm = _recorded(home)
        if warm is None:
            return None
        stop_process(warm.pid, grace_seconds)
        with contextlib.suppress(OSError):
            os.unlink(warm.socket_path)
        _state_path(home).unlink(missing_ok=True)
        registry.unregister("warm", warm.pid)
        return warm


def log_path() -> Path:
    """`$AGENT_EVAL_HOME/warm.log`: the warm process's output, one line per run it served or sent back cold."""
    path = home_dir() / "warm.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _recorded(home: Path | None = None) -> WarmProcess | None:
    """The warm process the state file names, if that pid still runs one (else the stale file is removed)."""
    state = _state_path(home)
    try:
        warm = WarmProcess(**json.loads(state.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    if process_alive(warm.pid) and runs_command(warm.pid, b"serve_warm"):
        return warm
    state.unlink(missing_ok=True)
    return None


def _state_path(home: Path | None = None) -> Path:
    return (home or home_dir()) / _STATE_FILE
