"""An adaptive limit on concurrent calls to a rate-limited provider: AIMD steered by what each call reports.

```python
limit = AdaptiveLimit(ceiling=64)            # starts at min(ceiling, 16), stays within [1, 64]
async with limit.slot() as slot:             # a slot: one call in flight, however many times it is sent
    while True:
        slot.sent()                          # (optional for the first send) latency is measured from here
        try:
            return await call_the_provider()
        except RateLimited as error:
            slot.throttled()                 # a 429 / RESOURCE_EXHAUSTED / 503: the limit may be cut now
            await asyncio.sleep(error.retry_after)   # waited in the slot: a refused call is still in flight
limit.limit, limit.settled, limit.most_in_flight
```
The rule, additive increase and multiplicative decrease as in TCP's congestion control:
- a call that ends normally while the limit is in use (at least half of it in flight, and fewer than half the
  tolerated share waiting after a refusal) raises it: by 1 per call until the first cut (slow start: the limit
  doubles per round trip), then by 1 / limit per call (1 per round trip);
- a refused call (`slot.throttled()`: the caller's classifier saw a rate-limit or overload answer) keeps its
  slot while it waits to be sent again, so refusals cannot free slots for more calls into the same wall; once
  more than `refusal_tolerance` (15%) of the calls in flight wait so, the limit is cut to the share that does
  not (the calls the provider holds), by a tenth at least and a half at most. A provider whose window is
  nearly full refuses a call now and then at the best concurrency: a few refusals are tolerated;
- latency growth cuts it by `backoff` (a tenth): the median latency of the last `LATENCY_WINDOW` calls above
  `latency_tolerance` (2) times the smallest such median of the last `BASELINE_MEMORY` calls (then forgotten,
  so that a lasting change of prompts does not keep cutting);
- one cut per round trip: after a cut, signals are ignored until every send that was out at the cut has been
  answered (TCP NewReno's recovery), so 30 calls refused together cut once; a provider that refuses every call
  still meets a cut per refusal;
- a call that fails otherwise (the block is left by an exception without `throttled()`) changes nothing.
From the first refusal on, starts are paced: spread `latency / limit` apart (the rate the limit allows at the
recent median latency), so that calls that ended together do not reach a provider's rate window in one burst.
The limit stays within [`floor`, `ceiling`]; `settled` is the median of its last 50 values.

One `AdaptiveLimit` belongs to one event loop (its waiters are that loop's futures). The clock and the sleep are
injectable: tests drive the rules with fake ones. No library does this: the asyncio AIMD packages on PyPI are 0.x
releases of one author each (`aimd-limiter`, `ace-concurrency`), without held slots, a tolerated share or pacing, and
none classifies a provider's answer, which is the caller's part (`agent_eval.runtime.ratelimit`).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["DEFAULT_START", "AdaptiveLimit", "Slot"]

DEFAULT_START = 16
"""Where a new `AdaptiveLimit` starts, at most its ceiling: under agent-eval's default ceiling of 64
(`AGENT_EVAL_JUDGE_CONCURRENCY`) the judge limit starts at 16, twice the fixed cap of 8 it replaced, and grows
from there while the provider keeps up; a ceiling below 16 is where the limit starts."""
LATENCY_WINDOW = 16
BASELINE_MEMORY = 256
SETTLED_WINDOW = 50
DEEPEST_CUT = 0.5

Outcome = Literal["ok", "throttled", "failed"]


@dataclass(eq=False)
class Slot:
    """One call's hold on the limit, across the times it is sent: the current send's start and window."""

    limiter: AdaptiveLimit = field(repr=False)
    started: float
    window: int
    outcome: Outcome = "ok"
    sending: bool = True  # a send is out: not yet answered by a refusal

    def sent(self) -> None:
        """The call (or its retry) leaves now: its latency is measured from here."""
        self.limiter._send(self)

    def throttled(self) -> None:
        """The provider refused this send (rate limit, overload): the limit may be cut at once."""
        self.limiter._refusal(self)


class AdaptiveLimit:
    """An asyncio limit on calls in flight that adapts to the provider (see the module docstring).

    Args:
        ceiling: the most calls in flight ever (the user's cap).
        initial: where the limit starts (default `min(ceiling, DEFAULT_START)`), e.g. where an earlier run
            settled.
        floor: the fewest calls the limit allows.
        backoff: the factor of a cut on latency growth.
        latency_tolerance: how many times the baseline latency counts as growth.
        refusal_tolerance: the share of the calls in flight that may wait after a refusal before the limit is cut.
        pacing: whether starts are paced after the first refusal.
        slow_start: whether the limit grows by 1 per call (doubling per round trip) until the first cut; false
            for a limit that starts where an earlier run settled: it grows by 1 per round trip from there.
        clock: seconds, monotonic.
        sleep: how a start waits for its turn.
    """

    def __init__(
        self,
        ceiling: int,
        *,
        initial: int | None = None,
        floor: int = 1,
        backoff: float = 0.9,
        latency_tolerance: float = 2.0,
        refusal_tolerance: float = 0.15,
        pacing: bool = True,
        slow_start: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not 1 <= floor <= ceiling or not 0 < backoff < 1 or latency_tolerance <= 1:
            raise ValueError(
                "AdaptiveLimit needs 1 <= floor <= ceiling, 0 < backoff < 1 and latency_tolerance > 1, got "
                f"{floor=}, {ceiling=}, {backoff=}, {latency_tolerance=}"
            )
        self.ceiling, self.floor, self.backoff = ceiling, floor, backoff
        self.latency_tolerance, self.refusal_tolerance, self.pacing = latency_tolerance, refusal_tolerance, pacing
        self._clock, self._sleep = clock, sleep
        self._limit = float(min(max(initial or DEFAULT_START, floor), ceiling))
        self._in_flight = 0
        self._waiters: deque[asyncio.Future[Slot]] = deque()
        self._window = 0  # how many cuts so far: a send belongs to the window it left in
        self._sending = 0  # sends out, not yet answered
        self._waiting = 0  # calls in flight that wait to be sent again after a refusal
        self._draining = 0  # sends out since before the last cut
        self._slow_start = slow_start
        self._paced = False
        self._next_start = 0.0
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._baseline: float | None = None
        self._baseline_age = 0
        self._history: deque[int] = deque([self.limit], maxlen=SETTLED_WINDOW)
        self.most_in_flight = 0
        self.cuts = 0

    @property
    def limit(self) -> int:
        """The calls allowed in flight now."""
        return max(self.floor, min(self.ceiling, int(self._limit)))

    @property
    def in_flight(self) -> int:
        """The calls holding a slot now (waiting to be sent again after a refusal included)."""
        return self._in_flight

    @property
    def settled(self) -> int:
        """The median of the limit over the last calls (`SETTLED_WINDOW`), rounded down."""
        return int(statistics.median_low(self._history))

    def locked(self) -> bool:
        """Whether a new call would wait."""
        return self._in_flight >= self.limit

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """A slot for the block (see `acquire`); leaving it by an exception without `throttled()` is neutral."""
        held = await self.acquire()
        try:
            yield held
        except BaseException:
            if held.outcome == "ok":
                held.outcome = "failed"
            raise
        finally:
            self.release(held)

    async def acquire(self) -> Slot:
        """Wait for a slot (first come, first served), then for its turn when paced; give it back with `release`."""
        slot = self._grant() if not self._waiters and not self.locked() else await self._wait_for_slot()
        delay = self._turn()
        if delay > 0:
            try:
                await self._sleep(delay)
            except BaseException:
                slot.outcome = "failed"
                self.release(slot)
                raise
            slot.sent()
        return slot

    def release(self, slot: Slot) -> None:
        """Give the slot back; how its last send ended steers the limit (module docstring)."""
        if slot.sending:
            self._answered(slot)
            if slot.outcome == "ok":
                self._succeeded(slot)
        else:
            self._waiting -= 1
        self._in_flight -= 1
        self._history.append(self.limit)
        self._wake()

    # ------------------------------------------------------------------------------------------- the rules
    def _send(self, slot: Slot) -> None:
        if not slot.sending:  # sent again after a refusal: a new send, in the current window
            slot.sending, slot.window, slot.outcome = True, self._window, "ok"
            self._sending += 1
            self._waiting -= 1
        slot.started = self._clock()

    def _refusal(self, slot: Slot) -> None:
        slot.outcome = "throttled"
        if not slot.sending:
            return
        self._answered(slot)
        self._waiting += 1
        self._paced = self.pacing
        if self._refused_share() > self.refusal_tolerance:  # to the calls the provider holds, by a tenth to a half
            self._cut(slot, min(self.backoff, max(DEEPEST_CUT, 1 - self._refused_share())))

    def _refused_share(self) -> float:
        """The share of the calls in flight that wait after a refusal (their slot held, no send out)."""
        return self._waiting / self._in_flight if self._in_flight else 0.0

    def _answered(self, slot: Slot) -> None:
        """The send is over: out of the sends counted, and of the draining ones if it left before the last cut."""
        slot.sending = False
        self._sending -= 1
        if slot.window < self._window:
            self._draining -= 1

    def _succeeded(self, slot: Slot) -> None:
        latency = self._clock() - slot.started
        if self._latency_grew(latency):
            self._cut(slot, self.backoff)
        elif 2 * self._in_flight >= self._limit and self._refused_share() < self.refusal_tolerance / 2:
            self._limit = min(float(self.ceiling), self._limit + (1 if self._slow_start else 1 / self._limit))

    def _latency_grew(self, latency: float) -> bool:
        self._latencies.append(latency)
        if len(self._latencies) < LATENCY_WINDOW:
            return False
        recent = statistics.median(self._latencies)
        self._baseline_age += 1
        if self._baseline is None or recent < self._baseline or self._baseline_age > BASELINE_MEMORY:
            self._baseline, self._baseline_age = recent, 0
        return recent > self.latency_tolerance * self._baseline

    def _cut(self, slot: Slot, factor: float) -> None:
        if self._draining or slot.window != self._window:
            return  # the last cut has not been seen through yet: it already answered this congestion
        self._window += 1
        self._draining = self._sending  # every send still out left before this cut
        self._slow_start = False
        self._limit = max(float(self.floor), self._limit * factor)
        self.cuts += 1

    # ----------------------------------------------------------------------------------- slots and turns
    def _grant(self) -> Slot:
        """A slot whose first send leaves now, in the current window."""
        self._in_flight += 1
        self._sending += 1
        self.most_in_flight = max(self.most_in_flight, self._in_flight)
        return Slot(self, self._clock(), self._window)

    async def _wait_for_slot(self) -> Slot:
        waiter: asyncio.Future[Slot] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: hand the slot on
                granted = waiter.result()
                granted.outcome = "failed"
                self.release(granted)
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def _wake(self) -> None:
        while self._waiters and self._in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(self._grant())

    def _turn(self) -> float:
        """Seconds until this start's turn: once paced, starts are spread `latency / limit` apart (the rate the
        limit allows at the recent median latency)."""
        if not self._paced or not self._latencies:
            return 0.0
        now = self._clock()
        start = max(now, self._next_start)
        self._next_start = start + statistics.median(self._latencies) / self.limit
        return start - now
