"""regression and regression_case: the cases that are one breakage

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 16:10:00

Triage opens one case per failed run; a regression fails many. A regression record
groups them (tests, failure lines, configurations, first failing push, culprit, the push
where it stopped failing), and one backfill search and one alert serve it.
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _fk(column: str, table: str, ondelete: str | None, source: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{table}.id"], name=op.f(f"fk_{source}_{column}_{table}"), ondelete=ondelete
    )


def upgrade() -> None:
    when = sa.DateTime(timezone=True)
    op.create_table(
        "regression",
        sa.Column("id", BigId, nullable=False),
        sa.Column("repository_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("failure_lines", sa.JSON(), nullable=False),
        sa.Column("configurations", sa.JSON(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("first_push_id", sa.Integer(), nullable=False),
        sa.Column("last_push_id", sa.Integer(), nullable=False),
        sa.Column("culprit_push_id", sa.Integer(), nullable=True),
        sa.Column("culprit_revision", sa.String(length=40), nullable=True),
        sa.Column("stopped_push_id", sa.Integer(), nullable=True),
        sa.Column("backfill_report_id", BigId, nullable=True),
        sa.Column("merged_into", BigId, nullable=True),
        sa.Column("opened_at", when, nullable=False),
        sa.Column("updated_at", when, nullable=False),
        _fk("repository_id", "repository", None, "regression"),
        _fk("first_push_id", "push", "CASCADE", "regression"),
        _fk("last_push_id", "push", "CASCADE", "regression"),
        _fk("culprit_push_id", "push", "SET NULL", "regression"),
        _fk("stopped_push_id", "push", "SET NULL", "regression"),
        _fk("backfill_report_id", "backfill_report", "SET NULL", "regression"),
        _fk("merged_into", "regression", "SET NULL", "regression"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regression")),
    )
    op.create_index(
        op.f("ix_regression_repository_id_status"), "regression", ["repository_id", "status"]
    )
    op.create_table(
        "regression_case",
        sa.Column("case_id", BigId, nullable=False),
        sa.Column("regression_id", BigId, nullable=False),
        _fk("case_id", "triage_case", "CASCADE", "regression_case"),
        _fk("regression_id", "regression", "CASCADE", "regression_case"),
        sa.PrimaryKeyConstraint("case_id", name=op.f("pk_regression_case")),
    )
    op.create_index(op.f("ix_regression_case_regression_id"), "regression_case", ["regression_id"])


def downgrade() -> None:
    op.drop_index("ix_regression_case_regression_id", table_name="regression_case")
    op.drop_table("regression_case")
    op.drop_index("ix_regression_repository_id_status", table_name="regression")
    op.drop_table("regression")
