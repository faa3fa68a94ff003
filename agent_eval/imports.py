"""Importing user code by dotted name, from the folder the user runs in as `adk eval` and `python -m` do.

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["import_user_module"]


def import_user_module(name: str) -> ModuleType:
    """Import module `name`, with the current directory importable (console scripts do not put it on
    `sys.path`, so a user's own `my_metrics.py` or `my_agent/` would otherwise not be found)."""
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    return importlib.import_module(name)
