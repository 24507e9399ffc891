"""worker heartbeats carry the worker's device (CPU model, GPUs, torch and Triton versions)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 15:45:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("worker_heartbeats", schema=None) as batch_op:
        batch_op.add_column(sa.Column("device", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("worker_heartbeats", schema=None) as batch_op:
        batch_op.drop_column("device")
