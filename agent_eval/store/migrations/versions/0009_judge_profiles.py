"""Judge profiles: versioned few-shot examples chosen from people's labels.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New table `judge_profiles`: one row per version of a named profile."""
    op.create_table(
        "judge_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("metric_name", sa.String(), nullable=False),
        sa.Column("examples", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kept", sa.Boolean(), nullable=False),
        sa.Column("evaluation", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "version"),
    )
    op.create_index("ix_judge_profiles_name", "judge_profiles", ["name"])
    op.create_index("ix_judge_profiles_metric_name", "judge_profiles", ["metric_name"])


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("judge_profiles")
