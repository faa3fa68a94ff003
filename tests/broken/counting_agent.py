"""A plain-function agent that counts its calls; bad input must be rejected before it is ever called."""

from __future__ import annotations

from typing import Any

__all__ = ["COUNTER", "NOT_CALLABLE", "agent"]

COUNTER = {"calls": 0}
"""How many times `agent` was called (module-level, so the in-process CLI and the test share it)."""

NOT_CALLABLE = 42
"""An attribute that is neither a callable nor an Agent, for the 'not callable' reference."""


def agent(message: str, session: Any) -> str:
    """Echo the message and count the call."""
    COUNTER["calls"] += 1
    return f"echo: {message}"
