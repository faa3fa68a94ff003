"""Limits held beyond one process: Prefect global concurrency limits and rate limits, named by the user.

A name is a global concurrency limit the user created on the Prefect server (`prefect gcl create NAME --limit N`,
plus `--slot-decay-per-second R` for a rate limit). What holding it means depends on the limit, read once per
flow run:

- **Concurrency** (no slot decay): a slot is held for the whole call and released after it, so at most `limit`
  calls run at once across every run, shard and worker that names it.
- **Rate** (slot decay > 0): a slot is taken before the call and never released; it decays at the limit's rate,
  so calls start at no more than `slot_decay_per_second` per second on average (bursts up to `limit`): e.g. a
  model key's requests per minute.

Agent invocations hold the limits of `EvalRequest.concurrency_limits` and the config's `limits.invocations`;
judge calls hold those of the config's `limits.judge_calls`. Each acquire costs a request to the server
(70-110 ms): limits are for quotas, not for speed. A name with no limit behind it is an input error before
anything runs, never a silent absence of limit.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from prefect.client.orchestration import get_client
from prefect.concurrency.asyncio import concurrency, rate_limit
from prefect.exceptions import ObjectNotFound

from agent_eval.errors import EvalInputError
from agent_eval.plan.eval_plan import EvalPlan, LimitOrigin

__all__ = ["RunLimits", "Slot", "held_limits"]

Slot = Callable[[], AbstractAsyncContextManager[object]]
"""What to enter around one call: a slot of each named limit."""


async def held_limits(names: Mapping[str, LimitOrigin]) -> Slot | None:
    """A `Slot` holding one slot of each limit in `names` (None for no names), each as its kind asks (see the
    module docstring).

    Raises:
        EvalInputError: a name has no global concurrency limit on the server (naming the file and field where
            it was given).
    """
    if not names:
        return None
    concurrent: list[str] = []
    rated: list[str] = []
    async with get_client() as client:
        for name, origin in names.items():
            try:
                limit = await client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                raise EvalInputError(
                    f"no Prefect global concurrency limit {name!r}: create it with `prefect gcl create {name} "
                    "--limit N` (add `--slot-decay-per-second R` for a rate limit)",
                    file=origin.file,
                    field=origin.field,
                ) from None
            (rated if (limit.slot_decay_per_second or 0) > 0 else concurrent).append(name)
    return lambda: _holding(concurrent, rated)


@dataclass(frozen=True)
class RunLimits:
    """The global limits of one run: what each agent invocation and each judge call holds (None: nothing)."""

    invocations: Slot | None = None
    judge_calls: Slot | None = None

    @classmethod
    async def of(cls, plan: EvalPlan) -> RunLimits:
        """The plan's limits, read from the server (see `held_limits`, which raises for a missing one)."""
        invocations = await held_limits(plan.limit_names("invocations"))
        return cls(invocations, await held_limits(plan.limit_names("judge_calls")))


@asynccontextmanager
async def _holding(concurrent: list[str], rated: list[str]) -> AsyncIterator[None]:
    if rated:
        await rate_limit(rated, occupy=1, strict=True)
    held = concurrency(concurrent, occupy=1, strict=True) if concurrent else contextlib.nullcontext()
    async with held:
        yield
