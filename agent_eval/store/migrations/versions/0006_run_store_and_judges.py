"""Which store a run wrote to, and which judges scored it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """New nullable columns on `runs`: `store_url` (the store the run wrote to, password redacted) and `judges`
    (per eval set and judged criterion, the judge identity that scored it: model, mode, prompt, samples)."""
    op.add_column("runs", sa.Column("store_url", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("judges", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop the columns."""
    op.drop_column("runs", "judges")
    op.drop_column("runs", "store_url")
