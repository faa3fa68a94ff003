"""The invoke stage of a run: one `invoke-case` task per case run (in this process, or in batches on a Dask
cluster: `agent_eval.tasks.dask`), at most `max_concurrency` at once, each case run stored as soon as it is done,
and the rule that decides when a cached answer may stand in for a call.

The reuse rule (DESIGN principle 3): an evaluation measures the agent as it is now. A cached answer is used
when it was produced by this evaluation (a Prefect retry of the same flow run, or a resumed attempt), by a run
this evaluation resumes (`EvalRequest.reuse_from_runs`, set by `rerun`), or, only when the user asks
(`reuse_max_age_hours`), by an earlier evaluation no older than that. Any other cached answer is discarded and
the agent is invoked again (the fresh answer replaces it in the cache).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from prefect import get_run_logger
from sqlalchemy.engine import Engine

from agent_eval.flows.case_limit import CaseRunLimit, retrying_rate_limits
from agent_eval.plan.eval_plan import CaseRunKey, EvalPlan
from agent_eval.results.budget import active_spend, reserve
from agent_eval.runtime.progress import CaseRunOutcome, current_progress
from agent_eval.schema import AgentRun, CacheOrigin, EvalCase, ModelUsage
from agent_eval.secrets import redact_text
from agent_eval.store import get_engine, record_case_run
from agent_eval.tasks import invoke_case_run
from agent_eval.tasks.dask import BATCH_SIZE, DaskInvoker, dask_address, dask_invoker

__all__ = ["ReusePolicy", "case_run_outcome", "current_flow_run_id", "invoke_all", "not_started_run"]


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

    def rejects(self, run: AgentRun, now: datetime) -> bool:
        """Whether an answer must be invoked again: another evaluation's, not reusable under this policy."""
        return not run.failed and not self.is_fresh(run) and not self.accepts(run, now)

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


InvokeBatch = Callable[[Sequence[CaseRunKey], bool], Awaitable[list[AgentRun]]]
"""Invokes case runs (`True`: refreshing the cache instead of reading it) and returns their runs in order."""


async def invoke_all(
    plan: EvalPlan,
    policy: ReusePolicy,
    keys: Sequence[CaseRunKey] | None = None,
    slot: Callable[[], AbstractAsyncContextManager[object]] | None = None,
    limit: CaseRunLimit | None = None,
) -> list[tuple[EvalCase, AgentRun]]:
    """Every case run of `keys` (default: the plan's), in that order; each stored as soon as it is done.

    At most `max_concurrency` are in flight, fewer while the agent is rate limited (`limit`, default a new
    `CaseRunLimit` of `max_concurrency`: `agent_eval.flows.case_limit`), each holding its place until it is
    stored: at any moment at most `max_concurrency` case runs are started and not yet stored, which bounds what
    a killed worker loses. With a Dask address (`agent_eval.tasks.dask`) they go to the cluster in batches, a
    batch holding the places of its case runs. `slot` (default: none) is entered around each invocation too,
    inside its place, for limits held beyond this process: the request's Prefect global concurrency limits
    (`agent_eval.tasks.limits`), kept while a rate-limited case run waits to be tried again; with Dask, such
    limits make every batch one case run, so that each invocation holds its own slot.
    """
    work = list(plan.case_runs() if keys is None else keys)
    async with dask_invoker(dask_address(plan.request.dask_address)) as dask:
        if dask is None:
            invoke, size = _invoker_here(plan, policy), 1
        else:  # two batches in flight or more; one case run each when every invocation holds a global slot
            invoke = _invoker_on(dask, plan, policy)
            size = 1 if slot else max(1, min(BATCH_SIZE, plan.request.max_concurrency // 2))
        limit = limit or CaseRunLimit(plan.request.max_concurrency)
        return await _invoke_in_batches(plan, policy, work, invoke, size=size, slot=slot, limit=limit)


async def _invoke_in_batches(
    plan: EvalPlan,
    policy: ReusePolicy,
    work: list[CaseRunKey],
    invoke: InvokeBatch,
    *,
    size: int,
    slot: Callable[[], AbstractAsyncContextManager[object]] | None,
    limit: CaseRunLimit,
) -> list[tuple[EvalCase, AgentRun]]:
    """`work` in batches of `size`, as many batches at once as `limit` lets (at most `max_concurrency // size`),
    each stored before its slot is given back; then each case run reported to the progress (`_report`)."""
    places = limit.limit(size)
    engine = get_engine(plan.request.db_url)
    refresh = plan.request.refresh_cache or policy.reuses_nothing
    take_slot = slot or contextlib.nullcontext

    async def attempt(keys: list[CaseRunKey]) -> list[AgentRun]:
        return await _within_budget(keys, lambda started: _fresh_runs(invoke, started, policy, refresh=refresh))

    async def batch(keys: list[CaseRunKey]) -> list[tuple[EvalCase, AgentRun]]:
        # held until stored: a killed worker loses only the case runs in flight
        async with places.slot() as held, take_slot():
            runs = await retrying_rate_limits(keys, attempt, held, limit)
            await asyncio.to_thread(_record_all, policy.run_id, runs, engine)
        for key, run in zip(keys, runs, strict=True):
            _report(key, run)
        return [(key.case, run) for key, run in zip(keys, runs, strict=True)]

    batches = [work[start : start + size] for start in range(0, len(work), size)]
    return [pair for done in await asyncio.gather(*(batch(keys) for keys in batches)) for pair in done]


async def _within_budget(
    keys: list[CaseRunKey], invoke: Callable[[list[CaseRunKey]], Awaitable[list[AgentRun]]]
) -> list[AgentRun]:
    """The runs of `keys`: those the run's budget (`agent_eval.results.budget`) lets start are invoked and their
    spend counted; the others are not started (`not_started_run`). Without a budget, all are invoked."""
    spend = active_spend()
    if spend is None:
        return await invoke(keys)
    refusals = [await reserve(spend, "agent") for _ in keys]
    started = [key for key, refusal in zip(keys, refusals, strict=True) if refusal is None]
    invoked = iter(await invoke(started) if started else [])
    runs = [
        next(invoked) if refusal is None else not_started_run(key, refusal)
        for key, refusal in zip(keys, refusals, strict=True)
    ]
    for run in runs:
        if not run.not_started:
            await asyncio.to_thread(spend.finish, "agent", _spent(run))
    return runs


def _spent(run: AgentRun) -> dict[str, ModelUsage]:
    """What a case run's model calls spent now (an answer reused from another run: nothing)."""
    usage = run.token_usage
    return usage.spent if usage is not None and run.cached_from is None else {}


def not_started_run(key: CaseRunKey, reason: str) -> AgentRun:
    """The record of a case run the budget did not let start: not evaluated, with why."""
    return AgentRun(
        eval_set_id=key.eval_set_id,
        eval_id=key.case.eval_id,
        run_index=key.run_index,
        error=f"not started: {reason}",
        error_kind="budget",
        attempts=0,
    )


async def _fresh_runs(
    invoke: InvokeBatch, keys: list[CaseRunKey], policy: ReusePolicy, *, refresh: bool
) -> list[AgentRun]:
    """The runs of `keys`, where an answer of another evaluation that `policy` does not accept is replaced by a
    fresh invocation, and `cached_from` kept only on answers from another run."""
    runs = await invoke(keys, refresh)
    now = datetime.now(UTC)
    stale = [index for index, run in enumerate(runs) if policy.rejects(run, now)]
    if stale:
        for index, run in zip(stale, await invoke([keys[i] for i in stale], True), strict=True):
            runs[index] = run
    return [_with_origin(run, policy) for run in runs]


def _record_all(run_id: str, runs: list[AgentRun], engine: Engine) -> None:
    for run in runs:
        record_case_run(run_id, run, engine)


def _invoker_here(plan: EvalPlan, policy: ReusePolicy) -> InvokeBatch:
    """Case runs invoked in this process, one `invoke-case` task run each."""

    async def invoke(keys: Sequence[CaseRunKey], refresh: bool) -> list[AgentRun]:
        calls = (invoke_case_run(plan.agent, key, policy.origin(), refresh=refresh) for key in keys)
        return list(await asyncio.gather(*calls))

    return invoke


def _invoker_on(dask: DaskInvoker, plan: EvalPlan, policy: ReusePolicy) -> InvokeBatch:
    """Case runs invoked on the Dask cluster, a batch per Dask task (`agent_eval.tasks.dask`)."""

    async def invoke(keys: Sequence[CaseRunKey], refresh: bool) -> list[AgentRun]:
        return await dask.invoke(plan.agent, keys, policy.origin(), refresh=refresh)

    return invoke


def _flow_run_attempt() -> int:
    """1 for a flow run's first attempt, 2 and more when Prefect retries it (then this evaluation's own cached
    answers are reused)."""
    from prefect.runtime import flow_run

    return int(flow_run.run_count or 1)


def case_run_outcome(run: AgentRun) -> CaseRunOutcome:
    """How a case run counts in the progress line: the agent `failed`, its answer was `cached` from another
    run, it was `invoked`, or the budget left it `not started`."""
    if run.not_started:
        return "not started"
    return "failed" if run.failed else "cached" if run.cached_from else "invoked"


def _with_origin(run: AgentRun, policy: ReusePolicy) -> AgentRun:
    """`cached_from` is kept only on an answer that came from another run."""
    if run.cached_from is None or run.cached_from.run_id != policy.run_id:
        return run
    return run.model_copy(update={"cached_from": None})


def _report(key: CaseRunKey, run: AgentRun) -> None:
    """Count a finished case run in the progress (`runtime.progress`, which the CLI shows on stderr); a failed
    one is also one line there and in the flow run's log."""
    failure = _failure_line(key, run) if run.failed else None
    current_progress().case_run_done(case_run_outcome(run), failure)
    if failure is not None:
        get_run_logger().warning("%s", failure)


def _failure_line(key: CaseRunKey, run: AgentRun) -> str:
    """One line for a failed case run: where, what kind, the error's first line (secrets redacted)."""
    first_line = next(iter((run.error or "").strip().splitlines()), "failed")
    where = f"{key.eval_set_id}/{key.case.eval_id}" + (f" run {key.run_index}" if key.run_index else "")
    kinds = {"transport": "could not reach the agent", "timeout": "timed out", "rate_limit": "was rate limited"}
    kind = kinds.get(run.error_kind or "", "failed")
    return redact_text(f"case {where} {kind} after {run.attempts} attempt(s): {first_line}")


def current_flow_run_id() -> str | None:
    """The id of the flow run this code runs in, if any."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return str(context.flow_run.id) if context and context.flow_run else None
