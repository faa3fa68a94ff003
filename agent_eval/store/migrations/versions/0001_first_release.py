"""The schema of the first release: runs, case results and metric results.

Databases made by that release (with `create_all`, no `alembic_version` table) are stamped with this
revision before they are upgraded; see `agent_eval.store.migrate`.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamp(name: str, nullable: bool) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    """Create the three tables of the first release with their indexes."""
    op.create_table(
        "runs",
        sa.Column("flow_run_id", sa.String(), nullable=True),
        sa.Column("agent_reference", sa.String(), nullable=False),
        sa.Column("agent_fingerprint", sa.String(), nullable=False),
        sa.Column("config_hash", sa.String(), nullable=False),
        sa.Column("num_runs", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        _timestamp("started_at", nullable=False),
        _timestamp("completed_at", nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("pass_rate", sa.Float(), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("eval_set_ids", sa.JSON(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    for column in ("agent_reference", "flow_run_id", "status"):
        op.create_index(f"ix_runs_{column}", "runs", [column])
    _create_case_results()
    _create_metric_results()


def _create_case_results() -> None:
    op.create_table(
        "case_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("eval_id", sa.String(), nullable=False),
        sa.Column("run_index", sa.Integer(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("failure", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("latency_seconds", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("actual_invocations", sa.JSON(), nullable=True),
        sa.Column("token_usage", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "eval_set_id", "eval_id", "run_index"),
    )
    for column in ("eval_id", "eval_set_id", "run_id"):
        op.create_index(f"ix_case_results_{column}", "case_results", [column])


def _create_metric_results() -> None:
    op.create_table(
        "metric_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("metric_name", sa.String(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("explanation", sa.String(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("per_invocation", sa.JSON(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["case_result_id"], ["case_results.id"]),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    for column in ("case_result_id", "metric_name", "run_id"):
        op.create_index(f"ix_metric_results_{column}", "metric_results", [column])


def downgrade() -> None:
    """Drop everything."""
    op.drop_table("metric_results")
    op.drop_table("case_results")
    op.drop_table("runs")
