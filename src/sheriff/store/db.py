"""Engines and migrations.

`open_database(url)` is the one way in: it creates the engine with the settings each
backend needs and brings an empty or older database to the newest schema, so a fresh
`sheriff.db` works on first use.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from sheriff.errors import ConfigError, SheriffError

MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    # WAL lets the API read while a triage pass writes; foreign keys are off by default.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def redacted(url: str) -> str:
    """`url` fit to print: a password, parseable or not, shows as ***."""
    scheme, sep, rest = url.rpartition("://") if "://" in url else ("", "", url)
    return scheme + sep + re.sub(r"^([^:/@]*):[^@]*@", r"\1:***@", rest, count=1)


def create_engine(url: str) -> Engine:
    """An engine for `url`; `postgresql://` URLs use psycopg 3."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    try:
        engine = sa.create_engine(url, future=True, pool_pre_ping=True)
    except (sa.exc.ArgumentError, ImportError, ValueError) as exc:
        reason = str(exc).replace(url, redacted(url))
        raise ConfigError(f"unusable database URL {redacted(url)!r}: {reason}") from None
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    else:
        # Batch executemany INSERTs into multi-row VALUES statements even without
        # RETURNING; psycopg's pipelined executemany sends one statement per row.
        engine.dialect.use_insertmanyvalues_wo_returning = True
    return engine


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str | None:
    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to `revision`."""
    command.upgrade(alembic_config(engine), revision)


def open_database(url: str, *, migrate: bool = True) -> Engine:
    """Connect, and migrate to the newest schema unless told not to."""
    engine = create_engine(url)
    try:
        if migrate and current_revision(engine) != head_revision():
            upgrade(engine)
    except sa.exc.OperationalError as exc:
        where = engine.url.render_as_string(hide_password=True)
        raise SheriffError(f"cannot open database {where!r}: {exc.orig}") from exc
    return engine


@contextmanager
def transaction(engine: Engine) -> Iterator[sa.Connection]:
    """One all-or-nothing unit of work."""
    with engine.begin() as conn:
        yield conn
