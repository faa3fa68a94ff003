"""Where agent-eval keeps its files (`$AGENT_EVAL_HOME`, default `~/.agent_eval`) and its run defaults; imports
nothing heavy (the CLI reads it before parsing arguments).

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DASK_ADDRESS_ENV", "DEFAULT_MAX_CONCURRENCY", "DEFAULT_TURN_TIMEOUT_SECONDS", "HOME_ENV", "home_dir"]

HOME_ENV = "AGENT_EVAL_HOME"

DEFAULT_MAX_CONCURRENCY = 8
"""Agent invocations at once, by default."""

DEFAULT_TURN_TIMEOUT_SECONDS = 300.0
"""Seconds one agent turn may take before it is interrupted, by default."""


DASK_ADDRESS_ENV = "AGENT_EVAL_DASK_ADDRESS"
"""The Dask scheduler to invoke the agent on when a run names none (e.g. `tcp://10.0.0.5:8786`)."""


def home_dir() -> Path:
    """agent-eval's own folder (the default SQLite store, datasets written from DataFrames)."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".agent_eval")
