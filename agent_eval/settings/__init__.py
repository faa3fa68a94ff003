"""agent-eval's settings: every `AGENT_EVAL_*` environment variable (`settings()`, a `Settings`), its own folder
(`home_dir()`, `$AGENT_EVAL_HOME`, default `~/.agent_eval`) and its run defaults.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

This package imports nothing heavy, not even pydantic (the CLI reads it before parsing arguments): `Settings`,
`JUDGE_RETRY_LIMITS` and the settings' defaults live in `agent_eval.settings.model` (pydantic-settings costs
~75 ms), imported when one of them is first read, or at the first `settings()` call. The README's `## Settings`
table lists every variable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports
from agent_eval.settings.raw import flag, home_folder

if TYPE_CHECKING:
    from agent_eval.settings.model import (
        DEFAULT_JUDGE_CONCURRENCY,
        DEFAULT_PROGRESS_INTERVAL_SECONDS,
        DEFAULT_WARM_IDLE_MINUTES,
        JUDGE_RETRY_LIMITS,
        Settings,
    )

__getattr__, __dir__, _ = lazy_exports(__name__, __file__)

__all__ = [
    "DASK_ADDRESS_ENV",
    "DB_URL_ENV",
    "DEFAULT_JUDGE_CONCURRENCY",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_PROGRESS_INTERVAL_SECONDS",
    "DEFAULT_TURN_TIMEOUT_SECONDS",
    "DEFAULT_WARM_IDLE_MINUTES",
    "HOME_ENV",
    "JUDGE_RETRY_LIMITS",
    "STORE_RULE",
    "WARM_ENV",
    "Settings",
    "default_store_shown",
    "default_store_url",
    "home_dir",
    "settings",
    "warm_allowed",
]

HOME_ENV = "AGENT_EVAL_HOME"
WARM_ENV = "AGENT_EVAL_WARM"

DEFAULT_MAX_CONCURRENCY = 8
"""Agent invocations at once, by default."""

DEFAULT_TURN_TIMEOUT_SECONDS = 300.0
"""Seconds one agent turn may take before it is interrupted, by default."""


DASK_ADDRESS_ENV = "AGENT_EVAL_DASK_ADDRESS"
"""The Dask scheduler to invoke the agent on when a run names none (e.g. `tcp://10.0.0.5:8786`)."""


_LAST_READ: dict[tuple[tuple[str, str], ...], Settings] = {}
"""The last `Settings` read, by the variables it was read from: reading them again costs ~1 ms, comparing them
~0.05 ms (the judge cache asks for `home_dir()` at every call)."""


def settings() -> Settings:
    """Every `AGENT_EVAL_*` variable as the environment holds it now: what is read always reflects the current
    environment (a test changes it, a run forked by the warm process brings its own); only when the variables
    are the same as at the last call is that call's (frozen) `Settings` returned again.

    Raises:
        EvalInputError: a variable's value is not valid, in one line naming it, its value (`'***'` for a secret)
            and what it accepts: `AGENT_EVAL_JUDGE_CONCURRENCY='abc' is not valid: a whole number of at least 1`.
    """
    from pydantic import ValidationError

    from agent_eval.errors import EvalInputError
    from agent_eval.settings.model import ENV_PREFIX, Settings, invalid_setting_line

    variables = _settings_variables(ENV_PREFIX)
    found = _LAST_READ.get(variables)
    if found is not None:
        return found
    try:
        read = Settings()
    except ValidationError as error:
        raise EvalInputError(invalid_setting_line(error)) from None
    _LAST_READ.clear()
    _LAST_READ[variables] = read
    return read


def home_dir() -> Path:
    """agent-eval's own folder (the default SQLite store, the judge cache, datasets written from DataFrames):
    `settings().home`, read without pydantic (the warm client asks before any import or check)."""
    return home_folder(os.environ.get(HOME_ENV))


DB_URL_ENV = "AGENT_EVAL_DB_URL"
STORE_RULE = "$AGENT_EVAL_DB_URL, else the SQLite file agent_eval.db in $AGENT_EVAL_HOME (default ~/.agent_eval)"
"""Where every command, the Python API and a deployment's flow runs store runs when none is named."""


def default_store_url() -> str:
    """The store `STORE_RULE` names: `$AGENT_EVAL_DB_URL`, else the SQLite file `agent_eval.db` in the home folder.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid (`settings()`).
    """
    return settings().db_url or _home_store_url()


def default_store_shown() -> str:
    """The store `STORE_RULE` names here and now, as it may be shown: the SQLite file's URL, or
    `$AGENT_EVAL_DB_URL` by name (its value may hold a password). Read without pydantic (`--help` shows it)."""
    if os.environ.get(DB_URL_ENV, "").strip():
        return f"${DB_URL_ENV}"
    return _home_store_url()


def _home_store_url() -> str:
    """The SQLite file `agent_eval.db` in the home folder, as a URL: the store when none is named."""
    return f"sqlite:///{home_dir() / 'agent_eval.db'}"


def warm_allowed() -> bool:
    """`settings().warm`, read without pydantic (the warm client asks before any import or check); False for a
    value that is no yes/no word, which the command's own checks then report."""
    return flag(os.environ.get(WARM_ENV), default=True) is True


def _settings_variables(prefix: str) -> tuple[tuple[str, str], ...]:
    """What `Settings` reads: the variables named `prefix...` (in any case, as pydantic-settings matches them)
    and `HOME` (the default home folder's parent)."""
    read = ((name, value) for name, value in os.environ.items() if name.upper().startswith(prefix) or name == "HOME")
    return tuple(sorted(read))
