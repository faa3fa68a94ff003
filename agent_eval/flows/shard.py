"""Sharded runs: a run's agent invocations split over flow runs of a deployment on a Prefect work pool.

With `EvalRequest.shards = N > 1`, the `agent-eval` flow starts the run in the store as usual, then creates N
flow runs of `shard_deployment` (`agent-eval-shard/shard` in `deployments/prefect.yaml`); any worker of the
deployment's pool, on any machine, runs each one. Shard `i` invokes every N-th case run from `i` and stores each
in the run as it finishes. The parent waits for every shard, reads the case runs back from the store, then
scores, aggregates, compares with the baseline and alerts exactly as an unsharded run does: the report of a
sharded run equals the unsharded one's.

- **No case lost, none invoked twice.** The store is the cache every worker shares: a shard skips the case runs
  the store already holds for the run. A shard whose flow run ends in any state but Completed (failed,
  crashed, cancelled) is submitted again, up to `SHARD_ATTEMPTS` times, and finishes only what is missing. A
  shard whose worker died (SIGKILL, a lost machine) stays Running on the server, or Pending when the worker died
  while it started the shard: the parent sets it Crashed when it sent no Prefect heartbeat for
  `STALE_HEARTBEATS` periods of `PREFECT_FLOWS_HEARTBEAT_FREQUENCY` (default 180 s; workers and parent should
  share the setting) since it entered that state, then submits it again.
- **Limits across workers.** The run's `max_concurrency` holds across all its shards: it is divided among
  them (`shard_concurrency`; there are never more shards than slots), so together they never exceed it, at
  no cost per invocation. The global limits a run names (`agent_eval.tasks.limits`) are held by every
  invocation, sharded or not, so a model API's quota holds across concurrent runs and workers.

Every shard needs what the run needs on its worker: the eval files at the same paths (the deployment's working
directory), the agent importable, the store reachable at the same URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import anyio
from prefect import flow, get_run_logger
from prefect.client.orchestration import PrefectClient, get_client
from prefect.client.schemas.objects import FlowRun, State
from prefect.deployments import arun_deployment
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter
from prefect.exceptions import ObjectNotFound
from prefect.settings import get_current_settings
from prefect.states import Cancelling, Crashed

from agent_eval.errors import EvalInputError
from agent_eval.flows.invoke import ReusePolicy, case_run_outcome, current_flow_run_id, invoke_all
from agent_eval.plan.budget import spend_of
from agent_eval.plan.eval_plan import CaseRunKey, EvalPlan, EvalRequest, prepare
from agent_eval.results.budget import spending
from agent_eval.runtime.progress import current_progress
from agent_eval.schema import AgentRun, EvalCase
from agent_eval.settings import settings
from agent_eval.store import CaseRecord, agent_run_of, case_run_outcomes, get_engine, load_case_records
from agent_eval.tasks.limits import held_limits

__all__ = [
    "SHARD_ATTEMPTS",
    "check_shard_deployment",
    "invoke_sharded",
    "shard_concurrency",
    "shard_flow",
    "wait_for_shard",
]

SHARD_ATTEMPTS = 3
"""How many times a shard is submitted before the run gives up on it."""
POLL_SECONDS = 2.0
"""How often the parent reads a shard's flow run state."""
STALE_HEARTBEATS = 2.5
"""After how many heartbeat periods (`PREFECT_FLOWS_HEARTBEAT_FREQUENCY`, default 180 s) without a heartbeat a
running shard counts as crashed."""
STALE_SECONDS_ENV = "AGENT_EVAL_SHARD_STALE_SECONDS"
"""Overrides that window, in seconds (above the heartbeat period)."""
HEARTBEAT_EVENT = "prefect.flow-run.heartbeat"
PROGRESS_SECONDS = 5.0
"""How often the parent counts the case runs its shards stored, for the progress line."""

CaseRunIdentity = tuple[str, str, int]


@flow(name="agent-eval-shard", log_prints=False)
async def shard_flow(request: EvalRequest, run_id: str, shard: int, shards: int) -> int:
    """Invoke shard `shard` (0-based) of `shards` of run `run_id`'s case runs, at most the request's
    `max_concurrency` at once (its share of the run's), each stored in the run as it finishes; case runs the
    store already holds for the run are not invoked again. Returns how many case runs this shard invoked."""
    plan = prepare(request)
    done = _stored_identities(run_id, request.db_url)
    keys = [key for key in plan.shard(shard, shards) if _identity(key) not in done]
    policy = ReusePolicy.of(plan, run_id, current_flow_run_id())
    worker = f"shard-{current_flow_run_id() or os.getpid()}"
    with spending(spend_of(plan, run_id, worker, shared=True)):  # the run's budget: one for all its shards
        await invoke_all(plan, policy, keys, await held_limits(plan.limit_names("invocations")))
    return len(keys)


async def invoke_sharded(plan: EvalPlan, run_id: str) -> list[tuple[EvalCase, AgentRun]]:
    """Every case run of the plan, invoked by `plan.request.shards` flow runs of the shard deployment and read
    back from the store, in plan order.

    Raises:
        RuntimeError: a shard did not complete after `SHARD_ATTEMPTS` submissions, or case runs are missing.
    """
    keys = plan.case_runs()
    count = min(plan.request.shards, plan.request.max_concurrency, len(keys))
    submitted: list[UUID] = []
    follower = asyncio.create_task(_follow_progress(run_id, plan.request.db_url))
    try:
        await asyncio.gather(*(_run_shard(plan, run_id, index, count, submitted) for index in range(count)))
    except BaseException:
        await _cancel_unfinished(submitted)  # a cancelled or failed parent leaves no shard working for nothing
        raise
    finally:
        follower.cancel()
    stored = {_identity_of(record): agent_run_of(record) for record in _case_records(run_id, plan.request.db_url)}
    missing = [key for key in keys if _identity(key) not in stored]
    if missing:
        first = missing[0]
        raise RuntimeError(
            f"{len(missing)} case run(s) were not stored by the shards "
            f"(first: {first.eval_set_id}/{first.case.eval_id} run {first.run_index})"
        )
    current_progress().case_runs_counted(Counter(case_run_outcome(run) for run in stored.values()))
    return [(key.case, stored[_identity(key)]) for key in keys]


async def _follow_progress(run_id: str, db_url: str | None) -> None:
    """Every `PROGRESS_SECONDS`, count the case runs the shards stored so far into the run's progress line."""
    engine = get_engine(db_url)
    while True:
        await asyncio.sleep(PROGRESS_SECONDS)
        with contextlib.suppress(Exception):  # progress is never worth failing the run for
            current_progress().case_runs_counted(await asyncio.to_thread(case_run_outcomes, run_id, engine))


def shard_concurrency(max_concurrency: int, index: int, count: int) -> int:
    """Shard `index`'s share of the run's `max_concurrency`: the slots divided as evenly as they go, so the
    shares of `count` shards (never more than the slots) add up to exactly `max_concurrency`."""
    return max_concurrency // count + (1 if index < max_concurrency % count else 0)


async def check_shard_deployment(request: EvalRequest) -> None:
    """Before anything runs, for a sharded run: its deployment exists and the stale-shard window is valid.

    Raises:
        EvalInputError: a missing deployment (naming how to deploy it) or a bad `AGENT_EVAL_SHARD_STALE_SECONDS`.
    """
    if request.shards == 1:
        return
    _stale_after()  # a bad AGENT_EVAL_SHARD_STALE_SECONDS is an input error, found now
    async with get_client() as client:
        try:
            await client.read_deployment_by_name(request.shard_deployment)
        except ObjectNotFound:
            raise EvalInputError(
                f"no deployment {request.shard_deployment!r} on the Prefect server to run shards: deploy "
                "deployments/prefect.yaml and start a worker of its pool (deployments/README.md)",
                field="shards",
            ) from None


async def _run_shard(plan: EvalPlan, run_id: str, index: int, count: int, submitted: list[UUID]) -> None:
    """Submit shard `index` and wait for it; submit it again while it ends in any state but Completed. Each
    flow run created is appended to `submitted`."""
    share = shard_concurrency(plan.request.max_concurrency, index, count)
    request = plan.request.model_copy(update={"shards": 1, "max_concurrency": share})
    parameters = {"request": request.model_dump(mode="json"), "run_id": run_id, "shard": index, "shards": count}
    state: State[Any] | None = None
    for attempt in range(1, SHARD_ATTEMPTS + 1):
        flow_run = await arun_deployment(
            plan.request.shard_deployment,
            parameters=parameters,
            timeout=0,
            flow_run_name=f"{run_id[:8]}-shard-{index + 1}-of-{count}-attempt-{attempt}",
            tags=["agent-eval", "agent-eval-shard"],
        )
        submitted.append(flow_run.id)
        state = await wait_for_shard(flow_run.id)
        if state.is_completed():
            return
        get_run_logger().warning(
            "shard %d/%d ended %s (attempt %d of %d): %s",
            index + 1,
            count,
            state.name,
            attempt,
            SHARD_ATTEMPTS,
            state.message or "",
        )
    name = state.name if state is not None else "unknown"
    raise RuntimeError(f"shard {index + 1}/{count} did not complete after {SHARD_ATTEMPTS} attempts ({name})")


async def wait_for_shard(flow_run_id: UUID, stale_after: timedelta | None = None) -> State[Any]:
    """The flow run's state once it is final. A running or pending shard that sent no heartbeat for `stale_after`
    (default `STALE_HEARTBEATS` heartbeat periods: its worker died, or its machine) is set Crashed first. Pending
    is where a worker puts a flow run while it starts its process: it never lasts a heartbeat period."""
    stale_after = stale_after or _stale_after()
    async with get_client() as client:
        while True:
            flow_run = await client.read_flow_run(flow_run_id)
            state = flow_run.state
            if state is not None and state.is_final():
                return state
            alive = state is not None and (state.is_running() or state.is_pending())
            if alive and await _silent_for(client, flow_run, stale_after):
                crashed: State[Any] = Crashed(
                    message=f"no heartbeat for {stale_after.total_seconds():g} s: its worker is gone"
                )
                await client.set_flow_run_state(flow_run_id, crashed, force=True)
                return crashed
            await asyncio.sleep(POLL_SECONDS)


async def _cancel_unfinished(flow_run_ids: Sequence[UUID]) -> None:
    """Ask Prefect to cancel the shards that are not final (their workers stop them); best effort, shielded
    so that a cancelled parent still sends it."""
    with anyio.CancelScope(shield=True):
        async with get_client() as client:
            for flow_run_id in flow_run_ids:
                with contextlib.suppress(Exception):
                    state = (await client.read_flow_run(flow_run_id)).state
                    if state is None or not state.is_final():
                        await client.set_flow_run_state(flow_run_id, Cancelling(), force=True)


def _stale_after() -> timedelta:
    """`$AGENT_EVAL_SHARD_STALE_SECONDS`, else `STALE_HEARTBEATS` periods of Prefect's flow run heartbeat.

    Raises:
        EvalInputError: the variable is not a number above the heartbeat period, or an `AGENT_EVAL_*` variable
            is not valid (`agent_eval.settings.settings`).
    """
    period = get_current_settings().flows.heartbeat_frequency or 180
    seconds = settings().shard_stale_seconds
    if seconds is None:
        return timedelta(seconds=STALE_HEARTBEATS * period)
    if seconds <= period:
        raise EvalInputError(
            f"{STALE_SECONDS_ENV}='{seconds:g}' is not valid: a number of seconds above the {period} s heartbeat"
        )
    return timedelta(seconds=seconds)


async def _silent_for(client: PrefectClient, flow_run: FlowRun, stale_after: timedelta) -> bool:
    """Whether the running flow run's last sign of life (its last heartbeat event, else its start) is older
    than `stale_after`."""
    since = datetime.now(UTC) - stale_after
    heartbeats = EventFilter(
        occurred=EventOccurredFilter(since=since),
        event=EventNameFilter(name=[HEARTBEAT_EVENT]),
        resource=EventResourceFilter(id=[f"prefect.flow-run.{flow_run.id}"]),
    )
    if (await client.read_events(filter=heartbeats, limit=1)).events:
        return False
    started = flow_run.start_time or (flow_run.state.timestamp if flow_run.state else None)
    return started is not None and started < since


def _case_records(run_id: str, db_url: str | None) -> list[CaseRecord]:
    return load_case_records(run_id, get_engine(db_url))


def _stored_identities(run_id: str, db_url: str | None) -> set[CaseRunIdentity]:
    """The case runs the store holds for the run."""
    return {_identity_of(record) for record in _case_records(run_id, db_url)}


def _identity(key: CaseRunKey) -> CaseRunIdentity:
    return (key.eval_set_id, key.case.eval_id, key.run_index)


def _identity_of(record: CaseRecord) -> CaseRunIdentity:
    return (record.eval_set_id, record.eval_id, record.run_index)
