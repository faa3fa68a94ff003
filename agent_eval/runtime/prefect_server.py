"""The local Prefect server's own process: Prefect's server app (as `prefect server start` builds and runs it),
which stops itself when nobody uses it.

Internal: started by `agent_eval.runtime.server` as `python -m agent_eval.runtime.prefect_server --port N --home H
--idle-minutes M`; this module's names may change between releases.

- **The same server.** `create_app(final=True)` served by uvicorn on 127.0.0.1, with its services (scheduler,
  task-run recorder...), its UI and Prefect's settings from the environment, as `prefect server start` runs it.
  The port is bound before Prefect is imported, so two homes that picked the same free port learn it at once.
- **Idle means**: no API or UI request for `--idle-minutes` (a request in progress, an open websocket included:
  a browsed UI polls the API) and no flow run Running or Pending in its database. It is checked every tenth of
  the period (at least every second); then one line goes to the log (`idle for N min: stopping`) and uvicorn
  stops as on SIGTERM (its services and pending task-run writes end cleanly). 0 minutes: never.
- **Its traces.** It registers itself in the machine-wide registry (`agent_eval.runtime.registry`) when it
  serves and, however it stops (idle, SIGTERM, SIGINT), removes that entry and its home's state file (if that
  names it) on the way out; the next run starts a new server as usual.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from agent_eval.runtime import registry
from agent_eval.runtime.background import state_lock_if_free

if TYPE_CHECKING:
    import uvicorn

__all__ = ["STATE_FILE", "ActivityTracker", "check_interval", "main"]

STATE_FILE = "prefect-server.json"
_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class ActivityTracker:
    """ASGI middleware around an app: counts the requests in progress (HTTP and websocket) and keeps the time the
    last one started or ended (`time.monotonic()`)."""

    def __init__(self, app: Callable[[_Scope, _Receive, _Send], Awaitable[None]]) -> None:
        self.app = app
        self.in_progress = 0
        self.last_request = time.monotonic()

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        self.in_progress += 1
        self.last_request = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_progress -= 1
            self.last_request = time.monotonic()

    def idle_seconds(self) -> float:
        """Seconds since the last request ended; 0 while one is in progress."""
        return 0.0 if self.in_progress else time.monotonic() - self.last_request


def check_interval(idle_seconds: float) -> float:
    """How often idleness is checked: a tenth of the period, at least every second."""
    return max(1.0, idle_seconds / 10)


def main(argv: list[str] | None = None) -> None:
    """Bind the port, build Prefect's server app, serve until idle or a signal; then leave no trace."""
    parser = argparse.ArgumentParser(prog="agent_eval.runtime.prefect_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--idle-minutes", type=float, default=0.0)
    parser.add_argument("--store-url", default="")
    args = parser.parse_args(argv)
    try:
        listener = _bind(args.port)
    except OSError as error:
        print(f"port {args.port} is taken ({error}): not starting", flush=True)
        sys.exit(1)
    for signum in (signal.SIGTERM, signal.SIGHUP):  # uvicorn re-raises the signal after its graceful stop
        signal.signal(signum, _exit_on_signal)
    entry = registry.register("server", args.home, f"http://127.0.0.1:{args.port}", args.store_url)
    limit = f"stops after {args.idle_minutes:g} min idle" if args.idle_minutes > 0 else "never stops when idle"
    print(f"agent-eval's Prefect server, pid {entry.pid}, on {entry.address}: {limit}", flush=True)
    try:
        server, tracker = _uvicorn_server(args.port)
        leave = functools.partial(_leave, args.home, entry)
        asyncio.run(_serve(server, tracker, listener, idle_limit=args.idle_minutes * 60, entry=entry, leave=leave))
    finally:
        _leave(args.home, entry)  # it failed before it served


def _leave(home: Path, entry: registry.Entry) -> None:
    """Remove this server's registry entry and its home's state file, and say so in the log."""
    registry.unregister("server", entry.pid)
    _forget_state(home, entry.pid)
    print("stopped", flush=True)


def _bind(port: int) -> socket.socket:
    """The server's listening socket on 127.0.0.1:`port`. Its protocol is named (`IPPROTO_TCP`): asyncio turns
    Nagle's algorithm off (`TCP_NODELAY`) only on connections of a socket whose `proto` says TCP, and with it on,
    every API answer waited ~40 ms for the client's delayed ACK (a 1-case run took 0.5 s longer)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError:
        listener.close()
        raise
    listener.listen(2048)  # uvicorn's backlog; listening now keeps any other socket off the port
    return listener


def _uvicorn_server(port: int) -> tuple[uvicorn.Server, ActivityTracker]:
    """Prefect's server app, wrapped in an `ActivityTracker`, in a uvicorn server configured as
    `prefect server start` configures it (`prefect.cli._server_utils._run_in_foreground`)."""
    import uvicorn
    from prefect.server.api.server import create_app
    from prefect.settings import (
        PREFECT_SERVER_API_KEEPALIVE_TIMEOUT,
        PREFECT_SERVER_API_WEBSOCKET_PING_INTERVAL,
        PREFECT_SERVER_API_WEBSOCKET_PING_TIMEOUT,
        PREFECT_SERVER_LOGGING_LEVEL,
    )

    tracker = ActivityTracker(create_app(final=True))
    config = uvicorn.Config(
        tracker,
        host="127.0.0.1",
        port=port,
        timeout_keep_alive=PREFECT_SERVER_API_KEEPALIVE_TIMEOUT.value(),
        ws_ping_interval=PREFECT_SERVER_API_WEBSOCKET_PING_INTERVAL.value(),
        ws_ping_timeout=PREFECT_SERVER_API_WEBSOCKET_PING_TIMEOUT.value(),
        log_level=str(PREFECT_SERVER_LOGGING_LEVEL.value()).lower(),
    )
    return uvicorn.Server(config), tracker


async def _serve(
    server: uvicorn.Server,
    tracker: ActivityTracker,
    listener: socket.socket,
    *,
    idle_limit: float,
    entry: registry.Entry,
    leave: Callable[[], None],
) -> None:
    """Serve until uvicorn stops (idle, or a signal it handles and then passes on), then `leave` and end the
    process at once: Prefect's app has shut down (its services stopped, pending writes flushed), and what asyncio
    would still wait for (tasks Prefect's background worker leaves, executor threads) can take 10 s and more."""
    watcher = asyncio.create_task(_stop_when_idle(server, tracker, idle_limit, entry)) if idle_limit > 0 else None
    code = 0
    try:
        await server.serve(sockets=[listener])
    except SystemExit:  # the signal uvicorn stopped on, raised again once it stopped (`_exit_on_signal`)
        pass
    except BaseException:
        traceback.print_exc()
        code = 1
    if watcher is not None:
        watcher.cancel()
    leave()
    sys.stderr.flush()
    os._exit(code if server.started else 1)


async def _stop_when_idle(
    server: uvicorn.Server, tracker: ActivityTracker, idle_limit: float, entry: registry.Entry
) -> None:
    """Every `check_interval`: record the last request in the registry entry; stop the server once it has been
    idle for `idle_limit` seconds with no flow run in progress. The clock starts once uvicorn serves: no request
    is answered while Prefect's app starts (its migrations may take seconds), so none would count before."""
    while not server.started and not server.should_exit:
        await asyncio.sleep(0.1)
    tracker.last_request = time.monotonic()
    while not server.should_exit:
        await asyncio.sleep(check_interval(idle_limit))
        idle = tracker.idle_seconds()
        last_active = time.time() - idle
        if entry.last_active_at is None or abs(last_active - entry.last_active_at) >= 1.0:
            entry = await asyncio.to_thread(registry.touch, entry, last_active)
        if idle < idle_limit or await _flow_runs_in_progress():
            continue
        print(f"idle for {idle_limit / 60:g} min: stopping", flush=True)
        server.should_exit = True


async def _flow_runs_in_progress() -> bool:
    """Whether the server's database holds a flow run Running or Pending (True when it cannot be asked)."""
    from prefect.server import models
    from prefect.server.database import provide_database_interface
    from prefect.server.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.server.schemas.states import StateType

    count_flow_runs: Any = models.flow_runs.count_flow_runs  # its database-injecting decorator hides the type
    in_progress = FlowRunFilter(
        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING]))
    )
    try:
        async with provide_database_interface().session_context() as session:
            count = await count_flow_runs(session=session, flow_run_filter=in_progress)
    except Exception as error:  # a locked or broken database: not idle, as far as we can tell
        print(f"could not count the flow runs in progress ({type(error).__name__}: {error})", flush=True)
        return True
    return bool(count)


def _forget_state(home: Path, pid: int) -> None:
    """Remove `home`'s state file if it names this server (another may have replaced it meanwhile). Not while
    another process holds its lock: `server stop` holds it until this process ends and removes the file itself;
    a run starting a server finds this one dead and removes it too."""
    state = home / STATE_FILE
    with state_lock_if_free(state) as held:
        if not held:
            return
        try:
            recorded = json.loads(state.read_text(encoding="utf-8")).get("pid")
        except (OSError, ValueError, AttributeError):
            return
        if recorded == pid:
            state.unlink(missing_ok=True)


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
