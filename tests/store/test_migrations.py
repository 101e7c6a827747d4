"""The migrations build exactly the schema the code declares, on both backends."""

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from sheriff.store import db
from sheriff.store.schema import metadata


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
