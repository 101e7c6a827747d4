"""a leaner job row: enums for state/result/kind, no FKs to interned ids, no submit_time index

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 06:15:00

On PostgreSQL `state`, `result` and `job_kind` become native enums (4 bytes instead of
up to 11); on SQLite they stay VARCHAR(16). The job's references to the interned tables
(repository, platform twice, job group, job type, task queue) lose their foreign key
constraints, whose per-row trigger queries dominated bulk inserts; the submit_time index
goes, as `sheriff cycle` now expires jobs through their push.
"""

from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# (column, referred table) of each foreign key dropped, named as 0001 named them.
INTERNED = [
    ("repository_id", "repository"),
    ("build_platform_id", "platform"),
    ("machine_platform_id", "platform"),
    ("job_group_id", "job_group"),
    ("job_type_id", "job_type"),
    ("task_queue_id", "task_queue"),
]
ENUMS = {
    "state": ("job_state", ("unscheduled", "pending", "running", "completed")),
    "result": (
        "job_result",
        (
            "success",
            "testfailed",
            "busted",
            "exception",
            "usercancel",
            "superseded",
            "retry",
            "unknown",
        ),
    ),
    "job_kind": ("job_kind", ("build", "test", "other")),
}


def _fk_name(column: str, referred: str) -> str:
    return f"fk_job_{column}_{referred}"


def _sqlite_foreign_keys(on: bool) -> None:
    # SQLite rebuilds `job` to drop or add a constraint; with foreign keys enforced,
    # dropping the old copy would cascade into the rows that reference jobs.
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


def upgrade() -> None:
    bind = op.get_bind()
    _sqlite_foreign_keys(False)
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_submit_time"))
        for column, referred in INTERNED:
            batch_op.drop_constraint(batch_op.f(_fk_name(column, referred)), type_="foreignkey")
    _sqlite_foreign_keys(True)
    if bind.dialect.name == "postgresql":
        for column, (name, values) in ENUMS.items():
            postgresql.ENUM(*values, name=name).create(bind)
            op.execute(
                f"ALTER TABLE job ALTER COLUMN {column} TYPE {name} USING {column}::text::{name}"
            )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for column, (name, _) in ENUMS.items():
            op.execute(
                f"ALTER TABLE job ALTER COLUMN {column} TYPE VARCHAR(16) USING {column}::text"
            )
            postgresql.ENUM(name=name).drop(bind)
    _sqlite_foreign_keys(False)
    with op.batch_alter_table("job", schema=None) as batch_op:
        for column, referred in INTERNED:
            batch_op.create_foreign_key(
                batch_op.f(_fk_name(column, referred)), referred, [column], ["id"]
            )
        batch_op.create_index(batch_op.f("ix_job_submit_time"), ["submit_time"], unique=False)
    _sqlite_foreign_keys(True)
