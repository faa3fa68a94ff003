"""Why a case run failed (its kind and traceback), where a reused invocation came from; a run's error and process.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_CASE_COLUMNS = ("error_kind", "error_traceback", "cached_from_run_id", "cached_at")


def upgrade() -> None:
    """New nullable columns: `case_results.error_kind / error_traceback / cached_from_run_id / cached_at`
    and on `runs`: `error` (the first cause of an errored, cancelled or crashed run), `host` and `pid` (the
    process that runs it, so a run whose process died is marked crashed)."""
    op.add_column("case_results", sa.Column("error_kind", sa.String(length=16), nullable=True))
    op.add_column("case_results", sa.Column("error_traceback", sa.Text(), nullable=True))
    op.add_column("case_results", sa.Column("cached_from_run_id", sa.String(length=64), nullable=True))
    op.add_column("case_results", sa.Column("cached_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("runs", sa.Column("error", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("host", sa.String(length=255), nullable=True))
    op.add_column("runs", sa.Column("pid", sa.Integer(), nullable=True))


def downgrade() -> None:
    """Drop the columns (plain DROP COLUMN, as 0003 does)."""
    for column in ("pid", "host", "error"):
        op.drop_column("runs", column)
    for column in reversed(_CASE_COLUMNS):
        op.drop_column("case_results", column)
