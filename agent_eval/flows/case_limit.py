"""How many case runs are in flight at once, and what happens to a rate-limited one.

An evaluation's case runs hold slots of one `AdaptiveLimit` (`agent_eval.runtime.adaptive`) whose ceiling is the
request's `max_concurrency` (`--max-concurrency`): it starts at `min(ceiling, 16)`, or where the last run of the
same agent settled (then without slow start: by 1 per round of case runs), grows while case runs end without a
rate limit, and is cut when more than a few of them are rate limited at once. Latency is no signal here: case
runs differ too much in length. Nor are starts paced after a refusal (as judge calls are): a case run is many
calls, and a paced start would sleep holding its slot (against a provider that holds 10 calls at once, pacing
made the agent stage about a tenth longer: `benchmarks/bench_agent_rate_limits.py`).

A case run is rate limited when the agent (its HTTP server, or an in-process agent's own model call) was
answered 429 / `RESOURCE_EXHAUSTED` (`AgentRun.error_kind == "rate_limit"`, `agent_eval.agents.errors`). It
keeps its slot, waits the delay the provider asked for (else 1, 2, 4 ... up to 30 s), and is invoked again,
however many times, until `RATE_LIMIT_DEADLINE` after its first try; then it is recorded failed with that
kind and counted `lost` (not evaluated, like an outage: never the agent's result). These retries spend none
of the `invoke-case` task's retries, which remain for lost connections, timeouts and 5xx.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from agent_eval.plan.eval_plan import CaseRunKey
from agent_eval.runtime.adaptive import AdaptiveLimit, Slot
from agent_eval.runtime.progress import current_progress
from agent_eval.schema import AgentRun

__all__ = ["RATE_LIMIT_DEADLINE", "CaseRunLimit", "retrying_rate_limits"]

RATE_LIMIT_DEADLINE = 600.0
"""Seconds after a case run's first try within which a rate-limited case run is tried again."""
FIRST_BACKOFF = 1.0
LONGEST_BACKOFF = 30.0


@dataclass
class CaseRunLimit:
    """The adaptive limit on an evaluation's case runs in flight, and what it met (module docstring).

    Attributes:
        ceiling: the most case runs in flight (`max_concurrency`).
        initial: where the limit starts (default `min(ceiling, 16)`), e.g. where an earlier run settled.
        rate_limited: case run tries that were rate limited and tried again.
        lost: case runs still rate limited at the deadline.
    """

    ceiling: int
    initial: int | None = None
    rate_limited: int = 0
    lost: int = 0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _limits: dict[int, AdaptiveLimit] = field(default_factory=dict, repr=False)

    def limit(self, batch_size: int = 1) -> AdaptiveLimit:
        """The limit for batches of `batch_size` case runs (one slot per batch), made on first use."""
        if batch_size not in self._limits:
            ceiling = max(1, self.ceiling // batch_size)
            initial = max(1, self.initial // batch_size) if self.initial else None
            self._limits[batch_size] = AdaptiveLimit(
                ceiling,
                initial=initial,
                latency_tolerance=float("inf"),
                pacing=False,
                slow_start=initial is None,
                clock=self.clock,
                sleep=self.sleep,
            )
        return self._limits[batch_size]

    def as_dict(self) -> dict[str, int]:
        """`concurrency` (where the limit settled, in case runs), `concurrency_max`, `rate_limited`, `lost`; empty
        before any case run."""
        if not self._limits:
            return {}
        size, limit = next(iter(self._limits.items()))
        return {
            "concurrency": limit.settled * size,
            "concurrency_max": limit.most_in_flight * size,
            "rate_limited": self.rate_limited,
            "lost": self.lost,
        }


async def retrying_rate_limits(
    keys: Sequence[CaseRunKey],
    invoke: Callable[[list[CaseRunKey]], Awaitable[list[AgentRun]]],
    slot: Slot,
    limit: CaseRunLimit,
) -> list[AgentRun]:
    """The runs of `keys` by `invoke`, where each rate-limited one is invoked again after its delay, holding
    `slot`, until `RATE_LIMIT_DEADLINE` (module docstring); `attempts` counts every try. A batch of several
    waits the longest delay among those that can still wait; one whose own delay passes the deadline is given up
    alone."""
    deadline = limit.clock() + RATE_LIMIT_DEADLINE
    runs, tries = await invoke(list(keys)), 1
    pending = list(range(len(runs)))
    while limited := [index for index in pending if runs[index].error_kind == "rate_limit"]:
        slot.throttled()
        now = limit.clock()
        pending = [index for index in limited if now + _delay(runs[index], tries) <= deadline]
        _give_up(runs, [index for index in limited if index not in pending], limit, tries)
        if not pending:
            break
        limit.rate_limited += len(pending)
        current_progress().case_runs_rate_limited(len(pending), slot.limiter.limit)
        await limit.sleep(max(_delay(runs[index], tries) for index in pending))
        slot.sent()
        again, tries = await invoke([keys[index] for index in pending]), tries + 1
        for index, run in zip(pending, again, strict=True):
            runs[index] = run.model_copy(update={"attempts": run.attempts + runs[index].attempts})
    return runs


def _delay(run: AgentRun, tries: int) -> float:
    """The provider's delay, else the backoff after `tries` tries: 1, 2, 4 ... up to 30 s."""
    if run.retry_after is not None:
        return run.retry_after
    return min(LONGEST_BACKOFF, FIRST_BACKOFF * 2.0 ** (tries - 1))


def _give_up(runs: list[AgentRun], waiting: list[int], limit: CaseRunLimit, tries: int) -> None:
    limit.lost += len(waiting)
    for index in waiting:
        run = runs[index]
        said = f"{tries} {'try' if tries == 1 else 'tries'}"
        error = f"rate limited until the deadline ({RATE_LIMIT_DEADLINE:g} s, {said}): {run.error}"
        runs[index] = run.model_copy(update={"error": error})
