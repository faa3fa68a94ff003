"""Engines for the store: a SQLite file by default, any SQLAlchemy URL (PostgreSQL) by setting.

On SQLite every transaction starts with `BEGIN IMMEDIATE`: it takes the write lock up front (waiting up to
the busy timeout), so two processes writing runs to one file queue up instead of failing half-way with
`database is locked` when a read inside a transaction turns into a write.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, InterfaceError, NoSuchModuleError, OperationalError
from sqlmodel import create_engine

from agent_eval import settings as settings_package
from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.secrets import redact_url_credentials
from agent_eval.store.migrate import upgrade

__all__ = [
    "DB_URL_ENV",
    "check_store",
    "default_db_url",
    "get_engine",
    "new_engine",
    "normalize_url",
    "one_store_check",
    "shown_url",
]

DB_URL_ENV = settings_package.DB_URL_ENV
_CHECKED: ContextVar[dict[str, Engine | None] | None] = ContextVar("agent_eval_checked_stores", default=None)
"""The stores checked in the current `one_store_check()` block, by URL; None outside one."""
SQLITE_BUSY_TIMEOUT_SECONDS = 30
CONNECT_TIMEOUT_SECONDS = 10
_UNREACHABLE_MARKERS = (
    "connection refused",
    "could not connect",
    "timeout expired",
    "timed out",
    "no route to host",
    "name or service not known",
    "could not translate host name",
    "server closed the connection",
)


def default_db_url() -> str:
    """The store `agent_eval.settings.STORE_RULE` names: `$AGENT_EVAL_DB_URL`, else a SQLite file `agent_eval.db`
    in `$AGENT_EVAL_HOME` (default `~/.agent_eval`).

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid (`agent_eval.settings.settings`).
    """
    return settings_package.default_store_url()


def normalize_url(url: str) -> str:
    """`postgresql://` and `postgres://` use psycopg 3 (the driver we ship), not psycopg2."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def get_engine(url: str | None = None) -> Engine:
    """The engine for `url` (default: `default_db_url()`), created once per URL, its schema migrated."""
    return _engine(normalize_url(url or default_db_url()))


@lru_cache(maxsize=16)
def _engine(url: str) -> Engine:
    engine = new_engine(url)
    upgrade(engine)
    return engine


@contextmanager
def one_store_check() -> Iterator[None]:
    """Within the block, `check_store` opens each store once and gives the same answer after: a command that
    checks its store before anything else (the CLI) and then calls the API, which checks it too, opens it once.
    Outside such a block every call checks (a library caller's store may have gone away since the last run)."""
    token = _CHECKED.set({})
    try:
        yield
    finally:
        _CHECKED.reset(token)


def check_store(url: str | None = None) -> Engine | None:
    """Open (and migrate) the store before any work starts, turning every failure into one line. A SQLite
    file that does not exist yet is not created here (bad input found later must leave nothing behind): its
    folder is checked instead, and None returned.

    Inside `one_store_check()`, a store already checked there is not opened again.

    Raises:
        EvalInputError: the URL cannot be used (unknown scheme, malformed, a database or file that does not
            exist, refused credentials), or with no `url` an `AGENT_EVAL_*` variable is not valid: a user
            mistake, exit code 2.
        InfrastructureError: the database server could not be reached: exit code 4.
    """
    raw = url or default_db_url()
    checked = _CHECKED.get()
    if checked is not None and raw in checked:
        return checked[raw]
    engine = _opened_store(raw)
    if checked is not None:
        checked[raw] = engine
    return engine


def _opened_store(raw: str) -> Engine | None:
    """`check_store`'s work: the engine of `raw`, migrated, or None for a SQLite file not created yet."""
    if _new_sqlite_file(normalize_url(raw)):
        return None
    try:
        return get_engine(raw)
    except ArgumentError as error:
        raise EvalInputError(f"the store URL {shown_url(raw)!r} cannot be used: {error}") from None
    except (NoSuchModuleError, ImportError) as error:
        raise EvalInputError(f"the store URL {shown_url(raw)!r} names an unknown database kind: {error}") from None
    except (OperationalError, InterfaceError) as error:
        cause = _first_line(error)
        if any(marker in cause.lower() for marker in _UNREACHABLE_MARKERS):
            raise InfrastructureError(f"cannot reach the store at {shown_url(raw)!r}: {cause}") from None
        raise EvalInputError(f"cannot open the store at {shown_url(raw)!r}: {cause}") from None


def _new_sqlite_file(url: str) -> bool:
    """Whether `url` names a SQLite file that does not exist yet (its folder being usable).

    Raises:
        EvalInputError: the file could not be created there.
    """
    if not url.startswith("sqlite:///"):
        return False
    path = Path(url.removeprefix("sqlite:///")).absolute()
    if path.exists():
        return False
    existing = next(parent for parent in path.parents if parent.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise EvalInputError(f"cannot create the store {str(path)!r}: {existing} is not a writable folder")
    return True


def shown_url(url: str) -> str:
    """A store URL fit to print: its password hidden (`agent_eval.secrets.redact_url_credentials`)."""
    return redact_url_credentials(url)


def _first_line(error: BaseException) -> str:
    """The driver's own message, without SQLAlchemy's wrapping and background links."""
    original = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(original).splitlines() if line.strip()]
    return lines[0] if lines else type(original).__name__


def new_engine(url: str) -> Engine:
    """A new engine for a normalized URL, without touching its schema (SQLite: WAL, immediate transactions)."""
    if url.startswith("postgresql"):
        return create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS})
    if not url.startswith("sqlite:///"):
        return create_engine(url, pool_pre_ping=True)
    Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(connection: Any, _record: Any) -> None:
    """WAL so readers never block the writer; the busy timeout before anything else can meet a lock."""
    connection.isolation_level = None  # the driver emits no BEGIN of its own: `_sqlite_begin` does
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_SECONDS * 1000}")
    _use_wal(cursor)
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _use_wal(cursor: Any) -> None:
    """Switch a file to WAL (a lasting setting of the file) unless it is in WAL already.

    The switch needs the file to itself and SQLite does not wait for that (no busy handler): when two
    processes open a new file at once, the loser retries until the winner has switched it.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_SECONDS
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")
