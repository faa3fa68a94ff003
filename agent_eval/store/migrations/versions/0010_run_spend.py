"""Run spend: what each process of a budgeted run has spent, for a budget that holds across shards.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New table `run_spend`: one row per run and process (worker) of a run with a budget."""
    op.create_table(
        "run_spend",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("worker", sa.String(length=64), nullable=False),
        sa.Column("totals", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("run_id", "worker"),
    )


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("run_spend")
