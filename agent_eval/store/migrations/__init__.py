"""Alembic migrations of the store, shipped inside the package and applied by `agent_eval.store.migrate`.

Internal: the public API is `agent_eval`'s; this package's names may change between releases.

Every engine upgrades its database to the newest revision on first use (`get_engine`). To add a revision
after changing `agent_eval/store/models.py`, autogenerate it against a database at the current head::

    python -c "from agent_eval.store import get_engine; from agent_eval.store.migrate import revision; \
        revision('add x to runs', get_engine('sqlite:///dev.db'))"

then read the new file in `versions/` (keep it portable: SQLite and PostgreSQL) and name it `NNNN_what.py`.
"""
