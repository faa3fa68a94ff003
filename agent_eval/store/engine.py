"""Engines for the store: a SQLite file by default, any SQLAlchemy URL (PostgreSQL) by setting."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel, create_engine

from agent_eval.settings import home_dir
from agent_eval.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)

__all__ = ["DB_URL_ENV", "default_db_url", "get_engine", "normalize_url"]

DB_URL_ENV = "AGENT_EVAL_DB_URL"


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
    """The engine for `url` (default: `default_db_url()`), created once per URL with its tables."""
    return _engine(normalize_url(url or default_db_url()))


@lru_cache(maxsize=16)
def _engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    SQLModel.metadata.create_all(engine)
    return engine


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    """WAL so readers never block the writer; a busy timeout so two runs can share one file."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
