"""`agent-eval server start|stop|status`, and the warm process that keeps a run's imports ready beside the local
Prefect server (`agent_eval.runtime.server`, `agent_eval.runtime.warm`).

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import argparse
from typing import Any

from agent_eval.errors import EXIT_OK
from agent_eval.runtime import server, warm

__all__ = ["add_server_parser", "keep_warm", "server_command"]


def add_server_parser(commands: Any) -> None:
    """`server start|stop|status`: the local Prefect server that runs reuse, and its warm process."""
    parser = commands.add_parser(
        "server", help="start, stop or show the local Prefect server that runs reuse (and its warm process)"
    )
    parser.add_argument("action", choices=["start", "stop", "status"])


def server_command(args: argparse.Namespace) -> int:
    """`agent-eval server start|stop|status`: one line about the local Prefect server, one about the warm
    process (`start` waits until both are ready)."""
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
    return EXIT_OK


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
