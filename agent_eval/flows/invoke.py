"""The invoke stage of a run: one `invoke-case` task per case run, at most `max_concurrency` at once, each
case run stored as soon as it is done, and the rule that decides when a cached answer may stand in for a call.

The reuse rule (DESIGN principle 3): an evaluation measures the agent as it is now. A cached answer is used
when it was produced by this evaluation (a Prefect retry of the same flow run, or a resumed attempt), by a run
this evaluation resumes (`EvalRequest.reuse_from_runs`, set by `rerun`), or, only when the user asks
(`reuse_max_age_hours`), by an earlier evaluation no older than that. Any other cached answer is discarded and
the agent is invoked again (the fresh answer replaces it in the cache).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, cast

from prefect import Task, get_run_logger
from prefect.client.schemas.objects import State

from agent_eval.agents import AgentFailure, describe_error, error_kind_of, format_traceback
from agent_eval.plan import CaseRunKey, EvalPlan
from agent_eval.progress import current_progress
from agent_eval.schema import AgentRun, CacheOrigin, EvalCase
from agent_eval.secrets import redact_text
from agent_eval.store import get_engine, record_case_run
from agent_eval.tasks import INVOKE_RETRIES, invoke_case, unvisited
from agent_eval.tasks.dask import DaskInvoker, dask_address, dask_invoker

__all__ = ["EVENTS_LOGGER", "ReusePolicy", "current_flow_run_id", "invoke_all"]

EVENTS_LOGGER = logging.getLogger("agent_eval.events")
EVENTS_LOGGER.addHandler(logging.NullHandler())  # silent unless the CLI (or the user) adds a handler
EVENTS_LOGGER.propagate = False  # the flow run logger carries the same line to Prefect
"""One line per failed case run; the CLI prints it to stderr (Prefect's own logs stay quiet)."""


@dataclass(frozen=True)
class ReusePolicy:
    """Which cached answers this evaluation may use (see the module docstring)."""

    run_id: str
    flow_run_id: str | None
    from_runs: frozenset[str]
    max_age: timedelta | None
    flow_run_attempt: int = 1

    @classmethod
    def of(cls, plan: EvalPlan, run_id: str, flow_run_id: str | None) -> ReusePolicy:
        hours = plan.request.reuse_max_age_hours
        return cls(
            run_id=run_id,
            flow_run_id=flow_run_id,
            from_runs=frozenset(plan.request.reuse_from_runs),
            max_age=timedelta(hours=hours) if hours is not None else None,
            flow_run_attempt=_flow_run_attempt(),
        )

    @property
    def reuses_nothing(self) -> bool:
        """No cached answer can be accepted: the first attempt of an evaluation that reuses no earlier one. The
        cache is then not read at all (one task per case run instead of a cache read, a rejection and a second
        task); the fresh answers are still written to it for retries and resumes."""
        return self.flow_run_attempt <= 1 and self.max_age is None and not self.from_runs

    def origin(self) -> CacheOrigin:
        """The stamp this evaluation puts on the answers it produces."""
        return CacheOrigin(run_id=self.run_id, flow_run_id=self.flow_run_id)

    def is_fresh(self, run: AgentRun) -> bool:
        """Whether the agent was invoked by this very run (not found in the cache)."""
        return run.cached_from is not None and run.cached_from.run_id == self.run_id

    def accepts(self, run: AgentRun, now: datetime) -> bool:
        """Whether a cached answer may stand in for invoking the agent."""
        origin = run.cached_from
        if origin is None:
            return False
        same_evaluation = self.flow_run_id is not None and origin.flow_run_id == self.flow_run_id
        if same_evaluation or origin.run_id in self.from_runs:
            return True
        if self.max_age is None or origin.invoked_at is None:
            return False
        return now - origin.invoked_at <= self.max_age


async def invoke_all(
    plan: EvalPlan,
    policy: ReusePolicy,
    keys: Sequence[CaseRunKey] | None = None,
    slot: Callable[[], AbstractAsyncContextManager[object]] | None = None,
) -> list[tuple[EvalCase, AgentRun]]:
    """Every case run of `keys` (default: the plan's), in that order; each stored as soon as it is done.

    At most `max_concurrency` run at once in this process, each holding its place until it is stored: at any
    moment at most `max_concurrency` case runs are started and not yet stored, which bounds what a killed
    worker loses. `slot` (default: none) is entered around each invocation too, for limits held beyond it: the
    request's Prefect global concurrency limits (`agent_eval.tasks.limits`).
    """
    local = asyncio.Semaphore(plan.request.max_concurrency)
    engine = get_engine(plan.request.db_url)
    refresh = plan.request.refresh_cache or policy.reuses_nothing
    take_slot = slot or contextlib.nullcontext

    async def one(key: CaseRunKey, dask: DaskInvoker | None) -> tuple[EvalCase, AgentRun]:
        async with local, take_slot():  # held until stored: a killed worker loses only the case runs in flight
            run = await _invoke(plan, key, policy, dask, refresh=refresh)
            if not run.failed and not policy.is_fresh(run) and not policy.accepts(run, datetime.now(UTC)):
                run = await _invoke(plan, key, policy, dask, refresh=True)  # an answer of another evaluation
            run = _with_origin(run, policy)
            await asyncio.to_thread(record_case_run, policy.run_id, run, engine)
        if run.failed:
            _report_failure(key, run)
        current_progress().case_run_done("failed" if run.failed else "cached" if run.cached_from else "invoked")
        return key.case, run

    async with dask_invoker(dask_address(plan.request.dask_address)) as dask:
        work = plan.case_runs() if keys is None else keys
        return list(await asyncio.gather(*(one(key, dask) for key in work)))


async def _invoke(
    plan: EvalPlan, key: CaseRunKey, policy: ReusePolicy, dask: DaskInvoker | None, *, refresh: bool
) -> AgentRun:
    """One `invoke-case` task run, here or on the Dask cluster, as the `AgentRun` it produced."""
    task = _refreshing_invoke_case() if refresh else invoke_case
    if dask is not None:  # parameters as they are: the task run's name is formatted from them on the worker
        parameters = {"agent": plan.agent, "case": key.case, "eval_set_id": key.eval_set_id}
        parameters |= {"run_index": key.run_index, "origin": policy.origin()}
        return _run_from_outcome(await dask.outcome(task, parameters), key)
    call = task(
        unvisited(plan.agent), unvisited(key.case), key.eval_set_id, key.run_index, policy.origin(), return_state=True
    )
    # An async task called with return_state=True gives a coroutine of its final state.
    state = await cast(Awaitable[State[AgentRun]], call)
    return _run_from_outcome(await state.aresult(raise_on_failure=False), key)


@cache
def _refreshing_invoke_case() -> Task[..., Any]:
    """`invoke-case` that writes the cache without reading it, made once: `with_options` builds a new task,
    which reads the function's source again (~3 ms a case run)."""
    return invoke_case.with_options(refresh_cache=True)


def _flow_run_attempt() -> int:
    """1 for a flow run's first attempt, 2 and more when Prefect retries it (then this evaluation's own cached
    answers are reused)."""
    from prefect.runtime import flow_run

    return int(flow_run.run_count or 1)


def _with_origin(run: AgentRun, policy: ReusePolicy) -> AgentRun:
    """`cached_from` is kept only on an answer that came from another run."""
    if run.cached_from is None or run.cached_from.run_id != policy.run_id:
        return run
    return run.model_copy(update={"cached_from": None})


def _run_from_outcome(outcome: object, key: CaseRunKey) -> AgentRun:
    """The task's `AgentRun`, or a failed one carrying the error when the task failed."""
    if isinstance(outcome, AgentRun):
        return outcome
    if isinstance(outcome, AgentFailure):
        return outcome.run
    attempts = INVOKE_RETRIES + 1  # a task that fails with anything but AgentFailure used all its retries
    if not isinstance(outcome, BaseException):
        outcome = RuntimeError(str(outcome))
    return AgentRun(
        eval_set_id=key.eval_set_id,
        eval_id=key.case.eval_id,
        run_index=key.run_index,
        error=redact_text(describe_error(outcome)),
        error_kind=error_kind_of(outcome),
        error_traceback=redact_text(format_traceback(outcome)),
        attempts=attempts,
    )


def _report_failure(key: CaseRunKey, run: AgentRun) -> None:
    """One line for a failed case run: where, what kind, the error's first line."""
    first_line = (run.error or "").strip().splitlines()[0] if run.error else "failed"
    where = f"{key.eval_set_id}/{key.case.eval_id}" + (f" run {key.run_index}" if key.run_index else "")
    kind = {"transport": "could not reach the agent", "timeout": "timed out"}.get(run.error_kind or "", "failed")
    line = f"case {where} {kind} after {run.attempts} attempt(s): {first_line}"
    line = redact_text(line)
    EVENTS_LOGGER.warning("%s", line)
    get_run_logger().warning("%s", line)


def current_flow_run_id() -> str | None:
    """The id of the flow run this code runs in, if any."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return str(context.flow_run.id) if context and context.flow_run else None
