"""How judge calls are paced: retries with exponential backoff, one concurrency cap per event loop, counters.

The cap is an `asyncio.Semaphore` per running event loop (asyncio primitives belong to one loop), shared by
every judge of the process that runs on that loop: a run's metrics, samples and judges all draw from it.
Its size is `AGENT_EVAL_JUDGE_CONCURRENCY` (default 8), read when the loop first calls a judge.

Retries: a judge made without an explicit `RetryPolicy` takes `current_retry_policy()`: per setting, the
config's `judge` section (installed for a block by `configured_retry`, e.g. while a criterion is scored),
else `AGENT_EVAL_JUDGE_RETRY_ATTEMPTS` / `_INITIAL_DELAY` / `_MAX_DELAY`, else ADK's default. Retry settings
are no part of a judge answer's cache key.

Limits beyond the process: inside `gated_judge_calls(gate)` (the flow that scores installs it from the config's
`limits.judge_calls`), every judge call also enters `gate()` while it holds its local slot: e.g. a slot of a
Prefect global concurrency or rate limit shared by every run on the judge's API key.

Counters: each judge counts into its own `JudgeStats` and into the process-wide `judge_totals()`, which only
grow; `totals.since(before)` with `before = totals.snapshot()` gives what the judges of the process did in
between (e.g. while one evaluation scored its criteria).
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

__all__ = [
    "CounterName",
    "JudgeStats",
    "LoopLocal",
    "RetryPolicy",
    "configured_retry",
    "current_retry_policy",
    "gated_judge_calls",
    "judge_call_gate",
    "judge_semaphore",
    "judge_totals",
    "retry_policy",
]

T = TypeVar("T")
CounterName: TypeAlias = Literal["samples", "calls", "cache_hits", "retries", "errors"]


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

    def pop(self) -> T | None:
        """Forget the running loop's value and return it (`None` when it was never made)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._values.pop(loop, None)


def _new_semaphore() -> asyncio.Semaphore:
    try:
        limit = judge_concurrency()
    except EvalInputError:  # reported before the run by check_judge_credentials; a call never raises
        limit = DEFAULT_CONCURRENCY
    return asyncio.Semaphore(limit)


_SEMAPHORES: LoopLocal[asyncio.Semaphore] = LoopLocal(_new_semaphore)


def judge_semaphore() -> asyncio.Semaphore:
    """The running loop's cap on judge calls in flight, shared by all judges (see the module docstring)."""
    return _SEMAPHORES.get()


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

    Attributes:
        attempts: calls in all, the first included (1 = no retry).
        initial_delay: seconds before the first retry.
        max_delay: the longest wait, in seconds.
        exp_base: the growth factor of the wait.
        jitter: the random share added to each wait (0 = none).
    """

    attempts: int = 7
    initial_delay: float = 5.0
    max_delay: float = 120.0
    exp_base: float = 2.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be at least 1, got {self.attempts!r}")
        if min(self.initial_delay, self.max_delay, self.jitter) < 0 or self.exp_base < 1:
            raise ValueError(f"RetryPolicy delays and jitter must be >= 0 and exp_base >= 1, got {self!r}")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 for the second attempt)."""
        base = min(self.initial_delay * self.exp_base ** (retry - 1), self.max_delay)
        return min(base * (1 + self.jitter * random.random()), self.max_delay)


@dataclass
class JudgeStats:
    """What a judge did (thread-safe counters), for a metric's details.

    Attributes:
        samples: answers returned by `ask`.
        calls: requests sent to the backend (every attempt counts).
        cache_hits: answers read from the cache (no request).
        retries: attempts after a retryable failure.
        errors: answers with `error` set (failed calls and unparseable answers), never dropped.
    """

    samples: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, name: CounterName, amount: int = 1) -> None:
        """Add `amount` to the counter `name`."""
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def as_dict(self) -> dict[str, int]:
        """The counters by name, e.g. `{"samples": 5, "calls": 6, "cache_hits": 0, "retries": 1, "errors": 0}`."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def snapshot(self) -> dict[str, int]:
        """The counters now (all read at one instant), to pass to `since` later."""
        return self.as_dict()

    def since(self, snapshot: Mapping[str, int]) -> dict[str, int]:
        """What was counted after `snapshot` was taken, by counter name."""
        return {name: value - snapshot.get(name, 0) for name, value in self.as_dict().items()}


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
