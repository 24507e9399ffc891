"""runs.deferred_since: when a job left its post-report work (the warm compile, the measuring processes) for an idle
worker (workers.deferred), until that work's figures are stored: the pages say what is still to come

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 20:40:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deferred_since", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("deferred_since")
