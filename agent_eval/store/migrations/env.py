"""Alembic's environment: migrate the connection `agent_eval.store.migrate` passes in (or `sqlalchemy.url`)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

from agent_eval.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)


def _migrate(connection: Connection) -> None:
    # Batch mode lets autogenerate write ALTERs that SQLite can run (it copies the table).
    context.configure(connection=connection, target_metadata=SQLModel.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def _run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _migrate(connection)
        return
    from agent_eval.store.engine import new_engine, normalize_url

    engine = new_engine(normalize_url(context.config.get_main_option("sqlalchemy.url") or ""))
    try:
        with engine.begin() as fresh:
            _migrate(fresh)
    finally:
        engine.dispose()


_run()
