"""manifest_set.digest as its 20 bytes on PostgreSQL

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30 06:40:00

The interning key of a manifest set (sha1) was stored as 40 hex digits; PostgreSQL now
stores its 20 bytes (`HexDigest` in store/schema/base.py converts both ways). SQLite
keeps the string.
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE manifest_set ALTER COLUMN digest TYPE bytea USING decode(digest, 'hex')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE manifest_set ALTER COLUMN digest TYPE VARCHAR(40) "
            "USING encode(digest, 'hex')"
        )
