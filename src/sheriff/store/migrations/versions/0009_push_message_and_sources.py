"""push.message; repository.taskcluster_root_url and treeherder_url

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 12:30:00

Treeherder lists each push with its revisions and their commit messages; sheriff keeps
the tip's, so that a sheriff sees what a culprit push was about without leaving sheriff.
A repository keeps the Taskcluster and Treeherder it was fetched from, so that links to
its tasks and jobs point there (a simulator's data does not link to production).
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("push", sa.Column("message", sa.Text(), nullable=True))
    op.add_column("repository", sa.Column("taskcluster_root_url", sa.String(255), nullable=True))
    op.add_column("repository", sa.Column("treeherder_url", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repository") as batch:
        batch.drop_column("treeherder_url")
        batch.drop_column("taskcluster_root_url")
    with op.batch_alter_table("push") as batch:
        batch.drop_column("message")
