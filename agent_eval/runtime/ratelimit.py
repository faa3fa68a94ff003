"""What a provider's error answer says about its limits: a rate-limit or overload signal, and how long it asks to wait.

- rate limited: HTTP 429, or the gRPC status `RESOURCE_EXHAUSTED` in Google's JSON error (`{"error": {"code":
  429, "status": "RESOURCE_EXHAUSTED", ...}}`);
- overloaded: HTTP 503 (Gemini's "The model is overloaded", `UNAVAILABLE`) or 529;
- neither: OpenAI's 429 `insufficient_quota` (the account has no credit left: waiting does not help).
The wait, when the provider gives one, is, first found: the `retryDelay` of a `google.rpc.RetryInfo` in the
error's `details` (Gemini: `{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}`),
the `retry-after-ms` header (OpenAI), the `Retry-After` header in seconds or as an HTTP date.

The judge client (`agent_eval.metrics.judged.client`) cuts its adaptive limit on a signal
(`agent_eval.runtime.adaptive`) and waits the provider's delay instead of its own backoff.

An agent's exception (`rate_limit_of`) is rate limited when it, or an exception it was raised from (`raise ...
from`; the members of an exception group), carries HTTP status 429 or the
gRPC status `RESOURCE_EXHAUSTED`, on `code`, `status_code`, `status` or `response.status_code`: the error of an
in-process agent's own model call (`google.genai.errors.ClientError`, ADK's subclass of it, an httpx
`HTTPStatusError`) or our HTTP agent's `TransientAgentError`. Its delay is the exception's `retry_after`
attribute when set, else read as above from its JSON (`details`, Google's error body, or an httpx error's
response) and its response's headers. An overload (503) is no rate limit there: an agent's own server answering
503 is more often down than busy, and is retried as any transient error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from google.genai import errors as genai_errors

__all__ = [
    "RETRY_INFO_TYPE",
    "ProviderSignal",
    "genai_signal",
    "parse_duration",
    "parse_retry_after",
    "provider_signal",
    "rate_limit_of",
]

RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"
_RATE_LIMITED_STATUSES = {"RESOURCE_EXHAUSTED"}
_OVERLOADED_CODES = {503, 529}
_NO_CREDIT = "insufficient_quota"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)s\s*$")


@dataclass(frozen=True)
class ProviderSignal:
    """A provider's answer that asks for fewer or slower calls.

    Attributes:
        kind: `rate limited` (429, `RESOURCE_EXHAUSTED`) or `overloaded` (503, 529).
        retry_after: the seconds the provider asked to wait, or `None` when it gave no delay.
    """

    kind: Literal["rate limited", "overloaded"]
    retry_after: float | None = None


def provider_signal(
    code: int, body: Any = None, headers: Mapping[str, str] | None = None, *, now: datetime | None = None
) -> ProviderSignal | None:
    """The signal in an error answer of HTTP status `code` with JSON `body` and `headers`; `None` for other errors.

    `now` is the time an HTTP-date `Retry-After` is counted from (default: the current time).
    """
    error = body.get("error") if isinstance(body, Mapping) else None
    error = error if isinstance(error, Mapping) else body if isinstance(body, Mapping) else {}
    if _NO_CREDIT in (error.get("code"), error.get("type")):
        return None
    if code == 429 or error.get("status") in _RATE_LIMITED_STATUSES:
        kind: Literal["rate limited", "overloaded"] = "rate limited"
    elif code in _OVERLOADED_CODES:
        kind = "overloaded"
    else:
        return None
    delay = _retry_info_delay(error.get("details"))
    if delay is None:
        delay = _header_delay(headers or {}, now)
    return ProviderSignal(kind, delay)


def genai_signal(error: genai_errors.APIError) -> ProviderSignal | None:
    """The signal in a google-genai API error: its code, its JSON (`details`) and its HTTP answer's headers."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    return provider_signal(error.code, error.details, headers if isinstance(headers, Mapping) else None)


def rate_limit_of(error: BaseException) -> ProviderSignal | None:
    """The rate-limit signal of an agent's exception, found on it or on the exceptions behind it (module
    docstring): the first that gives a delay, else the first without one; `None` when none is rate limited."""
    signals = [signal for found in _exceptions_behind(error) if (signal := _own_rate_limit(found)) is not None]
    return next((signal for signal in signals if signal.retry_after is not None), next(iter(signals), None))


def _exceptions_behind(error: BaseException) -> list[BaseException]:
    """`error`, then its explicit cause (never the exception it was merely raised while handling: an agent that
    handled a 429 and then failed otherwise failed for its own reason) and the members of exception groups, each
    once, depth first."""
    seen: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop()
        if any(current is known for known in seen):
            continue
        seen.append(current)
        inner = list(current.exceptions) if isinstance(current, BaseExceptionGroup) else []
        behind = [current.__cause__] if current.__cause__ is not None else []
        pending.extend(reversed(inner + behind))
    return seen


def _own_rate_limit(error: BaseException) -> ProviderSignal | None:
    response = getattr(error, "response", None)
    codes = [getattr(error, name, None) for name in ("code", "status_code", "status")]
    codes.append(getattr(response, "status_code", None))
    if 429 not in codes and not _RATE_LIMITED_STATUSES.intersection(c for c in codes if isinstance(c, str)):
        return None
    body = getattr(error, "details", None)
    if not isinstance(body, Mapping):
        body = _json_of(response)
    headers = getattr(response, "headers", None)
    signal = provider_signal(429, body, headers if isinstance(headers, Mapping) else None)
    if signal is None:  # OpenAI's insufficient_quota: no credit left, waiting does not help
        return None
    explicit = getattr(error, "retry_after", None)
    if isinstance(explicit, (int, float)) and not isinstance(explicit, bool):
        return ProviderSignal("rate limited", float(explicit))
    return ProviderSignal("rate limited", signal.retry_after)


def _json_of(response: Any) -> Any:
    """The JSON of an HTTP response already read (an httpx `Response`), else `None`."""
    try:
        return response.json() if response is not None and callable(getattr(response, "json", None)) else None
    except Exception:  # not JSON, not read, or not an HTTP response at all
        return None


def parse_duration(text: Any) -> float | None:
    """Seconds of a protobuf JSON duration such as `"13s"` or `"0.250s"`; `None` when it is not one."""
    found = _DURATION.match(text) if isinstance(text, str) else None
    return float(found.group(1)) if found else None


def parse_retry_after(value: str, now: datetime | None = None) -> float | None:
    """Seconds of a `Retry-After` value: a number of seconds, or an HTTP date (counted from `now`, at least 0);
    `None` when it is neither."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _retry_info_delay(details: Any) -> float | None:
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, Mapping) and detail.get("@type") == RETRY_INFO_TYPE:
            return parse_duration(detail.get("retryDelay"))
    return None


def _header_delay(headers: Mapping[str, str], now: datetime | None) -> float | None:
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        seconds = parse_retry_after(milliseconds)
        if seconds is not None:
            return seconds / 1000
    after = lowered.get("retry-after")
    return parse_retry_after(after, now) if after is not None else None
