"""A run's budget: what its agent and judge calls may spend, and the rule that stops the run once they would pass it.

Internal: the public API is the `budget` config section, `--budget` / `--max-tokens` and the requests' fields.

The rule (`Spend.start`):
- The spend so far is the priced tokens (`agent_eval.results.pricing`) of every finished agent case run and judge
  call of the run, in this process and, for a run split over shards, in every other process of the run (`others`,
  read from the store each time a call starts); tokens are input + output + thinking.
- A call in flight is counted at the mean spend of a finished call of its kind (agent case run, or judge call).
  Until a call of a kind has finished, nothing is known of what one costs: the first call of each kind in a
  process runs alone (`reserve`), the others wait for it (a shard's first call does not wait for another
  shard's).
- A new call starts only if the spend so far, the calls in flight and the new call together stay within the budget
  (in dollars and in tokens, each that is set). Once one is refused, every later one is too: the run is *stopped*
  (`Spend.stopped` says why), its calls in flight finish and are stored, and what did not start is not evaluated.
- With a dollar budget, a model whose cost is unknown (no price, or no token counts) stops the run at the next
  call: its spend cannot be known. Models named before the run (the judges') are checked before it starts
  (`unpriced_models`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.results.pricing import model_cost, run_cost
from agent_eval.schema import BudgetConfig, ModelPrice, ModelUsage, merged_usage

__all__ = [
    "PROBE_PENDING",
    "Budget",
    "CallKind",
    "Spend",
    "SpendTotals",
    "active_spend",
    "reserve",
    "spending",
    "unpriced_models",
]

CallKind = Literal["agent", "judge"]


@dataclass(frozen=True)
class Budget:
    """The most a run may spend: dollars and/or tokens (None: no cap of that kind)."""

    usd: float | None = None
    tokens: int | None = None

    @classmethod
    def of(cls, usd: float | None, tokens: int | None, config: BudgetConfig | None) -> Budget | None:
        """The request's caps first, else the config's `budget`; None when neither sets any."""
        found = cls(
            usd=usd if usd is not None else (config.usd if config else None),
            tokens=tokens if tokens is not None else (config.tokens if config else None),
        )
        return found if found.usd is not None or found.tokens is not None else None

    def describe(self) -> str:
        """E.g. `$5.00 and 2,000,000 tokens`."""
        parts = [_dollars(self.usd) if self.usd is not None else "", f"{self.tokens:,} tokens" if self.tokens else ""]
        return " and ".join(part for part in parts if part)


class SpendTotals(BaseModel):
    """What one process of a run has spent: tokens per model for each kind, finished calls and calls in flight."""

    model_config = ConfigDict(extra="forbid")

    agent: dict[str, ModelUsage] = Field(default_factory=dict)
    judges: dict[str, ModelUsage] = Field(default_factory=dict)
    finished: dict[str, int] = Field(default_factory=dict, description="Finished calls per kind.")
    in_flight: dict[str, int] = Field(default_factory=dict, description="Calls in flight per kind.")

    def plus(self, other: SpendTotals) -> SpendTotals:
        """Both processes' spend together."""
        return SpendTotals(
            agent=merged_usage(self.agent, other.agent),
            judges=merged_usage(self.judges, other.judges),
            finished=_summed(self.finished, other.finished),
            in_flight=_summed(self.in_flight, other.in_flight),
        )


@dataclass
class Spend:
    """The spend of one run in this process, against its budget (the rule is in the module docstring).

    Thread-safe: agent case runs and judge calls start and finish from several threads and event loops.

    Attributes:
        budget: the caps.
        pricing: the config's `pricing` section.
        others: the other processes' spend of the same run (shards), or None for a run in one process.
        publish: called with this process's totals after each change, for the other processes to read.
    """

    budget: Budget
    pricing: Mapping[str, ModelPrice] | None = None
    others: Callable[[], SpendTotals] | None = None
    publish: Callable[[SpendTotals], None] | None = None
    stopped: str | None = None
    """Why the run stopped starting calls (None: it has not)."""
    _mine: SpendTotals = field(default_factory=SpendTotals)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._changed = threading.Condition(self._lock)

    def start(self, kind: CallKind, *, after_probe: bool = False) -> str | None:
        """Reserve a call of `kind`: None when it may start (it is then in flight until `finish`), else why not;
        `after_probe`: `PROBE_PENDING` while this process has a call of `kind` in flight and none of the run has
        finished (nothing is known of what a call costs yet: wait for it, `wait_for_change`)."""
        with self._lock:
            run = self._run_totals()  # one read of the other processes' spend (the store, for a shard)
            if after_probe and self.stopped is None and self._probing(kind, run):
                return PROBE_PENDING
            if self.stopped is None:
                self.stopped = self._refusal(run, kind)
            if self.stopped is not None:
                return f"{self.stopped} ({self._spent_text(run)})"
            self._mine.in_flight[kind] = self._mine.in_flight.get(kind, 0) + 1
            totals = self._mine.model_copy(deep=True)
        self._publish(totals)
        return None

    def finish(self, kind: CallKind, usage: Mapping[str, ModelUsage] | None = None, *, counted: bool = True) -> None:
        """A call reserved with `start` ended: its tokens per model (None or empty: it spent none) count now;
        `counted` False: it made no call (an answer from a cache), so it does not lower the mean of a call."""
        with self._lock:
            self._mine.in_flight[kind] = max(0, self._mine.in_flight.get(kind, 0) - 1)
            self._mine.finished[kind] = self._mine.finished.get(kind, 0) + (1 if counted else 0)
            side = "agent" if kind == "agent" else "judges"
            setattr(self._mine, side, merged_usage(getattr(self._mine, side), usage or {}))
            totals = self._mine.model_copy(deep=True)
            self._changed.notify_all()
        self._publish(totals)

    def stop(self, reason: str) -> None:
        """Stop starting calls for `reason` (a reason given earlier stands): another process of the run found the
        budget reached, or the run ends."""
        with self._lock:
            self.stopped = self.stopped or reason
            self._changed.notify_all()

    def wait_for_change(self, timeout: float) -> None:
        """Block until a call finishes or the run stops, at most `timeout` seconds."""
        with self._lock:
            self._changed.wait(timeout)

    def _probing(self, kind: CallKind, run: SpendTotals) -> bool:
        """Whether this process's first call of `kind` is in flight with none of the run's finished (the lock held)."""
        return self._mine.in_flight.get(kind, 0) > 0 and run.finished.get(kind, 0) == 0

    @property
    def totals(self) -> SpendTotals:
        """This process's spend (a copy)."""
        with self._lock:
            return self._mine.model_copy(deep=True)

    def spent_text(self) -> str:
        """E.g. `$4.9812 and 1,203,400 tokens spent` (the whole run's, other processes' included)."""
        with self._lock:
            return self._spent_text(self._run_totals())

    def _spent_text(self, run: SpendTotals) -> str:
        cost = run_cost(run.agent, run.judges, self.pricing).total_usd
        parts = [("an unknown cost" if cost is None else _dollars(cost)) if self.budget.usd is not None else ""]
        parts.append(f"{_tokens(merged_usage(run.agent, run.judges)):,} tokens" if self.budget.tokens else "")
        return " and ".join(part for part in parts if part) + " spent"

    def _refusal(self, run: SpendTotals, kind: CallKind) -> str | None:
        """Why a new call of `kind` may not start now, with the run's spend `run` (the rule), or None."""
        if self.budget.usd is not None:
            reason = self._over_dollars(run, kind, self.budget.usd)
            if reason is not None:
                return reason
        if self.budget.tokens is not None:
            spent = _tokens(merged_usage(run.agent, run.judges))
            if spent + _coming(run, kind, _tokens_per_call(run)) > self.budget.tokens:
                return f"budget of {self.budget.describe()} reached"
        return None

    def _over_dollars(self, run: SpendTotals, kind: CallKind, cap: float) -> str | None:
        cost = run_cost(run.agent, run.judges, self.pricing)
        if cost.unpriced or cost.total_usd is None:
            unknown = ", ".join(cost.unpriced) or "a model that reported no token counts"
            budget = self.budget.describe()
            return f"budget of {budget}: the cost of {unknown} is unknown (add it to the config's `pricing`)"
        per_call = {
            "agent": _per_call(cost.agent_usd, run.finished.get("agent", 0)),
            "judge": _per_call(cost.judge_usd, run.finished.get("judge", 0)),
        }
        if cost.total_usd + _coming(run, kind, per_call) > cap:
            return f"budget of {self.budget.describe()} reached"
        return None

    def _run_totals(self) -> SpendTotals:
        return self._mine if self.others is None else self._mine.plus(self.others())

    def _publish(self, totals: SpendTotals) -> None:
        if self.publish is not None:
            self.publish(totals)


PROBE_PENDING = "the first call of its kind is in flight: wait for it"
"""What `Spend.start(..., after_probe=True)` answers while nothing is known of what a call costs."""


async def reserve(spend: Spend, kind: CallKind) -> str | None:
    """Reserve a call of `kind` once it may start (`Spend.start`), None, or why it may not: the first call of each
    kind in a process runs alone, so that what a call costs is known before calls are counted in flight."""
    while True:
        answer = await asyncio.to_thread(spend.start, kind, after_probe=True)  # a shard's spend: a store read
        if answer is not PROBE_PENDING:
            return answer
        await asyncio.to_thread(spend.wait_for_change, 1.0)


def unpriced_models(models: Iterable[str], pricing: Mapping[str, ModelPrice] | None) -> list[str]:
    """The models no price covers (the config's `pricing`, else genai-prices' table), sorted."""
    probe = ModelUsage(calls=1, input_tokens=1, output_tokens=1)
    return sorted({model for model in models if model_cost(model, probe, dict(pricing or {})).source is None})


_ACTIVE: list[Spend] = []
_ACTIVE_LOCK = threading.Lock()


@contextmanager
def spending(spend: Spend | None) -> Iterator[Spend | None]:
    """Make `spend` the process's active run budget for the block (None: no budget, nothing changes)."""
    if spend is None:
        yield None
        return
    with _ACTIVE_LOCK:
        _ACTIVE.append(spend)
    try:
        yield spend
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.remove(spend)


def active_spend() -> Spend | None:
    """The budget of the run in progress in this process (the latest started), or None."""
    with _ACTIVE_LOCK:
        return _ACTIVE[-1] if _ACTIVE else None


def _dollars(value: float) -> str:
    """`$0.0090` under a dollar, `$12.50` from one up."""
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _coming(run: SpendTotals, kind: CallKind, per_call: Mapping[str, float]) -> float:
    """The calls in flight and the new one, each at its kind's mean spend per finished call."""
    flying = {name: run.in_flight.get(name, 0) for name in ("agent", "judge")}
    flying[kind] += 1
    return sum(count * per_call.get(name, 0.0) for name, count in flying.items())


def _per_call(spent: float | None, finished: int) -> float:
    return (spent or 0.0) / finished if finished else 0.0


def _tokens_per_call(run: SpendTotals) -> dict[str, float]:
    return {
        "agent": _per_call(_tokens(run.agent), run.finished.get("agent", 0)),
        "judge": _per_call(_tokens(run.judges), run.finished.get("judge", 0)),
    }


def _tokens(usage: Mapping[str, ModelUsage]) -> int:
    return sum((u.input_tokens or 0) + (u.output_tokens or 0) + (u.thinking_tokens or 0) for u in usage.values())


def _summed(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {key: a.get(key, 0) + b.get(key, 0) for key in {*a, *b}}
