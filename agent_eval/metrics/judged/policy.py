"""How judge calls are paced: an adaptive concurrency limit per event loop, retries, counters.

The limit is an `AdaptiveLimit` (`agent_eval.runtime.adaptive`) per running event loop (asyncio primitives
belong to one loop), shared by every judge of the process that runs on that loop: a run's metrics, samples and
judges all draw from it. It starts at 16 calls in flight (at most the ceiling), grows while calls succeed at a
steady latency, and is cut, once per round of calls, when rate-limit or overload answers (429,
`RESOURCE_EXHAUSTED`, 503, a timeout) keep more than a few calls waiting, or when the latency doubles; it never
exceeds `AGENT_EVAL_JUDGE_CONCURRENCY` (default 64), its ceiling, read when the loop first calls a judge, nor falls
below 1 (`agent_eval.runtime.adaptive` has the rules).

Retries: a judge made without an explicit `RetryPolicy` takes `current_retry_policy()`: per setting, the
config's `judge` section (installed for a block by `configured_retry`, e.g. while a criterion is scored),
else `AGENT_EVAL_JUDGE_RETRY_ATTEMPTS` / `_INITIAL_DELAY` / `_MAX_DELAY`, else ADK's default. Retry settings
are no part of a judge answer's cache key. A rate-limit or overload answer spends no attempt: the call keeps its
slot of the limit and is sent again after the delay the provider asked for (else the backoff) until
`RetryPolicy.rate_limit_deadline` (10 minutes) after its first call.

Limits beyond the process: inside `gated_judge_calls(gate)` (the flow that scores installs it from the config's
`limits.judge_calls`), every judge call also enters `gate()` while it holds its local slot: e.g. a slot of a
Prefect global concurrency or rate limit shared by every run on the judge's API key.

Counters: each judge counts into its own `JudgeStats` and into the process-wide `judge_totals()`, which only
grow; `totals.since(before)` with `before = totals.snapshot()` gives what the judges of the process did in
between (e.g. while one evaluation scored its criteria). Beside the counters, two gauges say where the limit
went: `concurrency` (where it settled) and `concurrency_max` (the most calls it let be in flight at once).
"""

from __future__ import annotations

import asyncio
import random
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import Generic, Literal, TypeAlias, TypeVar

from agent_eval.errors import EvalInputError
from agent_eval.metrics.judged.credentials import DEFAULT_CONCURRENCY, judge_concurrency, judge_retry_env
from agent_eval.runtime.adaptive import AdaptiveLimit

__all__ = [
    "CounterName",
    "JudgeStats",
    "LoopLocal",
    "RetryPolicy",
    "configured_retry",
    "current_retry_policy",
    "gated_judge_calls",
    "judge_call_gate",
    "judge_limiter",
    "judge_totals",
    "retry_policy",
    "start_judge_limiter_at",
    "use_judge_limiter",
]

T = TypeVar("T")
CounterName: TypeAlias = Literal["samples", "calls", "cache_hits", "retries", "errors", "rate_limited", "lost"]
GAUGES = ("concurrency", "concurrency_max")
"""The `JudgeStats` fields that are levels, not counts: `since` gives their value now, not a difference."""


class LoopLocal(Generic[T]):
    """One value per running event loop, made on first use (clients and semaphores are bound to a loop)."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self) -> T:
        """The running loop's value (must be called from a coroutine)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            value = self._values.get(loop)
            if value is None:
                value = self._values[loop] = self._factory()
            return value

    def set(self, value: T) -> None:
        """Make `value` the running loop's value."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._values[loop] = value

    def made(self) -> bool:
        """Whether the running loop has its value already."""
        loop = asyncio.get_running_loop()
        with self._lock:
            return loop in self._values

    def pop(self) -> T | None:
        """Forget the running loop's value and return it (`None` when it was never made)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._values.pop(loop, None)


def _new_limiter() -> AdaptiveLimit:
    try:
        ceiling = judge_concurrency()
    except EvalInputError:  # reported before the run by check_judge_credentials; a call never raises
        ceiling = DEFAULT_CONCURRENCY
    return AdaptiveLimit(ceiling)


_LIMITERS: LoopLocal[AdaptiveLimit] = LoopLocal(_new_limiter)


def judge_limiter() -> AdaptiveLimit:
    """The running loop's adaptive limit on judge calls in flight, shared by all judges (module docstring)."""
    return _LIMITERS.get()


def use_judge_limiter(limit: AdaptiveLimit) -> None:
    """Send the running loop's judge calls from now on under `limit`: e.g. one that starts where an earlier run
    settled (`AdaptiveLimit(ceiling, initial=settled)`), or a fixed one (`floor = initial = ceiling`)."""
    _LIMITERS.set(limit)


def start_judge_limiter_at(settled: int | None) -> None:
    """Start the running loop's limit on judge calls at `settled` (where an earlier run settled, within the
    ceiling; from there it grows by 1 per round trip, no slow start) instead of 16; nothing when `settled` is
    `None` or the loop already has a limit (it has learnt the provider already: a long-lived process that
    evaluates again)."""
    if settled is not None and not _LIMITERS.made():
        ceiling = _new_limiter().ceiling
        use_judge_limiter(AdaptiveLimit(ceiling, initial=settled, slow_start=False))


_GATE: ContextVar[Callable[[], AbstractAsyncContextManager[object]] | None] = ContextVar(
    "agent_eval_judge_gate", default=None
)


@contextmanager
def gated_judge_calls(gate: Callable[[], AbstractAsyncContextManager[object]] | None) -> Iterator[None]:
    """Inside the block (and the coroutines it starts), every judge call also holds what `gate()` gives while it
    is sent (see the module docstring); `None` adds nothing."""
    token = _GATE.set(gate)
    try:
        yield
    finally:
        _GATE.reset(token)


def judge_call_gate() -> AbstractAsyncContextManager[object]:
    """What one judge call enters besides the loop's semaphore: the installed gate's, else nothing."""
    gate = _GATE.get()
    return gate() if gate is not None else nullcontext()


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed judge call is tried again: on 408, 429, 5xx, timeouts and lost connections.

    The wait before retry `n` (1-based) is `min(initial_delay * exp_base ** (n - 1), max_delay)`, stretched by
    up to `jitter` of itself (so parallel calls that hit a rate limit together do not retry together).
    Defaults are ADK's: 7 attempts, 5 s doubling up to 120 s.

    A rate-limit or overload answer (429, `RESOURCE_EXHAUSTED`, 503) spends no attempt: the call is retried
    after the delay the provider asked for (`Retry-After`, Gemini's `RetryInfo.retryDelay`), stretched by up to
    `jitter`, else after the same backoff counted over those answers, for as long as the next call would start
    within `rate_limit_deadline` of the first.

    Attributes:
        attempts: calls in all, the first included (1 = no retry), rate-limit and overload answers aside.
        initial_delay: seconds before the first retry.
        max_delay: the longest wait of the backoff, in seconds (a provider's own delay is waited as asked).
        exp_base: the growth factor of the wait.
        jitter: the random share added to each wait (0 = none).
        rate_limit_deadline: seconds after its first call within which a rate-limited call is retried (0 = never).
    """

    attempts: int = 7
    initial_delay: float = 5.0
    max_delay: float = 120.0
    exp_base: float = 2.0
    jitter: float = 0.1
    rate_limit_deadline: float = 600.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be at least 1, got {self.attempts!r}")
        delays = (self.initial_delay, self.max_delay, self.jitter, self.rate_limit_deadline)
        if min(delays) < 0 or self.exp_base < 1:
            raise ValueError(f"RetryPolicy delays and jitter must be >= 0 and exp_base >= 1, got {self!r}")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 for the second attempt)."""
        base = min(self.initial_delay * self.exp_base ** (retry - 1), self.max_delay)
        return min(base * (1 + self.jitter * random.random()), self.max_delay)


@dataclass
class JudgeStats:
    """What a judge did (thread-safe counters and two gauges), for a metric's details and the run's summary.

    Attributes:
        samples: answers returned by `ask`.
        calls: requests sent to the backend (every attempt counts).
        cache_hits: answers read from the cache (no request).
        retries: calls after a retryable failure (rate-limited ones included).
        errors: answers with `error` set (failed calls and unparseable answers), never dropped.
        rate_limited: calls retried after a rate-limit or overload answer (429, `RESOURCE_EXHAUSTED`, 503).
        lost: answers given up on rate limiting or overload (`RetryPolicy.rate_limit_deadline` passed).
        concurrency: where the adaptive limit settled (the median of its last values), at the last call.
        concurrency_max: the most judge calls the limit let be in flight at once, at the last call.
    """

    samples: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    rate_limited: int = 0
    lost: int = 0
    concurrency: int = 0
    concurrency_max: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, name: CounterName, amount: int = 1) -> None:
        """Add `amount` to the counter `name`."""
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def observe(self, limit: AdaptiveLimit) -> None:
        """Set the gauges from the adaptive limit a call was made under."""
        with self._lock:
            self.concurrency, self.concurrency_max = limit.settled, limit.most_in_flight

    def as_dict(self) -> dict[str, int]:
        """The counters and gauges by name, e.g. `{"samples": 5, "calls": 6, "cache_hits": 0, "retries": 1,
        "errors": 0, "rate_limited": 1, "lost": 0, "concurrency": 16, "concurrency_max": 16}`."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def snapshot(self) -> dict[str, int]:
        """The counters now (all read at one instant), to pass to `since` later."""
        return self.as_dict()

    def since(self, snapshot: Mapping[str, int]) -> dict[str, int]:
        """What was counted after `snapshot` was taken, by counter name; the gauges as they are now when a call
        was made since, else 0."""
        now = self.as_dict()
        called = now["calls"] > snapshot.get("calls", 0)
        return {
            name: (value if called else 0) if name in GAUGES else value - snapshot.get(name, 0)
            for name, value in now.items()
        }


_TOTALS = JudgeStats()


def judge_totals() -> JudgeStats:
    """The process-wide counters: every `ClientJudge` counts here as well as in its own stats (thread-safe).

    They only grow; take `snapshot()` before some work and `since(snapshot)` after it. Two evaluations scoring
    at once in one process are counted together.
    """
    return _TOTALS


# ------------------------------------------------------------------------------------------------- retries
_Settings: TypeAlias = tuple[int | None, float | None, float | None]
_CONFIGURED: ContextVar[_Settings] = ContextVar("agent_eval_judge_retry", default=(None, None, None))


def retry_policy(
    attempts: int | None = None, initial_delay: float | None = None, max_delay: float | None = None
) -> RetryPolicy:
    """ADK's `RetryPolicy` with, per setting, the value given here, else the environment's.

    Raises:
        EvalInputError: an `AGENT_EVAL_JUDGE_RETRY_*` variable is out of its range.
    """
    adk, env = RetryPolicy(), judge_retry_env()
    return replace(
        adk,
        attempts=attempts if attempts is not None else int(env.get("attempts", adk.attempts)),
        initial_delay=initial_delay if initial_delay is not None else env.get("initial_delay", adk.initial_delay),
        max_delay=max_delay if max_delay is not None else env.get("max_delay", adk.max_delay),
    )


def current_retry_policy() -> RetryPolicy:
    """The retries of a judge made now: the settings `configured_retry` installed, else the environment's,
    else ADK's (see the module docstring).

    Raises:
        EvalInputError: an `AGENT_EVAL_JUDGE_RETRY_*` variable is out of its range.
    """
    return retry_policy(*_CONFIGURED.get())


@contextmanager
def configured_retry(
    attempts: int | None = None, initial_delay: float | None = None, max_delay: float | None = None
) -> Iterator[None]:
    """Inside the block (and the tasks it starts), judges made without an explicit policy retry with these
    settings first (the config's `judge` section); `None` leaves a setting to the environment or ADK."""
    token = _CONFIGURED.set((attempts, initial_delay, max_delay))
    try:
        yield
    finally:
        _CONFIGURED.reset(token)
