"""runs record a keyed hash of the submitting client's address, for per-client rate limits

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 16:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_runs_client_created_at", ["client", "created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_client_created_at")
        batch_op.drop_column("client")
