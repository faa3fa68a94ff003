"""Schema migrations: every engine upgrades its database to the newest Alembic revision on first use.

The upgrade runs in one transaction that excludes other writers (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a
transaction-level advisory lock), so processes starting at once on a new database migrate it exactly once.
A database made by the first release (tables, no `alembic_version`) is stamped with revision `0001` first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "FIRST_REVISION",
    "MIGRATIONS_DIR",
    "alembic_config",
    "head_revision",
    "is_current",
    "newest_packaged_revision",
    "revision",
    "upgrade",
]

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
FIRST_REVISION = "0001"
_LOCK_KEY = 0x6167_656E_7465_7631  # "agentev1": the PostgreSQL advisory lock of the migration


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """Alembic's config for the packaged migrations, on a connection (in a transaction) or a URL."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision of the packaged migrations, as Alembic reads them."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def upgrade(engine: Engine, target: str = "head") -> None:
    """Migrate the database to `target` (idempotent; safe with concurrent callers). A database already at the
    newest revision costs one query: Alembic (~0.3 s to import and read its scripts) is not loaded."""
    if target == "head" and is_current(engine):
        return
    from alembic import command

    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        config = alembic_config(connection)
        tables = set(inspect(connection).get_table_names())
        if "runs" in tables and "alembic_version" not in tables:
            command.stamp(config, FIRST_REVISION)
        command.upgrade(config, target)


def newest_packaged_revision() -> str:
    """The newest revision id by file name: every revision file is `NNNN_slug.py` with `revision = "NNNN"`
    (a test holds the two equal), so this needs no Alembic."""
    return max(path.name.split("_", 1)[0] for path in (MIGRATIONS_DIR / "versions").glob("[0-9]*_*.py"))


def is_current(engine: Engine) -> bool:
    """Whether the database is already at the newest packaged revision."""
    with engine.connect() as connection:
        if "alembic_version" not in inspect(connection).get_table_names():
            return False
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return versions == [newest_packaged_revision()]


def revision(message: str, engine: Engine) -> None:
    """Autogenerate the next numbered revision from the models' difference to the database of `engine` (an
    engine of `agent_eval.store.get_engine`, so the database is at the newest revision first)."""
    from alembic import command

    rev_id = f"{int(head_revision()) + 1:04d}"
    with engine.begin() as connection:
        command.revision(alembic_config(connection), message=message, autogenerate=True, rev_id=rev_id)
