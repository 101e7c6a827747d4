"""backfill reports and records (sheriff.backfill)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 02:42:02.115684
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "backfill_report",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("repository_id", sa.Integer(), nullable=False),
        sa.Column("push_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("case_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=255), nullable=False),
        sa.Column("strategy", sa.String(length=16), nullable=False),
        sa.Column("same_manifests", sa.Boolean(), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("failure_lines", sa.JSON(), nullable=False),
        sa.Column("fail_rate", sa.Float(), nullable=False),
        sa.Column("case_ids", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("culprit_push_id", sa.Integer(), nullable=True),
        sa.Column("culprit_revision", sa.String(length=40), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("mature_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["case_id"],
            ["triage_case.id"],
            name=op.f("fk_backfill_report_case_id_triage_case"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["culprit_push_id"],
            ["push.id"],
            name=op.f("fk_backfill_report_culprit_push_id_push"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_backfill_report_job_id_job"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["push_id"],
            ["push.id"],
            name=op.f("fk_backfill_report_push_id_push"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["repository_id"],
            ["repository.id"],
            name=op.f("fk_backfill_report_repository_id_repository"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfill_report")),
        sa.UniqueConstraint("case_id", name=op.f("uq_backfill_report_case_id")),
    )
    with op.batch_alter_table("backfill_report", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_backfill_report_repository_id_status"),
            ["repository_id", "status"],
            unique=False,
        )

    op.create_table(
        "backfill_record",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "report_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label", sa.String(length=255), nullable=False),
        sa.Column("platform", sa.String(length=100), nullable=False),
        sa.Column("option_collection", sa.String(length=32), nullable=False),
        sa.Column("tier", sa.SmallInteger(), nullable=False),
        sa.Column("manifest_set_id", sa.Integer(), nullable=True),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("actions_triggered", sa.Integer(), server_default="0", nullable=False),
        sa.Column("runs_in_progress", sa.Integer(), server_default="0", nullable=False),
        sa.Column("runs_successful", sa.Integer(), server_default="0", nullable=False),
        sa.Column("runs_failed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("iterations", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_push_id", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("triggered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_backfill_record_job_id_job"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["last_push_id"],
            ["push.id"],
            name=op.f("fk_backfill_record_last_push_id_push"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["manifest_set_id"],
            ["manifest_set.id"],
            name=op.f("fk_backfill_record_manifest_set_id_manifest_set"),
        ),
        sa.ForeignKeyConstraint(
            ["report_id"],
            ["backfill_report.id"],
            name=op.f("fk_backfill_record_report_id_backfill_report"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfill_record")),
        sa.UniqueConstraint(
            "report_id", "job_id", name=op.f("uq_backfill_record_report_id_job_id")
        ),
    )
    with op.batch_alter_table("backfill_record", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_backfill_record_platform_triggered_at"),
            ["platform", "triggered_at"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_backfill_record_status"), ["status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("backfill_record", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_backfill_record_status"))
        batch_op.drop_index(batch_op.f("ix_backfill_record_platform_triggered_at"))

    op.drop_table("backfill_record")
    with op.batch_alter_table("backfill_report", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_backfill_report_repository_id_status"))

    op.drop_table("backfill_report")
