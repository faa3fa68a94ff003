"""Judged items and the labels people give them.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New tables `judged_items` (what a judge scored in a run, keyed by the judged content) and `judge_labels`
    (a person's verdict on judged content, one per item key and labeller)."""
    op.create_table(
        "judged_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("metric_name", sa.String(), nullable=False),
        sa.Column("rubric_id", sa.String(length=255), nullable=True),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("item_key", sa.String(length=64), nullable=False),
        sa.Column("judge_score", sa.Float(), nullable=True),
        sa.Column("judge_passed", sa.Boolean(), nullable=True),
        sa.Column("samples", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["case_result_id"], ["case_results.id"]),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    for column in ("run_id", "case_result_id", "metric_name", "item_key"):
        op.create_index(f"ix_judged_items_{column}", "judged_items", [column])
    op.create_table(
        "judge_labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_key", sa.String(length=64), nullable=False),
        sa.Column("metric_name", sa.String(), nullable=False),
        sa.Column("rubric_id", sa.String(length=255), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("labeller", sa.String(length=255), nullable=False),
        sa.Column("labelled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("eval_set_id", sa.String(), nullable=True),
        sa.Column("eval_id", sa.String(), nullable=True),
        sa.Column("turn", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("item_key", "labeller"),
    )
    for column in ("item_key", "metric_name"):
        op.create_index(f"ix_judge_labels_{column}", "judge_labels", [column])


def downgrade() -> None:
    """Drop the tables."""
    op.drop_table("judge_labels")
    op.drop_table("judged_items")
