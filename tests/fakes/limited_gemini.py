"""A provider with limits, for the fake Gemini server: answers past a rate or a concurrency limit as Gemini does.

`LimitedProvider` is a reply handler (`fake_gemini.respond_with(provider)`): each request is admitted or refused
under a lock; an admitted one is held `latency` seconds (longer when the provider is loaded past `capacity`),
then answered by `answer`; a refused one gets, at once, Gemini's error:
```
429 {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
               "status": "RESOURCE_EXHAUSTED",
               "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]}}
503 {"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}
```
with the delay (`hint`) in `RetryInfo` (default), in a `Retry-After` header (whole seconds, rounded up), or
nowhere. The delay is `retry_delay` when given, else the time until the rate window has room again (rate
limit), else `latency` (concurrency limit: a provider cannot know when a call ends).

Limits (each optional): `rate` requests admitted per sliding `window` seconds; `max_concurrent` requests held
at once. Counters: `requests`, `answered`, `refused`, `most_in_flight` (of admitted requests).

`rate_limited_reply` and `overloaded_reply` are the same answers for `server.script(...)`.

Example:
    ```python
    provider = LimitedProvider(lambda _body: text_reply(verdict_json()), latency=0.05, max_concurrent=3)
    fake_gemini.respond_with(provider)
    ...
    assert provider.most_in_flight <= 3 and provider.refused > 0
    ```
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Literal, TypeAlias

from tests.fakes.gemini_server import FakeReply

__all__ = ["RETRY_INFO", "LimitedProvider", "overloaded_reply", "rate_limited_reply"]

Hint: TypeAlias = Literal["retry_info", "retry_after", "none"]
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_EXHAUSTED = "Resource has been exhausted (e.g. check quota)."
_OVERLOADED = "The model is overloaded. Please try again later."


def duration(seconds: float) -> str:
    """A protobuf JSON duration as Gemini writes it: `"2s"`, `"0.250s"`."""
    return f"{seconds:g}s" if float(seconds).is_integer() else f"{seconds:.3f}s"


def rate_limited_reply(
    retry_delay: float | None = None, *, retry_after: str | float | None = None, status: str = "RESOURCE_EXHAUSTED"
) -> FakeReply:
    """Gemini's 429: a `RetryInfo` with `retry_delay` seconds when given, a `Retry-After` header when given."""
    return _error(429, status, _EXHAUSTED, retry_delay, retry_after)


def overloaded_reply(retry_delay: float | None = None, *, retry_after: str | float | None = None) -> FakeReply:
    """Gemini's 503 `UNAVAILABLE` ("The model is overloaded"), with the same optional delays."""
    return _error(503, "UNAVAILABLE", _OVERLOADED, retry_delay, retry_after)


def _error(
    code: int, status: str, message: str, retry_delay: float | None, retry_after: str | float | None
) -> FakeReply:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if retry_delay is not None:
        error["details"] = [{"@type": RETRY_INFO, "retryDelay": duration(retry_delay)}]
    headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
    return FakeReply(status=code, body={"error": error}, headers=headers)


class LimitedProvider:
    """A reply handler that enforces a rate or concurrency limit (see the module docstring).

    Args:
        answer: the reply to an admitted request (called with the request body after the hold).
        latency: seconds an admitted request is held.
        rate: requests admitted per sliding `window` seconds (`None`: no rate limit).
        window: the rate's window, in seconds.
        max_concurrent: admitted requests held at once (`None`: no concurrency limit).
        status: 429 (rate limited) or 503 (overloaded) for a refused request.
        hint: where the delay goes: Gemini's `RetryInfo`, a `Retry-After` header, or nowhere.
        retry_delay: the delay announced (default: computed, module docstring).
        capacity: requests in flight past which the latency grows in proportion (`None`: never).
        spread: each hold is `latency` times a factor drawn uniformly from [1 - spread, 1 + spread] (seeded),
            as the lengths of real answers vary; 0: every hold the same.
    """

    def __init__(
        self,
        answer: Callable[[Any], Any],
        *,
        latency: float = 0.0,
        rate: int | None = None,
        window: float = 1.0,
        max_concurrent: int | None = None,
        status: int = 429,
        hint: Hint = "retry_info",
        retry_delay: float | None = None,
        capacity: int | None = None,
        spread: float = 0.0,
    ) -> None:
        self.answer, self.latency = answer, latency
        self.rate, self.window, self.max_concurrent = rate, window, max_concurrent
        self.status, self.hint, self.retry_delay, self.capacity = status, hint, retry_delay, capacity
        self.requests = self.answered = self.refused = 0
        self.in_flight = self.most_in_flight = 0
        self.spread = spread
        self._random = random.Random(32)
        self._admitted: deque[float] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def __call__(self, body: Any) -> Any:
        with self._lock:
            self.requests += 1
            refusal = self._refusal(time.monotonic())
            if refusal is not None:
                self.refused += 1
                return refusal
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            hold = self.latency * max(1.0, self.in_flight / self.capacity) if self.capacity else self.latency
            hold *= 1 + self.spread * (2 * self._random.random() - 1)
        try:
            self._stopping.wait(hold)
            return self.answer(body)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.answered += 1

    def stop(self) -> None:
        """Release the requests being held (call before stopping the server)."""
        self._stopping.set()

    def _refusal(self, now: float) -> FakeReply | None:
        """The error for a request arriving `now`, or `None` when it is admitted (then counted in the window)."""
        while self._admitted and self._admitted[0] <= now - self.window:
            self._admitted.popleft()
        if self.rate is not None and len(self._admitted) >= self.rate:
            return self._error(self._admitted[0] + self.window - now)
        if self.max_concurrent is not None and self.in_flight >= self.max_concurrent:
            return self._error(self.latency)
        if self.rate is not None:
            self._admitted.append(now)
        return None

    def _error(self, computed: float) -> FakeReply:
        delay = self.retry_delay if self.retry_delay is not None else max(computed, 0.001)
        retry_delay = round(delay, 3) if self.hint == "retry_info" else None
        retry_after = math.ceil(delay) if self.hint == "retry_after" else None
        if self.status == 503:
            return overloaded_reply(retry_delay, retry_after=retry_after)
        return rate_limited_reply(retry_delay, retry_after=retry_after)
