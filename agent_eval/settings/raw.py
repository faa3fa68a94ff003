"""The reading rules of the settings that the warm client needs before anything is imported: the home folder
and the yes/no words. Plain Python (no pydantic): `Settings` uses the same rules, so a value means the same
whether the light path (`agent_eval.settings.home_dir`, `warm_allowed`) or `settings()` reads it.

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_HOME", "FALSE_WORDS", "TRUE_WORDS", "flag", "home_folder"]

DEFAULT_HOME = "~/.agent_eval"
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def home_folder(value: str | None) -> Path:
    """The home folder a value of `AGENT_EVAL_HOME` names: blanks trimmed, `~` expanded; unset or blank:
    `~/.agent_eval`."""
    return Path((value or "").strip() or DEFAULT_HOME).expanduser()


def flag(value: str | None, default: bool) -> bool | None:
    """A yes/no variable's value: `default` when unset or blank, None when it is no yes/no word (any case)."""
    word = (value or "").strip().lower()
    if not word:
        return default
    if word in TRUE_WORDS:
        return True
    return False if word in FALSE_WORDS else None
