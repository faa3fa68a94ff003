"""Custom argument comparators referenced by import path in the `tool_trajectory_match` tests."""

from __future__ import annotations

from typing import Any


def close_enough(expected: Any, actual: Any) -> float:
    """Partial credit for numbers: 1 when equal, 0.1 less per unit of difference, 0 from 10 apart."""
    return max(0.0, 1.0 - abs(float(expected) - float(actual)) / 10)


def out_of_range(expected: Any, actual: Any) -> float:
    """A broken comparator: its value is outside [0, 1]."""
    return 2.0
