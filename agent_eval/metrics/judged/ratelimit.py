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
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from google.genai import errors as genai_errors

__all__ = [
    "RETRY_INFO_TYPE",
    "ProviderSignal",
    "genai_signal",
    "parse_duration",
    "parse_retry_after",
    "provider_signal",
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
