"""Judge checks: a judge's agreement with the labels, measured again with fresh calls.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New table `judge_checks`: one row per check of a judge identity on a metric."""
    op.create_table(
        "judge_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("metric_name", sa.String(), nullable=False),
        sa.Column("judge_key", sa.String(length=12), nullable=False),
        sa.Column("judge", sa.JSON(), nullable=True),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("labels", sa.Integer(), nullable=False),
        sa.Column("kappa", sa.Float(), nullable=True),
        sa.Column("kappa_low", sa.Float(), nullable=True),
        sa.Column("kappa_high", sa.Float(), nullable=True),
        sa.Column("agreement", sa.JSON(), nullable=True),
        sa.Column("verdicts", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    for column in ("metric_name", "judge_key", "checked_at"):
        op.create_index(f"ix_judge_checks_{column}", "judge_checks", [column])


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("judge_checks")
