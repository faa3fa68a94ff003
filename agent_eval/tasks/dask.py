"""Optional: agent invocations on an existing Dask cluster, through prefect-dask's `DaskTaskRunner`.

For users who already run Dask: with `EvalRequest.dask_address` (`--dask ADDRESS`, or `$AGENT_EVAL_DASK_ADDRESS`)
the flow still plans, scores, stores and compares in its own process, but each `invoke-case` task runs on a Dask
worker: the same task (its retries, its cache key, its task run in the Prefect UI under the flow run), submitted
with `DaskTaskRunner.submit` instead of awaited here. The run's `max_concurrency` still bounds how many are
submitted at once; the cluster's worker threads bound how many run at once.

What a worker needs is what a shard's worker needs: agent-eval and the agent importable (`package.module:attr`
references, or files at the same paths), the agent's credentials, the Prefect server (`PREFECT_API_URL`) and,
for the invocation cache to outlive a worker, shared result storage. The agent object travels to the worker
pickled (cloudpickle); every agent of this package pickles.

prefect-dask is an extra (`pip install 'agent-eval[dask]'`); it is imported only when an address is given.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from prefect import Task

from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.settings import DASK_ADDRESS_ENV

if TYPE_CHECKING:
    from distributed import Future
    from prefect_dask.task_runners import DaskTaskRunner

__all__ = ["DaskInvoker", "check_dask", "dask_address", "dask_invoker"]

CONNECT_SECONDS = 10.0
"""How long the check waits for the scheduler before it counts as unreachable."""


def dask_address(requested: str | None) -> str | None:
    """The scheduler to invoke on: the request's, else `$AGENT_EVAL_DASK_ADDRESS`, else None (this process)."""
    return requested or os.environ.get(DASK_ADDRESS_ENV) or None


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


class DaskInvoker:
    """Runs Prefect tasks on the cluster of an entered `DaskTaskRunner`, awaited without holding a thread."""

    def __init__(self, runner: DaskTaskRunner) -> None:
        self._runner = runner

    async def outcome(self, task: Task[..., Any], parameters: dict[str, Any]) -> Any:
        """What the task run ended with: its result, the exception it failed with, or the error that kept it
        from running (a worker lost, an agent that does not unpickle there)."""
        future = self._runner.submit(task, parameters)
        await _finished(future.wrapped_future)
        try:
            return future.result(raise_on_failure=False)
        except BaseException as error:  # the Dask future failed: the task never reached a final state
            return error


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
