"""Where agent-eval keeps its files: `$AGENT_EVAL_HOME`, default `~/.agent_eval`."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["HOME_ENV", "home_dir"]

HOME_ENV = "AGENT_EVAL_HOME"


def home_dir() -> Path:
    """agent-eval's own folder (the default SQLite store, datasets written from DataFrames)."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".agent_eval")
