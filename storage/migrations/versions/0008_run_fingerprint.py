"""runs.fingerprint: an identical submission is answered with the stored run

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 08:20:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fingerprint", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_runs_fingerprint", ["fingerprint"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_fingerprint")
        batch_op.drop_column("fingerprint")
