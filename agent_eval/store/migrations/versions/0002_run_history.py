"""Run history: eval set versions, provenance and heartbeat of runs, tags, session state, indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_NEW_RUN_COLUMNS = ("deployment_name", "git_commit", "updated_at", "tags")


def upgrade() -> None:
    """New tables `eval_set_versions` and `run_eval_sets`; new columns on `runs` and `case_results`."""
    op.create_table(
        "eval_set_versions",
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("content", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("content_hash"),
    )
    op.create_index("ix_eval_set_versions_eval_set_id", "eval_set_versions", ["eval_set_id"])
    op.create_table(
        "run_eval_sets",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("eval_set_hash", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["eval_set_hash"], ["eval_set_versions.content_hash"]),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("run_id", "eval_set_id"),
    )
    op.create_index("ix_run_eval_sets_eval_set_id", "run_eval_sets", ["eval_set_id"])
    _link_existing_runs()
    op.add_column("runs", sa.Column("deployment_name", sa.String(), nullable=True))
    op.add_column("runs", sa.Column("git_commit", sa.String(), nullable=True))
    op.add_column("runs", sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("runs", sa.Column("tags", sa.JSON(), server_default=sa.text("'[]'"), nullable=False))
    op.create_index("ix_runs_started_at", "runs", ["started_at"])
    op.add_column("case_results", sa.Column("final_session_state", sa.JSON(), nullable=True))
    op.create_index("ix_metric_results_case_metric", "metric_results", ["case_result_id", "metric_name"], unique=True)


def _link_existing_runs() -> None:
    """Runs of the first release name their eval sets only in `runs.eval_set_ids` (JSON): link them too."""
    runs = sa.table("runs", sa.column("id", sa.String()), sa.column("eval_set_ids", sa.JSON()))
    links = sa.table("run_eval_sets", sa.column("run_id", sa.String()), sa.column("eval_set_id", sa.String()))
    rows = [
        {"run_id": run_id, "eval_set_id": eval_set_id}
        for run_id, eval_set_ids in op.get_bind().execute(sa.select(runs.c.id, runs.c.eval_set_ids))
        for eval_set_id in dict.fromkeys(eval_set_ids or [])
    ]
    if rows:
        op.bulk_insert(links, rows)


def downgrade() -> None:
    """Back to the first release's schema (the new tables and columns and their data are dropped)."""
    op.drop_index("ix_metric_results_case_metric", table_name="metric_results")
    # Plain DROP COLUMN (SQLite 3.35+): a batch copy of `runs` would break the foreign keys pointing at it.
    op.drop_column("case_results", "final_session_state")
    op.drop_index("ix_runs_started_at", table_name="runs")
    for column in _NEW_RUN_COLUMNS:
        op.drop_column("runs", column)
    op.drop_table("run_eval_sets")
    op.drop_table("eval_set_versions")
