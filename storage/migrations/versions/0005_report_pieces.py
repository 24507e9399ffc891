"""report_pieces: data derived from a report once, when it is stored, and served in small pieces (provenance)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 08:10:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report_pieces",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "key"),
    )


def downgrade() -> None:
    op.drop_table("report_pieces")
