"""pack the indexes that only grow at their right end (PostgreSQL fillfactor 100)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 06:30:00

Job ids, a job's push and a new manifest set's id only grow, so these indexes take new
entries at their right end, where PostgreSQL splits a full page leaving `fillfactor`
percent behind (90 by default, kept free for updates that never come). No effect on
SQLite.
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

APPEND_ONLY = ("pk_job", "ix_job_push_id_job_type_id", "pk_manifest_set_member")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for index in APPEND_ONLY:
            op.execute(f"ALTER INDEX {index} SET (fillfactor = 100)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for index in APPEND_ONLY:
            op.execute(f"ALTER INDEX {index} RESET (fillfactor)")
