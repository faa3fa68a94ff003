"""`agent-eval server start|stop|status`, and the warm process that keeps a run's imports ready beside the local
Prefect server (`agent_eval.runtime.server`, `agent_eval.runtime.warm`); with `--all`, `status` and `stop` act on
every background process of agent-eval on the machine, whatever its home (`agent_eval.runtime.registry`).

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from agent_eval.errors import EXIT_OK, EvalInputError
from agent_eval.runtime import registry, server, warm
from agent_eval.runtime.background import stop_process
from agent_eval.runtime.processes import process_alive
from agent_eval.settings import default_store_shown

__all__ = ["add_server_parser", "keep_warm", "server_command"]


def add_server_parser(commands: Any) -> None:
    """`server start|stop|status`: the local Prefect server that runs reuse, and its warm process."""
    parser = commands.add_parser(
        "server", help="start, stop or show the local Prefect server that runs reuse (and its warm process)"
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument(
        "--all",
        action="store_true",
        help="status, stop: every local Prefect server and warm process of agent-eval on this machine, any home",
    )


def server_command(args: argparse.Namespace) -> int:
    """`agent-eval server start|stop|status`: one line about the local Prefect server, one about the warm
    process (`start` waits until both are ready); `status` also names the store and the Prefect API that a run
    from this shell uses; with `--all`, a line per background process of the machine.

    Raises:
        EvalInputError: `--all` with `start` (it starts the current home's only).
    """
    if getattr(args, "all", False):
        if args.action == "start":
            raise EvalInputError("`server start` starts the current home's server only: --all goes with stop or status")
        return _stop_all() if args.action == "stop" else _status_all()
    if args.action == "start":
        running, started = server.start_local_server()
        running = server.wait_until_healthy(running, announce=False)
        state = "started" if started else "already running"
        print(f"Local Prefect server {state}: UI {running.ui_url}, PREFECT_API_URL={running.api_url}")
        print(_start_warm_line())
        return EXIT_OK
    if args.action == "stop":
        stopped, warm_stopped = server.stop_local_server(), warm.stop_warm_process()
        print(f"Stopped the local Prefect server, UI {stopped.ui_url}" if stopped else "No local Prefect server runs")
        if warm_stopped is not None:
            print("Stopped the warm process")
        return EXIT_OK
    found, warm_found = server.local_server_status(), warm.warm_process_status()
    print(f"Running: local Prefect server, UI {found.ui_url}" if found else "No local Prefect server runs")
    print(f"Running: the warm process, pid {warm_found.pid}" if warm_found else "No warm process runs")
    print(f"Store: {default_store_shown()}")
    print(f"Prefect API for runs: {_api_in_use(found.api_url if found else None)}")
    return EXIT_OK


def _api_in_use(local_api: str | None) -> str:
    """Which Prefect API a run from this shell uses (`server.server_mode`): the configured one, the local
    server's, or a temporary one per run."""
    mode = server.server_mode()
    if mode == "configured":
        return f"{server.configured_api_url()} (PREFECT_API_URL)"
    if mode == "ephemeral":
        return "a temporary server per run (AGENT_EVAL_PREFECT_SERVER=ephemeral, or CI)"
    return f"{local_api} (the local server)" if local_api else "the local server, started by the next run"


def _status_all() -> int:
    """One line per background process of agent-eval on the machine: kind, pid, age, idle time (when it says),
    resident memory, address, home."""
    found = registry.entries()
    if not found:
        print("No background process of agent-eval runs")
        return EXIT_OK
    now = time.time()
    print(f"{'kind':<7} {'pid':>7} {'up':>7} {'idle':>7} {'memory':>9}  address / home")
    for entry in found:
        idle = _duration(now - entry.last_active_at) if entry.last_active_at is not None else "-"
        print(
            f"{entry.kind:<7} {entry.pid:>7} {_duration(now - entry.started_at):>7} {idle:>7} "
            f"{_resident_mib(entry.pid):>9}  {entry.address}  home {entry.home}"
        )
    return EXIT_OK


def _stop_all() -> int:
    """Stop every background process of the machine, each as `server stop` does for its home (in parallel);
    a line for each one stopped."""
    from concurrent.futures import ThreadPoolExecutor

    found = registry.entries()
    if not found:
        print("No background process of agent-eval runs")
        return EXIT_OK
    with ThreadPoolExecutor(max_workers=len(found)) as pool:
        lines = list(pool.map(_stop_entry, found))
    for line in lines:
        print(line)
    return EXIT_OK


def _stop_entry(entry: registry.Entry) -> str:
    """Stop one registered process through its home's state (lock, state file), or by its pid when that home no
    longer names it; the line that says what was stopped."""
    home = Path(entry.home)
    if entry.kind == "server":
        stopped = server.stop_local_server(home=home)
        if stopped is None or stopped.pid != entry.pid:
            stop_process(entry.pid, grace_seconds=10.0)
        line = f"Stopped the local Prefect server, UI {entry.address} (pid {entry.pid}, home {entry.home})"
    else:
        warm_stopped = warm.stop_warm_process(home=home)
        if warm_stopped is None or warm_stopped.pid != entry.pid:
            stop_process(entry.pid, grace_seconds=5.0)
        line = f"Stopped the warm process (pid {entry.pid}, home {entry.home})"
    registry.unregister(entry.kind, entry.pid)
    return line if _ended(entry.pid) else f"Could not stop the {entry.kind} process {entry.pid} (home {entry.home})"


def _ended(pid: int, timeout: float = 5.0) -> bool:
    """Whether `pid` has ended within `timeout` seconds (a SIGKILLed process needs a moment to go)."""
    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _duration(seconds: float) -> str:
    """`42s`, `17m`, `3h05m`."""
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def _resident_mib(pid: int) -> str:
    """The process's resident memory (psutil's RSS) in MiB, or `?` when the system will not say."""
    import psutil

    try:
        return f"{psutil.Process(pid).memory_info().rss / 2**20:.0f} MiB"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "?"


def _start_warm_line() -> str:
    if not warm.warm_wanted():
        return f"No warm process: runs import everything themselves ({warm.WARM_ENV}=0 or CI is set)"
    process = warm.start_warm_process()
    if warm.wait_until_ready(process):
        return f"Warm process ready (pid {process.pid}): runs start with their imports done"
    return "The warm process did not get ready; runs import everything themselves (see its log, warm.log)"


def keep_warm() -> None:
    """After a run on the local server: start the warm process in the background if none runs, so the next
    run starts warm (not in a warm child, not in CI, not with `AGENT_EVAL_WARM=0`)."""
    if warm.in_warm_child() or not warm.warm_wanted() or server.server_mode() != "local":
        return
    if server.local_server_status() is not None:
        warm.start_warm_process()
