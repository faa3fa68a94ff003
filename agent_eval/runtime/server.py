"""The Prefect server an evaluation reports to, started at most once per machine.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Which server a run uses (`server_mode`):

- `PREFECT_API_URL` set (in the environment, the active Prefect profile, or Prefect's current settings): that
  server, untouched.
- `AGENT_EVAL_PREFECT_SERVER=ephemeral`, or `CI` set (to anything but `false`/`0`): Prefect's temporary server,
  started for the run and stopped with it, so a CI job leaves no server behind (7–13 s per run).
- otherwise (`local`, the default on a workstation): a local Prefect server that agent-eval starts in the
  background on first use (Prefect's server app, as `prefect server start` runs it, on 127.0.0.1, the first free
  port from 4200, through `agent_eval.runtime.prefect_server`) and that later runs reuse: only the first run of
  the machine pays its start, and the Prefect UI keeps the run history. `agent-eval server status` shows it,
  `agent-eval server stop` stops it.

The server process is detached (its own session, not a child of the run), so stopping a run never stops it.
It stops itself after `AGENT_EVAL_SERVER_IDLE_MINUTES` (default 60; 0: never) with no API or UI request and no
flow run in progress (`agent_eval.runtime.prefect_server`); the next run starts it again.
Its pid, port and UI address live in `$AGENT_EVAL_HOME/prefect-server.json`, its log beside it, and an entry in
the machine-wide registry (`agent_eval.runtime.registry`); a file lock keeps two runs that start at once from
starting two servers.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import socket
import sys
import threading
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_eval.errors import InfrastructureError
from agent_eval.runtime import registry
from agent_eval.runtime.background import (
    in_ci,
    runs_command,
    spawn_detached,
    state_lock,
    stop_process,
    stop_with_this_process,
)
from agent_eval.runtime.prefect_server import STATE_FILE
from agent_eval.runtime.processes import group_members, listens_on, process_alive
from agent_eval.settings import default_store_url, home_dir, settings

if TYPE_CHECKING:
    from prefect.server.api.server import SubprocessASGIServer

__all__ = [
    "RECORDER_BATCH_DEFAULTS",
    "SERVER_MODE_ENV",
    "LocalServer",
    "ServerMode",
    "announce_started",
    "configured_api_url",
    "flow_server",
    "local_server_status",
    "server_mode",
    "start_local_server",
    "stop_local_server",
    "wait_until_healthy",
]

SERVER_MODE_ENV = "AGENT_EVAL_PREFECT_SERVER"
ServerMode = Literal["configured", "ephemeral", "local"]
FIRST_PORT = 4200
STARTUP_TIMEOUT_SECONDS = 90.0
_START_TRIES = 3
RECORDER_BATCH_DEFAULTS = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "500",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}
"""How the servers agent-eval starts write task runs, where the user set nothing else: in batches, flushed at
least every second. Prefect's default writes each task-run event on its own, compiling a new bulk insert each
time: ~25 ms of server CPU per case run on a 2-core machine, more than the run itself spends on the case;
batched, ~11 ms. A task run shows in the UI up to a second later; a stopped server flushes what it holds."""
_GUARD_POLL_SECONDS = 0.05  # how soon a server process Prefect spawns is guarded
# Prefect's console handler and root logger: SQLAlchemy sets its own logger to WARNING at import, so only the
# handler's level keeps its ERRORs out; the root level quiets every other library.
_SERVER_LOG_LEVEL_ENVS = ("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "PREFECT_LOGGING_ROOT_LEVEL")


@dataclass(frozen=True)
class LocalServer:
    """The background Prefect server agent-eval started: its process group leader, port and addresses."""

    pid: int
    pgid: int
    port: int
    started_at: float

    @property
    def api_url(self) -> str:
        """The value of `PREFECT_API_URL` that reaches it."""
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def ui_url(self) -> str:
        """The Prefect UI."""
        return f"http://127.0.0.1:{self.port}"


def server_mode() -> ServerMode:
    """Which server a run uses (rules in the module docstring).

    The settings are read first, even for a configured server: the CLI asks this before it starts a server or
    runs anything, so a bad `AGENT_EVAL_*` variable is reported here, before any work.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid, e.g. `AGENT_EVAL_PREFECT_SERVER` is neither
            `local` nor `ephemeral` (`agent_eval.settings.settings`).
    """
    chosen = settings().prefect_server
    if configured_api_url():
        return "configured"
    return chosen or ("ephemeral" if in_ci() else "local")


def configured_api_url() -> str | None:
    """The Prefect API the user configured: Prefect's current settings once Prefect is imported, else
    `PREFECT_API_URL` from the environment or the active profile (read without importing Prefect)."""
    if "prefect" in sys.modules:
        from prefect.settings import get_current_settings

        return get_current_settings().api.url or None
    return os.environ.get("PREFECT_API_URL") or _profile_api_url()


def _profile_api_url() -> str | None:
    prefect_home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect")
    try:
        profiles = tomllib.loads((prefect_home / "profiles.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    value = profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL")
    return str(value) if value else None


def local_server_status(home: Path | None = None) -> LocalServer | None:
    """The running local server of `home` (default: `$AGENT_EVAL_HOME`), or None (a stale state file, of a
    server that died, is removed)."""
    state = _state_path(home)
    try:
        server = LocalServer(**json.loads(state.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    if process_alive(server.pid) and _is_prefect_server(server.pid):
        return server
    state.unlink(missing_ok=True)
    return None


def start_local_server() -> tuple[LocalServer, bool]:
    """The running local server, started in the background if there is none; returns it and whether this
    call started it. Does not wait for it to answer (`wait_until_healthy`), so a run loads its inputs meanwhile."""
    with state_lock(_state_path()):
        running = local_server_status()
        if running is not None:
            return running, False
        server = _spawn(_free_port())
        _state_path().write_text(json.dumps(asdict(server)), encoding="utf-8")
        return server, True


def wait_until_healthy(
    server: LocalServer, timeout: float = STARTUP_TIMEOUT_SECONDS, announce: bool = True
) -> LocalServer:
    """Block until the server answers `/api/health` from its own processes; returns it, or the server started in
    its place when it died first (another home's server took its port meanwhile: a new port, up to 3 tries;
    `announce`d as a first start is).

    Raises:
        InfrastructureError: it did not answer within `timeout` seconds, or died 3 times (its log is named).
    """
    for _ in range(_START_TRIES):
        if _answers(server, timeout):
            return server
        if process_alive(server.pid):
            break
        server, started = start_local_server()
        if started and announce:
            announce_started(server)
    raise InfrastructureError(
        f"the local Prefect server at {server.ui_url} did not start within {timeout:g} s; see {_log_path()}"
    )


def _answers(server: LocalServer, timeout: float) -> bool:
    """Whether the server answers within `timeout` seconds (False at once when its process died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_alive(server.pid):
            return False
        if _healthy(server.api_url) and _listens(server):
            return True
        time.sleep(0.1)
    return False


def _listens(server: LocalServer) -> bool:
    """Whether a process of the server's group holds the socket listening on its port (so a health answer is
    its own, not another server's on the same port); asked of each member (psutil: Linux, macOS alike)."""
    return any(listens_on(pid, server.port) for pid in group_members(server.pgid))


def stop_local_server(grace_seconds: float = 10.0, home: Path | None = None) -> LocalServer | None:
    """Stop the local server of `home` (default: `$AGENT_EVAL_HOME`; its whole process group: SIGTERM, which
    lets it end its services and writes, then SIGKILL after `grace_seconds`); returns it, or None if none ran."""
    with state_lock(_state_path(home)):
        server = local_server_status(home)
        if server is None:
            return None
        stop_process(server.pid, grace_seconds, group=server.pgid)
        _state_path(home).unlink(missing_ok=True)
        registry.unregister("server", server.pid)
        return server


@contextlib.contextmanager
def flow_server(announce: bool = True) -> Iterator[None]:
    """Run the enclosed flow on the server `server_mode` picks: for `local`, the background server (started
    now if the CLI did not start it already, and waited for) through Prefect's temporary settings."""
    mode = server_mode()
    if mode == "configured":
        yield
        return
    if mode == "ephemeral":
        with _patient_ephemeral_start():
            yield
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    server, started = start_local_server()
    if started and announce:
        announce_started(server)
    server = wait_until_healthy(server, announce=announce)
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


@contextlib.contextmanager
def _patient_ephemeral_start() -> Iterator[None]:
    """Prefect's temporary server as a run needs it, where the user did not set otherwise: 90 s to start (20 s
    is too short on a busy 2-core machine), no telemetry (offline, its failures print tracebacks) and task runs
    written in batches (`RECORDER_BATCH_DEFAULTS`)."""
    from prefect.settings import (
        PREFECT_SERVER_ANALYTICS_ENABLED,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    defaults = {
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: STARTUP_TIMEOUT_SECONDS,
        PREFECT_SERVER_ANALYTICS_ENABLED: False,
    }
    updates = {setting: value for setting, value in defaults.items() if setting.name not in os.environ}
    batched = {name: value for name, value in RECORDER_BATCH_DEFAULTS.items() if name not in os.environ}
    with temporary_settings(updates=updates), _server_environment(batched), _quiet_server_libraries():
        _start_guarded_temporary_server()
        yield


def _start_guarded_temporary_server() -> None:
    """Start Prefect's temporary server now (the one the run's Prefect client would start on its first request,
    and reuses), and have it stopped should this process die without stopping it (see
    `stop_with_this_process`): a SIGKILLed CI run leaves no server behind, even one killed while the server
    starts (its migrations take seconds). Prefect's `start` blocks until the server answers, so it runs on a
    thread (in this context: Prefect's settings) while this one guards each server process it spawns.

    Raises:
        InfrastructureError: it did not answer within the startup timeout.
    """
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    temporary = SubprocessASGIServer()
    timeout = int(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
    failures: list[Exception] = []

    def start() -> None:
        try:
            temporary.start(timeout=timeout)
        except Exception as error:  # Prefect raises RuntimeError on a timeout, httpx's errors on a bad answer
            failures.append(error)

    # A daemon: a run stopped by a signal meanwhile exits at once (Prefect's atexit hook and the guard stop the server).
    starter = threading.Thread(
        target=contextvars.copy_context().run, args=(start,), name="temporary-server", daemon=True
    )
    starter.start()
    while starter.is_alive():
        _guard_temporary_server(temporary)
        starter.join(_GUARD_POLL_SECONDS)
    _guard_temporary_server(temporary)
    if failures:
        raise InfrastructureError(f"Prefect's temporary server did not start within {timeout} s: {failures[0]}")


def _guard_temporary_server(temporary: SubprocessASGIServer) -> None:
    """Guard the server process `temporary` runs now, if any (Prefect starts another on a port conflict)."""
    if temporary.server_process is not None:
        stop_with_this_process(temporary.server_process.pid, b"prefect.server.api.server:create_app")


@contextlib.contextmanager
def _quiet_server_libraries() -> Iterator[None]:
    """Keep Prefect's temporary server (and SQLAlchemy, aiosqlite... inside it) off the run's stderr.

    The server is a child process that writes to our stderr; when it is stopped at exit, SQLAlchemy can log a
    cancelled connection reset as an ERROR with a traceback, which is noise to the user. Prefect reads logging
    overrides from the environment its child inherits, so the console handler's and the root logger's levels
    are raised there while the run lasts, over any value set, and restored after. The run's own process
    configured its logging when it imported Prefect, so it is unaffected; the server's history keeps its logs.
    """
    with _server_environment(dict.fromkeys(_SERVER_LOG_LEVEL_ENVS, "CRITICAL")):
        yield


@contextlib.contextmanager
def _server_environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in this process's environment while the block lasts (the temporary server, our child, inherits
    them), the earlier values restored after."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def announce_started(server: LocalServer) -> None:
    """One line on stderr: a server now runs in the background, where its UI is, how to stop it."""
    print(
        f"agent-eval: started a local Prefect server for this and later runs: UI {server.ui_url} "
        "(`agent-eval server stop` stops it)",
        file=sys.stderr,
    )


def _spawn(port: int) -> LocalServer:
    """Prefect's server (`agent_eval.runtime.prefect_server`) detached from this process: a shell starts it in
    the background and exits at once, so the server is not our child (a signal that stops the run does not stop
    it). `-P`: no folder on `sys.path` before the installed packages (it runs in the home folder)."""
    current = settings()
    command = [sys.executable, "-P", "-m", "agent_eval.runtime.prefect_server", "--port", str(port)]
    command += ["--home", str(home_dir()), "--idle-minutes", f"{max(current.server_idle_minutes, 0.0):g}"]
    command += ["--store-url", registry.hide_password(default_store_url())]  # a command line: visible to all users
    env = {**RECORDER_BATCH_DEFAULTS, **os.environ}
    env |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "true"}
    env.pop("PREFECT_API_URL", None)
    pid = spawn_detached(command, _log_path(), env)
    return LocalServer(pid=pid, pgid=os.getpgid(pid), port=port, started_at=time.time())


def _free_port() -> int:
    """The first port from 4200 that nothing listens on."""
    for port in range(FIRST_PORT, FIRST_PORT + 100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise InfrastructureError(f"no free port in {FIRST_PORT}-{FIRST_PORT + 99} for a local Prefect server")


def _healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _is_prefect_server(pid: int) -> bool:
    """Whether `pid` still runs a Prefect server (ours, `agent_eval.runtime.prefect_server`, or
    `prefect server start` as earlier versions started it)."""
    return runs_command(pid, b"prefect", b"server")


def _state_path(home: Path | None = None) -> Path:
    return (home or home_dir()) / STATE_FILE


def _log_path() -> Path:
    return home_dir() / "prefect-server.log"
