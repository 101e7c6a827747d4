"""action requests: the log of Taskcluster action requests (sheriff.actions)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 02:37:07.925644
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "action_request",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=False),
        sa.Column("strategy", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("repository", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.String(length=40), nullable=False),
        sa.Column("decision_task_id", sa.String(length=22), nullable=True),
        sa.Column("task_id", sa.String(length=22), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("input", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("hook", sa.String(length=255), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=True),
        sa.Column("action_task_id", sa.String(length=22), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("attempts", sa.SmallInteger(), server_default="0", nullable=False),
        sa.Column("claimed_by", sa.String(length=100), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_action_request")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_action_request_idempotency_key")),
    )
    with op.batch_alter_table("action_request", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_action_request_repository_revision"),
            ["repository", "revision"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_action_request_state"), ["state"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("action_request", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_action_request_state"))
        batch_op.drop_index(batch_op.f("ix_action_request_repository_revision"))

    op.drop_table("action_request")
