"""Values of command-line options, parsed for argparse (`type=`): counts, ages and moments.

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

__all__ = ["age_hours", "moment", "positive", "positive_float"]

_DURATION_UNITS = {"m": 1 / 60, "h": 1.0, "d": 24.0}
_AGE = re.compile(r"^\d+(?:\.\d+)?[mhd]$")


def positive(text: str) -> int:
    """A count of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    """A number above 0 (e.g. dollars: `0.5`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.5, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def age_hours(text: str) -> float:
    """A maximum age: `30m`, `12h`, `7d`, or a number of hours."""
    unit = _DURATION_UNITS.get(text[-1:].lower())
    number = text[:-1] if unit is not None else text
    try:
        hours = float(number) * (unit or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an age such as 30m, 12h or 7d, got {text!r}") from None
    if hours <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return hours


def moment(text: str) -> datetime:
    """An ISO 8601 time (UTC when it has no zone), or an age with its unit such as `30m`, `24h`, `7d` (that long
    ago)."""
    stripped = text.strip().lower()
    if _AGE.match(stripped):
        return datetime.now(UTC) - timedelta(hours=age_hours(stripped))
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time or an age such as 24h, got {text!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
