"""graphs stored as the viewer reads them (report_graphs), and report sections' outlines without graph nodes

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 16:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report_graphs",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("graph_id", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "graph_id"),
    )
    with op.batch_alter_table("report_sections", schema=None) as batch_op:
        batch_op.add_column(sa.Column("outline", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("report_sections", schema=None) as batch_op:
        batch_op.drop_column("outline")
    op.drop_table("report_graphs")
