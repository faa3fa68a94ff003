"""Engines for the store: a SQLite file by default, any SQLAlchemy URL (PostgreSQL) by setting.

On SQLite every transaction starts with `BEGIN IMMEDIATE`: it takes the write lock up front (waiting up to
the busy timeout), so two processes writing runs to one file queue up instead of failing half-way with
`database is locked` when a read inside a transaction turns into a write.
"""

from __future__ import annotations

import os
import sqlite3
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.engine import Engine
from sqlmodel import create_engine

from agent_eval.settings import home_dir
from agent_eval.store.migrate import upgrade

__all__ = ["DB_URL_ENV", "default_db_url", "get_engine", "new_engine", "normalize_url"]

DB_URL_ENV = "AGENT_EVAL_DB_URL"
SQLITE_BUSY_TIMEOUT_SECONDS = 30


def default_db_url() -> str:
    """`$AGENT_EVAL_DB_URL`, else a SQLite file `agent_eval.db` in `$AGENT_EVAL_HOME` (default `~/.agent_eval`)."""
    if os.environ.get(DB_URL_ENV):
        return os.environ[DB_URL_ENV]
    return f"sqlite:///{home_dir() / 'agent_eval.db'}"


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


def new_engine(url: str) -> Engine:
    """A new engine for a normalized URL, without touching its schema (SQLite: WAL, immediate transactions)."""
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
