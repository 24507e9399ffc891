"""trace_upload_chunks: an upload is stored in pieces as it is read, so no process holds a whole upload in memory
(trace_uploads.body stays for uploads stored before, now null for new ones)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 08:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_upload_chunks",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "seq"),
    )
    with op.batch_alter_table("trace_uploads", schema=None) as batch_op:
        batch_op.alter_column("body", existing_type=sa.LargeBinary(), nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("trace_uploads", schema=None) as batch_op:
        batch_op.alter_column("body", existing_type=sa.LargeBinary(), nullable=False)
    op.drop_table("trace_upload_chunks")
