"""How a run row ends, whatever ends the process: the flow's own ending, a signal, Prefect cancelling or
crashing the flow run, or the process dying outright.

- While a run is evaluated it is listed in `ACTIVE_RUNS` and its heartbeat (`updated_at`) is bumped every
  `HEARTBEAT_SECONDS`.
- The CLI's signal handler (SIGINT, SIGTERM) ends every active run `cancelled` (`cancel_active_runs`), and its
  Prefect flow run too when it runs on a server that outlives the process (`cancel_active_flow_runs`: the
  local server or a configured one), so no flow run stays `Running` in the UI.
- Prefect's state hooks end the runs of a flow run that Prefect cancelled (`cancelled`) or saw crash
  (`crashed`), e.g. a deployment cancelled from the UI, whose process Prefect stops.
- A process killed outright leaves its run `running`; `agent_eval.store.mark_abandoned_runs`, called before
  every run and history command, ends it `crashed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

from prefect import Flow
from prefect.client.schemas.objects import FlowRun, State
from sqlmodel import Session, col, select

from agent_eval.runtime.signals import reclaim_sigterm
from agent_eval.store import HEARTBEAT_SECONDS, Run, RunStatus, end_run, get_engine, heartbeat

__all__ = [
    "ACTIVE_RUNS",
    "CANCELLED_RUNS",
    "cancel_active_flow_runs",
    "cancel_active_runs",
    "end_runs_of_flow_run",
    "on_cancelled",
    "on_crashed",
    "tracked",
]

ACTIVE_RUNS: dict[str, str | None] = {}
"""Run id → store URL of every run this process is evaluating now."""
ACTIVE_FLOW_RUNS: dict[str, tuple[str, str]] = {}
"""Run id → (flow run id, Prefect API URL) of every active run whose flow run is on a server with an API URL."""
CANCELLED_RUNS: set[str] = set()
"""Runs of this process that the flow itself ended `cancelled` (its tasks cancelled as a signal stopped it)."""
_LOCK = threading.Lock()


@contextlib.asynccontextmanager
async def tracked(run_id: str, db_url: str | None, flow_run_id: str | None = None) -> AsyncIterator[None]:
    """List the run as active and keep its heartbeat going while the body runs; a CLI's signal handler stays in
    force (`agent_eval.runtime.signals`)."""
    reclaim_sigterm()
    flow_run = _on_lasting_server(flow_run_id)
    with _LOCK:
        ACTIVE_RUNS[run_id] = db_url
        if flow_run is not None:
            ACTIVE_FLOW_RUNS[run_id] = flow_run
    beating = asyncio.create_task(_beat(run_id, db_url))
    try:
        yield
    finally:
        beating.cancel()
        with _LOCK:
            ACTIVE_RUNS.pop(run_id, None)
            ACTIVE_FLOW_RUNS.pop(run_id, None)


def _on_lasting_server(flow_run_id: str | None) -> tuple[str, str] | None:
    """The flow run id with its server's API URL (read now: Prefect's settings are context-local, and the
    signal path runs on another thread); None on Prefect's temporary server, which dies with the process."""
    from prefect.settings import get_current_settings

    api_url = get_current_settings().api.url
    return (flow_run_id, str(api_url)) if flow_run_id and api_url else None


async def _beat(run_id: str, db_url: str | None) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_SECONDS)
        with contextlib.suppress(Exception):  # a missed beat is retried next time; the run goes on
            await asyncio.to_thread(heartbeat, run_id, get_engine(db_url))


def cancel_active_runs(reason: str) -> list[str]:
    """End every active run of this process `cancelled` with `reason`; returns their ids. Safe to call from
    a signal handler: each write is its own short transaction, and a store that fails is skipped."""
    with _LOCK:
        active = dict(ACTIVE_RUNS)
    ended = []
    for run_id, db_url in active.items():
        with contextlib.suppress(Exception):
            if end_run(run_id, RunStatus.CANCELLED, reason, get_engine(db_url)):
                ended.append(run_id)
    with _LOCK:
        return sorted({*ended, *CANCELLED_RUNS})


def cancel_active_flow_runs(reason: str) -> list[str]:
    """Set the flow run of every active run `Cancelled` on its server; returns the flow run ids. Best effort:
    a server that fails is skipped (the caller bounds the time)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Cancelled

    with _LOCK:
        flow_runs = list(ACTIVE_FLOW_RUNS.values())
    cancelled = []
    for flow_run_id, api_url in flow_runs:
        with contextlib.suppress(Exception), temporary_settings(updates={PREFECT_API_URL: api_url}):
            with get_client(sync_client=True) as client:
                client.set_flow_run_state(flow_run_id, Cancelled(message=reason), force=True)
            cancelled.append(flow_run_id)
    return cancelled


def end_runs_of_flow_run(flow_run_id: str, db_url: str | None, status: str, reason: str) -> list[str]:
    """End every still-running run started by a Prefect flow run."""
    engine = get_engine(db_url)
    with Session(engine) as session:
        statement = select(Run.id).where(col(Run.flow_run_id) == flow_run_id, col(Run.status) == RunStatus.RUNNING)
        ids = list(session.exec(statement).all())
    return [run_id for run_id in ids if end_run(run_id, status, reason, engine)]


def on_cancelled(flow: Flow[..., Any], flow_run: FlowRun, state: State[Any]) -> None:
    """Prefect `on_cancellation` hook: the flow run's runs end `cancelled`."""
    _end_from_hook(flow_run, RunStatus.CANCELLED, f"cancelled in Prefect: {state.message or state.name}")


def on_crashed(flow: Flow[..., Any], flow_run: FlowRun, state: State[Any]) -> None:
    """Prefect `on_crashed` hook: the flow run's runs end `crashed`."""
    _end_from_hook(flow_run, RunStatus.CRASHED, f"the flow run crashed: {state.message or state.name}")


def _end_from_hook(flow_run: FlowRun, status: str, reason: str) -> None:
    parameters = flow_run.parameters or {}
    request = parameters.get("request") or {}
    db_url = request.get("db_url") if isinstance(request, dict) else getattr(request, "db_url", None)
    if db_url and "***" in db_url:  # Prefect keeps the URL without its password: use the one held in memory
        db_url = next(iter(ACTIVE_RUNS.values()), None)
    with contextlib.suppress(Exception):  # a hook must not hide the state it reports
        end_runs_of_flow_run(str(flow_run.id), db_url, status, reason)
