"""The judge client: `Judge.ask` over a backend, with the cache, retries, the shared cap and counters.

```python
from agent_eval.metrics.judged import JudgeRequest, make_judge

judge = make_judge("gemini-2.5-flash")          # or "openai:<model>" for an OpenAI-compatible server
sample = await judge.ask(JudgeRequest(model="gemini-2.5-flash", system=..., prompt=..., response_schema=Verdict))
sample.parsed, sample.error, sample.cached, judge.stats.as_dict()
```
One `ask`:
1. the persisted cache (`agent_eval.metrics.judged.cache`): an identical request answered before costs no call;
2. otherwise the backend is called (`_call_once`, where every judge call starts) in a slot of the event loop's
   adaptive concurrency limit (`judge_limiter`, whose ceiling is `AGENT_EVAL_JUDGE_CONCURRENCY`), each attempt
   bounded by `timeout`. A rate-limit or overload answer (429, `RESOURCE_EXHAUSTED`, 503, classified by
   `agent_eval.runtime.ratelimit`) or a timeout is reported to the limit, which may cut itself; the call
   is retried after the delay the provider asked for (`Retry-After`, Gemini's `RetryInfo.retryDelay`), else the
   backoff, without spending an attempt and without giving its slot up, until the `RetryPolicy`'s
   `rate_limit_deadline`. 408, other 5xx and lost connections are retried per the `RetryPolicy`'s attempts, with
   no slot held while waiting; other failures are not retried;
3. the answer is parsed into the response schema (`agent_eval.metrics.judged.parsing`); a parsed answer is cached.
Every failure is a `JudgeSample` with `error` set ("server error after 7 attempts: ...", "rate limited until the
deadline ...", "judge call rejected: 400 ...", "unparseable: ...") and is counted in `stats.errors` (a sample
given up on rate limiting also in `stats.lost`): `ask` never raises for it.
Every count goes to the judge's `stats` and to the process-wide `judge_totals()` (`agent_eval.metrics.judged.policy`).
A judge made without `retry` takes `current_retry_policy()`: the config's `judge` section, else
`AGENT_EVAL_JUDGE_RETRY_*`, else ADK's 7 attempts, 5 s doubling up to 120 s.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypedDict, Unpack

import httpx

from agent_eval.metrics.judged.backends import (
    GeminiBackend,
    GenaiClientOption,
    JudgeBackend,
    JudgeCallError,
    TransientJudgeError,
    close_shared_genai_clients,
)
from agent_eval.metrics.judged.base import JudgeRequest, JudgeSample
from agent_eval.metrics.judged.cache import JudgeCache, cache_key
from agent_eval.metrics.judged.credentials import judge_backend, judge_concurrency
from agent_eval.metrics.judged.openai_backend import OpenAIBackend, close_shared_http_client
from agent_eval.metrics.judged.parsing import parse_answer
from agent_eval.metrics.judged.policy import (
    CounterName,
    JudgeStats,
    RetryPolicy,
    current_retry_policy,
    judge_call_gate,
    judge_limiter,
    judge_totals,
)
from agent_eval.runtime.adaptive import AdaptiveLimit, Slot

__all__ = [
    "DEFAULT_TIMEOUT",
    "ClientJudge",
    "GenaiJudge",
    "JudgeOptions",
    "OpenAIJudge",
    "close_judge_clients",
    "make_judge",
]

DEFAULT_TIMEOUT = 120.0
_log = logging.getLogger(__name__)


class JudgeOptions(TypedDict, total=False):
    """Keyword options of every judge client.

    Attributes:
        retry: when failed calls are retried (default: `current_retry_policy()`, see the module docstring).
        timeout: seconds one attempt may take (default 120; `None` = unbounded); a timeout is retried.
        cache: `True` for the persisted cache under `home_dir()`, `False` for none, or a `JudgeCache`.
        stats: counters to add to (share one across judges to count them together); `judge_totals()`
            counts every judge anyway.
    """

    retry: RetryPolicy
    timeout: float | None
    cache: JudgeCache | bool
    stats: JudgeStats


class ClientJudge:
    """A `Judge` over any `JudgeBackend` (see the module docstring)."""

    def __init__(self, backend: JudgeBackend, **options: Unpack[JudgeOptions]) -> None:
        judge_concurrency()  # a bad AGENT_EVAL_JUDGE_CONCURRENCY fails here, not in a call
        self.backend = backend
        self.retry = options.get("retry") or current_retry_policy()  # so does a bad retry variable
        self.timeout = options.get("timeout", DEFAULT_TIMEOUT)
        self.stats = options.get("stats") or JudgeStats()
        self.cache = _cache_from(options.get("cache", True))
        self._sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # how retries wait (tests record it)

    async def ask(self, request: JudgeRequest) -> JudgeSample:
        """One sample for `request`: from the cache, or from the backend (never raises for a failure)."""
        try:
            sample = await self._answer(request)
        except Exception as error:  # failures are data: an unexpected one is a sample too
            _log.exception("judge call failed unexpectedly")
            sample = JudgeSample(error=f"judge failed: {type(error).__name__}: {error}")
        self._count("samples")
        if sample.error is not None:
            self._count("errors")
        return sample

    def _count(self, name: CounterName) -> None:
        """Count in the judge's own stats and in the process-wide totals."""
        self.stats.count(name)
        if self.stats is not judge_totals():
            judge_totals().count(name)

    def _observe(self, limit: AdaptiveLimit) -> None:
        """Show where the adaptive limit went in the judge's own stats and in the process-wide totals."""
        self.stats.observe(limit)
        if self.stats is not judge_totals():
            judge_totals().observe(limit)

    async def _answer(self, request: JudgeRequest) -> JudgeSample:
        key = cache_key(self.backend.identity, request) if self.cache is not None else ""
        cached = self._from_cache(key, request)
        if cached is not None:
            return cached
        text = await self._call_with_retries(request)
        if isinstance(text, JudgeSample):
            return text
        sample = parse_answer(text, request.response_schema)
        if sample.usable and self.cache is not None:
            self.cache.put(key, text, model=request.model)
        return sample

    def _from_cache(self, key: str, request: JudgeRequest) -> JudgeSample | None:
        text = self.cache.get(key) if self.cache is not None else None
        if text is None:
            return None
        sample = parse_answer(text, request.response_schema)
        if not sample.usable:
            return None
        self._count("cache_hits")
        return sample.model_copy(update={"cached": True})

    async def _call_with_retries(self, request: JudgeRequest) -> str | JudgeSample:
        """The answer text, or an error sample after a failure that is final, the last attempt, or rate limiting
        that outlasts the deadline. Ordinary failures are waited out here, with no slot held."""
        retries = _Retries(self.retry, time.monotonic() + self.retry.rate_limit_deadline)
        while True:
            try:
                return await self._call_in_slot(request, retries)
            except JudgeCallError as error:
                return JudgeSample(error=str(error))
            except TransientJudgeError as error:
                wait = retries.wait_after(error)
                _log.info("judge %s call %d: %s (retry in %s s)", request.model, retries.calls, error, wait)
                if wait is None:
                    return JudgeSample(error=retries.given_up(error))
            self._count("retries")
            await self._sleep(wait)

    async def _call_in_slot(self, request: JudgeRequest, retries: _Retries) -> str | JudgeSample:
        """The answer, from calls in one slot of the loop's adaptive limit: a rate-limit or overload answer is
        waited out in the slot (a refused call is still in flight) and sent again, spending no attempt, until the
        deadline; then the sample is lost."""
        limit = judge_limiter()
        try:
            async with limit.slot() as slot:
                while True:
                    try:
                        return await self._call_once(request, slot)
                    except TransientJudgeError as error:
                        if error.signal is None:
                            raise
                        wait = retries.wait_after(error)
                        _log.info("judge %s call %d: %s (retry in %s s)", request.model, retries.calls, error, wait)
                        if wait is None:
                            self._count("lost")
                            return JudgeSample(error=retries.given_up(error))
                    self._count("rate_limited")
                    self._count("retries")
                    await self._sleep(wait)
        finally:
            self._observe(limit)

    async def _call_once(self, request: JudgeRequest, slot: Slot) -> str:
        """One judge call, where every call starts: the installed gate, then the backend within `timeout`; a
        rate-limit or overload answer, or a timeout, is reported to the adaptive limit."""
        async with judge_call_gate():
            slot.sent()
            self._count("calls")
            try:
                async with asyncio.timeout(self.timeout):
                    return await self.backend.generate(request)
            except TimeoutError as error:
                slot.throttled()
                raise TransientJudgeError("timed out", f"no answer within {self.timeout} s") from error
            except TransientJudgeError as error:
                if error.signal is not None:
                    slot.throttled()
                raise


@dataclass
class _Retries:
    """What one `ask` has spent: attempts on ordinary failures, retries on rate limiting, until `deadline`."""

    policy: RetryPolicy
    deadline: float
    calls: int = 0
    failures: int = 0
    throttled: int = 0

    def wait_after(self, error: TransientJudgeError) -> float | None:
        """Seconds to wait before calling again after `error`, or `None` to give up (module docstring)."""
        self.calls += 1
        if error.signal is None:
            self.failures += 1
            return self.policy.delay(self.failures) if self.failures < self.policy.attempts else None
        self.throttled += 1
        asked = error.signal.retry_after
        if asked is None:
            wait = self.policy.delay(self.throttled)
        else:  # the provider's delay, stretched a little so that the calls it held back do not return together
            wait = asked * (1 + self.policy.jitter * random.random())
        return wait if time.monotonic() + wait <= self.deadline else None

    def given_up(self, error: TransientJudgeError) -> str:
        """The error of the sample given up after `error`."""
        if error.signal is None:
            return f"{error.reason} after {self.policy.attempts} attempts: {error.detail}"
        deadline = f"{self.policy.rate_limit_deadline:g} s"
        return f"{error.reason} until the deadline ({deadline}, {self.calls} calls): {error.detail}"


def _cache_from(option: JudgeCache | bool) -> JudgeCache | None:
    if isinstance(option, JudgeCache):
        return option
    return JudgeCache() if option else None


class GenaiJudge(ClientJudge):
    """A judge on the Gemini API or Vertex AI through google-genai (chosen from the environment).

    Args:
        client: a `genai.Client`, a factory of them (called once per event loop), or `None` for one from the
            environment (`AGENT_EVAL_GEMINI_BASE_URL` moves its endpoint).
        **options: see `JudgeOptions`.
    """

    def __init__(self, client: GenaiClientOption = None, **options: Unpack[JudgeOptions]) -> None:
        super().__init__(GeminiBackend(client), **options)


class OpenAIJudge(ClientJudge):
    """A judge on an OpenAI-compatible server (`openai:<model>` models; see `OpenAIBackend`).

    Args:
        base_url: the API root; default `OPENAI_BASE_URL` or `http://127.0.0.1:8000/v1`.
        api_key: default `OPENAI_API_KEY` (optional).
        http_client: a factory of `httpx.AsyncClient`, called once per event loop.
        **options: see `JudgeOptions`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(OpenAIBackend(base_url, api_key, http_client), **options)


async def close_judge_clients() -> None:
    """Close the running event loop's shared judge connections (google-genai and OpenAI-compatible).

    Call it at the end of the coroutine that ran the judges (e.g. a scoring task) to release sockets at once
    rather than when the loop is collected; judges used afterwards open new connections.
    """
    await close_shared_genai_clients()
    await close_shared_http_client()


def make_judge(model: str, **options: Unpack[JudgeOptions]) -> ClientJudge:
    """The judge for `model` from the environment: `OpenAIJudge` for `openai:<model>` (or
    `AGENT_EVAL_JUDGE_BACKEND=openai`), else `GenaiJudge` (see `agent_eval.metrics.judged.credentials`).

    Raises:
        EvalInputError: `AGENT_EVAL_JUDGE_BACKEND`, `AGENT_EVAL_JUDGE_CONCURRENCY` or an
            `AGENT_EVAL_JUDGE_RETRY_*` variable is invalid.
    """
    if judge_backend(model) == "openai":
        return OpenAIJudge(**options)
    return GenaiJudge(**options)
