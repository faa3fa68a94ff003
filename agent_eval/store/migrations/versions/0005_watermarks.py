"""Watermarks: how far a scheduled evaluation of recorded traffic has scored.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New table `watermarks`: one row per named watermark (the `agent-eval/traces` deployment's)."""
    op.create_table(
        "watermarks",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("position", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("watermarks")
