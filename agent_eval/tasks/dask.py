"""Optional: agent invocations on an existing Dask cluster, through prefect-dask's `DaskTaskRunner`.

For users who already run Dask: with `EvalRequest.dask_address` (`--dask ADDRESS`, or `$AGENT_EVAL_DASK_ADDRESS`)
the flow still plans, scores, stores and compares in its own process, but the agent is invoked on Dask workers.
The case runs go in batches (`BATCH_SIZE`, at most half the run's `max_concurrency`, so that two or more are in
flight): each batch is one task run (`invoke-on-dask`) submitted with `DaskTaskRunner.submit`, which on its
worker runs the usual `invoke-case` task for each of its case runs, all at once in one event loop: the same
task runs (retries, cache key, their place under the flow run in the Prefect UI) as in this process. Batches,
not one Dask task per case run: each submission costs the flow's process ~40 ms of CPU (prefect-dask serializes
the whole Prefect settings context and walks the parameters), which one task per case run pays every time. At
most `max_concurrency` case runs are in flight at once; the cluster's worker threads bound how many batches run.

What a worker needs is what a shard's worker needs: agent-eval and the agent importable (`package.module:attr`
references, or files at the same paths), the agent's credentials, the Prefect server (`PREFECT_API_URL`) and,
for the invocation cache to outlive a worker, shared result storage. The agent object travels to the worker
pickled (cloudpickle); every agent of this package pickles.

prefect-dask is an extra (`pip install 'agent-eval[dask]'`); it is imported only when an address is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from agent_eval.agents import Agent
from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.plan.eval_plan import CaseRunKey
from agent_eval.schema import AgentRun, CacheOrigin
from agent_eval.settings import settings
from agent_eval.tasks import invoke_case_run, run_of_outcome

if TYPE_CHECKING:
    from distributed import Future
    from prefect_dask.task_runners import DaskTaskRunner

__all__ = ["BATCH_SIZE", "DaskInvoker", "check_dask", "dask_address", "dask_invoker", "invoke_batch"]

BATCH_SIZE = 16
"""Case runs per Dask task (fewer when half the run's `max_concurrency` is lower)."""
CONNECT_SECONDS = 10.0
"""How long the check waits for the scheduler before it counts as unreachable."""


def dask_address(requested: str | None) -> str | None:
    """The scheduler to invoke on: the request's, else `$AGENT_EVAL_DASK_ADDRESS`, else None (this process).

    Raises:
        EvalInputError: with no `requested`, an `AGENT_EVAL_*` variable is not valid (`agent_eval.settings`).
    """
    return requested or settings().dask_address


async def check_dask(address: str) -> None:
    """Check, before the run starts, that prefect-dask is installed and the cluster answers with a worker.

    Raises:
        EvalInputError: prefect-dask is not installed.
        InfrastructureError: the scheduler cannot be reached, or it has no worker.
    """
    _require_prefect_dask()
    from distributed import Client

    try:
        async with Client(address, asynchronous=True, timeout=CONNECT_SECONDS) as client:  # type: ignore[no-untyped-call]
            workers = len((await client.scheduler.identity(n_workers=-1)).get("workers", {}))
    except (OSError, TimeoutError, ValueError) as error:
        raise InfrastructureError(f"the Dask scheduler at {address} could not be reached: {error}") from None
    if not workers:
        raise InfrastructureError(f"the Dask cluster at {address} has no worker to invoke the agent on")


@task(name="invoke-on-dask", task_run_name="{size} case runs on a Dask worker", cache_policy=NO_CACHE)
async def invoke_batch(
    agent: Agent, keys: list[CaseRunKey], origin: CacheOrigin, refresh: bool, size: int
) -> list[AgentRun]:
    """On a Dask worker: one `invoke-case` task run per case run of `keys`, all at once in this task's event
    loop (each with its retries and cache, a task run of its own); returns their `AgentRun`s in order."""
    return list(await asyncio.gather(*(invoke_case_run(agent, key, origin, refresh=refresh) for key in keys)))


class DaskInvoker:
    """Sends batches of case runs to the cluster of an entered `DaskTaskRunner`, awaited without a thread."""

    def __init__(self, runner: DaskTaskRunner) -> None:
        self._runner = runner

    async def invoke(
        self, agent: Agent, keys: Sequence[CaseRunKey], origin: CacheOrigin, *, refresh: bool
    ) -> list[AgentRun]:
        """The `AgentRun` of each case run of `keys`, invoked on one Dask worker (`invoke_batch`); when the
        batch itself could not run (its worker lost three times, the agent does not unpickle there), each is
        a failed run carrying that error."""
        # Plain values, not `unvisited` ones: on a Dask worker, Prefect passes a quoted argument on still quoted.
        parameters = {"agent": agent, "keys": list(keys), "origin": origin, "refresh": refresh, "size": len(keys)}
        future = self._runner.submit(invoke_batch, parameters)
        await _finished(future.wrapped_future)
        outcome: object
        try:
            outcome = future.result(raise_on_failure=False)
        except BaseException as error:  # the Dask future failed: the task never reached a final state
            outcome = error
        if isinstance(outcome, list):
            return outcome
        return [run_of_outcome(outcome, key) for key in keys]


@asynccontextmanager
async def dask_invoker(address: str | None) -> AsyncIterator[DaskInvoker | None]:
    """A `DaskInvoker` connected to the scheduler at `address` for the duration (None when no address)."""
    if address is None:
        yield None
        return
    _require_prefect_dask()
    from prefect_dask.task_runners import DaskTaskRunner

    runner = DaskTaskRunner(address=address)
    await asyncio.to_thread(_connect, runner)  # the client's handshake stays off the event loop
    try:
        yield DaskInvoker(runner)
    finally:
        await asyncio.to_thread(runner.__exit__, None, None, None)


def _connect(runner: DaskTaskRunner) -> None:
    runner.__enter__()  # type: ignore[no-untyped-call]
    _ = runner.client  # connects on first use


async def _finished(future: Future[Any]) -> None:
    """Wait for a Dask future on the event loop: its done-callback (run on Dask's thread) wakes us."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not done.done():
            done.set_result(None)

    future.add_done_callback(lambda _: loop.call_soon_threadsafe(wake))  # type: ignore[no-untyped-call]
    await done


def _require_prefect_dask() -> None:
    try:
        import prefect_dask  # noqa: F401
    except ImportError:
        raise EvalInputError(
            "invoking on a Dask cluster needs prefect-dask: pip install 'agent-eval[dask]'", field="dask_address"
        ) from None
