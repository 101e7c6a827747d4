"""job.task_id as a 16-byte uuid on PostgreSQL

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 06:20:00

A Taskcluster task id is a slugid, 22 URL-safe base64 characters of 16 bytes; PostgreSQL
now stores the 16 bytes (`SlugId` in store/schema/base.py converts both ways). SQLite
keeps VARCHAR(22). A stored task id that is not a slugid stops the upgrade.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TO_UUID = "encode(decode(translate(task_id, '-_', '+/') || '==', 'base64'), 'hex')::uuid"
TO_SLUGID = (
    "rtrim(translate(encode(decode(replace(task_id::text, '-', ''), 'hex'), 'base64'), "
    "'+/', '-_'), '=')"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE job ALTER COLUMN task_id TYPE uuid USING {TO_UUID}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE job ALTER COLUMN task_id TYPE VARCHAR(22) USING {TO_SLUGID}")
