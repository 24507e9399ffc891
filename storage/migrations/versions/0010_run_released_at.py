"""runs.released_at: when the worker was done with a run (its report and every figure after it stored), so the
queue's wait is estimated from measured job times

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 08:10:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("released_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("released_at")
