"""The migrations build exactly the schema the code declares, on both backends."""

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from sheriff.errors import InputError
from sheriff.store import db
from sheriff.store.schema import job, manifest_set, metadata
from sheriff.store.schema.base import slugid_to_uuid, uuid_to_slugid


def test_migrated_database_matches_metadata(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == [], f"schema and migrations disagree: {diff}"
    assert db.current_revision(engine) == db.head_revision()


def test_open_database_migrates_an_empty_file(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    engine = db.open_database(url)
    assert db.current_revision(engine) == db.head_revision()
    assert "job" in sa.inspect(engine).get_table_names()
    engine.dispose()


DIGEST = "0123456789abcdef0123456789abcdef01234567"


def test_0005_to_0008_keep_jobs_and_what_hangs_off_them_both_ways(engine: sa.Engine) -> None:
    """Down to 0004 and up again with data: the job rebuild (SQLite) and the task id's and
    set digest's conversions to bytes and back (PostgreSQL) lose nothing."""
    config = db.alembic_config(engine)
    try:
        command.downgrade(config, "0004")
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO repository (id, name) VALUES (1, 'autoland')"))
            conn.execute(
                sa.text(
                    "INSERT INTO push (id, repository_id, revision, push_time) "
                    "VALUES (1, 1, 'abc', '2026-11-01 00:00:00')"
                )
            )
            for table, name in (("platform", None), ("job_group", "g"), ("job_type", "t")):
                values = "(1, 'linux', 'linux64', 'x86_64')" if name is None else "(1, 'n', 's')"
                conn.execute(sa.text(f"INSERT INTO {table} VALUES {values}"))
            conn.execute(sa.text("INSERT INTO task_queue (id, name) VALUES (1, 'q')"))
            conn.execute(
                sa.text("INSERT INTO manifest_set (id, digest, size) VALUES (1, :d, 0)"),
                {"d": DIGEST},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO job (id, submit_time, push_id, repository_id, build_platform_id, "
                    "machine_platform_id, job_group_id, job_type_id, task_queue_id, run_id, tier, "
                    "task_id, option_collection, job_kind, state, result) VALUES (1, "
                    "'2026-11-01 00:00:00', 1, 1, 1, 1, 1, 1, 1, 0, 1, 'AAAAAAAAAAAAAAAAAAAAAA', "
                    "'opt', 'test', 'completed', 'testfailed')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO run_observation (job_id, parse_status, updated_at) "
                    "VALUES (1, 'parsed', '2026-11-01 00:00:00')"
                )
            )
        command.upgrade(config, "head")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT state, result, job_kind FROM job")).one() == (
                "completed",
                "testfailed",
                "test",
            )
            stored = conn.execute(sa.select(job.c.task_id)).scalar()
            assert stored == "AAAAAAAAAAAAAAAAAAAAAA"
            assert conn.execute(sa.select(manifest_set.c.digest)).scalar() == DIGEST
            assert conn.execute(sa.text("SELECT count(*) FROM run_observation")).scalar() == 1
        command.downgrade(config, "0004")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT result FROM job")).scalar() == "testfailed"
            task_id = conn.execute(sa.text("SELECT task_id FROM job")).scalar()
            assert task_id == "AAAAAAAAAAAAAAAAAAAAAA"
            assert conn.execute(sa.text("SELECT digest FROM manifest_set")).scalar() == DIGEST
            assert conn.execute(sa.text("SELECT count(*) FROM run_observation")).scalar() == 1
    finally:
        command.upgrade(config, "head")
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_a_task_id_that_is_not_a_slugid_is_refused_with_a_message() -> None:
    with pytest.raises(InputError, match="not a Taskcluster task id"):
        slugid_to_uuid("earlier1xxxxxxxxxxxxxx")
    task_id = "fX2KHjx8Q1O5ZeSLa2mWWw"
    assert uuid_to_slugid(slugid_to_uuid(task_id)) == task_id
