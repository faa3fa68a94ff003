"""Run lineage and regressions: the run a re-run or re-score came from, the baseline, the comparison.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New nullable columns on `runs`: `source_run_id`, `baseline_run_id`, `regressed`, `regression`."""
    op.add_column("runs", sa.Column("source_run_id", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("baseline_run_id", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("regressed", sa.Boolean(), nullable=True))
    op.add_column("runs", sa.Column("regression", sa.JSON(), nullable=True))
    op.create_index("ix_runs_source_run_id", "runs", ["source_run_id"])
    op.create_index("ix_runs_agent_reference_status", "runs", ["agent_reference", "status"])


def downgrade() -> None:
    """Drop the columns (plain DROP COLUMN: a batch copy of `runs` would break the foreign keys to it)."""
    op.drop_index("ix_runs_agent_reference_status", table_name="runs")
    op.drop_index("ix_runs_source_run_id", table_name="runs")
    for column in ("regression", "regressed", "baseline_run_id", "source_run_id"):
        op.drop_column("runs", column)
