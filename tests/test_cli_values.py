"""Option values shared by the commands: counts, ages (`--reuse-answers`) and moments (`--since`, `--until`)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from agent_eval.cli.values import age_hours, moment, positive


def test_ages_and_moments_read_the_same_units() -> None:
    assert (age_hours("30m"), age_hours("12h"), age_hours("7d"), age_hours("2")) == (0.5, 12.0, 168.0, 2.0)
    before = datetime.now(UTC)
    day_ago = moment("24h")
    after = datetime.now(UTC)
    assert before - timedelta(hours=24) <= day_ago <= after - timedelta(hours=24)
    assert moment("2026-12-01T10:00:00") == datetime(2026, 12, 1, 10, tzinfo=UTC)  # no zone: UTC
    assert moment("2026-12-01T10:00:00Z") == datetime(2026, 12, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(("parse", "text", "message"), [
    (positive, "0", "must be at least 1, got 0"),
    (age_hours, "0h", "must be positive, got '0h'"),
    (age_hours, "soon", "expected an age such as 30m, 12h or 7d, got 'soon'"),
    (moment, "yesterday", "expected an ISO 8601 time or an age such as 24h, got 'yesterday'"),
])  # fmt: skip
def test_bad_values_name_what_was_expected(parse: object, text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        parse(text)  # type: ignore[operator]
    assert str(raised.value) == message
