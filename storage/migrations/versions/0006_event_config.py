"""progress events keep the config a stage ran with (benchmark eager, benchmark inductor_default, ...)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 08:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("config", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_events", schema=None) as batch_op:
        batch_op.drop_column("config")
