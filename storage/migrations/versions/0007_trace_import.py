"""TORCH_TRACE imports: runs say what made them (kind), an import's ranks and a re-run point at their first run
(parent_id, rank), and uploads wait in trace_uploads until a worker imports them

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 08:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="job"))
        batch_op.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("rank", sa.Integer(), nullable=True))
        batch_op.create_index("ix_runs_parent_id", ["parent_id"], unique=False)
        batch_op.create_foreign_key("fk_runs_parent_id", "runs", ["parent_id"], ["id"], ondelete="SET NULL")
    op.create_table(
        "trace_uploads",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id"),
    )


def downgrade() -> None:
    op.drop_table("trace_uploads")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint("fk_runs_parent_id", type_="foreignkey")
        batch_op.drop_index("ix_runs_parent_id")
        batch_op.drop_column("rank")
        batch_op.drop_column("parent_id")
        batch_op.drop_column("kind")
