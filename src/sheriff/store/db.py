"""Engines and migrations.

`open_database(url)` is the one way in: it creates the engine with the settings each
backend needs and brings an empty or older database to the newest schema, so a fresh
`sheriff.db` works on first use.

Several processes may start on one empty database at once (workers, a listener and a
triage loop deployed together), so migrating is done by one of them at a time: under a
PostgreSQL advisory lock, or for an SQLite file a lock file in the temporary folder named
after it (SQLite's own locking cannot cover it: Alembic does not run SQLite DDL in one
transaction). Whoever gets the lock second finds the schema at head and has nothing to do.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from filelock import FileLock, Timeout
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


def create_engine(url: str, *, connections: int | None = None) -> Engine:
    """An engine for `url`; `postgresql://` URLs use psycopg 3. `connections`: how many
    it may hold open at once (default: SQLAlchemy's 5, and 10 more under load)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    pool: dict[str, int] = {}
    if connections is not None and not url.startswith("sqlite:///:memory:") and url != "sqlite://":
        pool = {"pool_size": min(connections, 10), "max_overflow": max(0, connections - 10)}
    try:
        engine = sa.create_engine(url, future=True, pool_pre_ping=True, **pool)
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


# One key for "sheriff is migrating this database" (advisory locks are per database).
MIGRATION_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"sheriff.store.migrations").digest()[:8], "big", signed=True
)
# How long a process waits for another's migration before saying so.
MIGRATION_LOCK_TIMEOUT_SECONDS = 600


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Held while migrating: one process at a time per database (see the module docstring)."""
    if engine.dialect.name == "postgresql":
        # AUTOCOMMIT: a session lock, without a transaction left open beside the DDL.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            timeout = f"{MIGRATION_LOCK_TIMEOUT_SECONDS}s"
            conn.execute(sa.select(sa.func.set_config("lock_timeout", timeout, False)))
            conn.execute(sa.select(sa.func.pg_advisory_lock(MIGRATION_LOCK_KEY)))
            try:
                yield
            finally:
                conn.execute(sa.select(sa.func.pg_advisory_unlock(MIGRATION_LOCK_KEY)))
                conn.execute(sa.select(sa.func.set_config("lock_timeout", "0", False)))
        return
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield  # in memory: one connection, one process
        return
    # In the temporary folder, not beside the database: nothing is left in the user's.
    digest = hashlib.sha256(str(Path(database).resolve()).encode()).hexdigest()[:16]
    where = Path(tempfile.gettempdir()) / f"sheriff-migration-{digest}.lock"
    lock = FileLock(where, timeout=MIGRATION_LOCK_TIMEOUT_SECONDS)
    try:
        lock.acquire()
    except Timeout as exc:
        raise SheriffError(
            f"{database}: another process has been migrating it for "
            f"{MIGRATION_LOCK_TIMEOUT_SECONDS} s ({lock.lock_file} is held)"
        ) from exc
    try:
        yield
    finally:
        lock.release()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to `revision`, one process at a time."""
    with migration_lock(engine):
        command.upgrade(alembic_config(engine), revision)


def open_database(url: str, *, migrate: bool = True, connections: int | None = None) -> Engine:
    """Connect, and migrate to the newest schema unless told not to."""
    engine = create_engine(url, connections=connections)
    try:
        if migrate and current_revision(engine) != head_revision():
            with migration_lock(engine):
                # Another process may have migrated while this one waited for the lock.
                if current_revision(engine) != head_revision():
                    command.upgrade(alembic_config(engine), "head")
    except sa.exc.OperationalError as exc:
        where = engine.url.render_as_string(hide_password=True)
        raise SheriffError(f"cannot open database {where!r}: {exc.orig}") from exc
    return engine


@contextmanager
def transaction(engine: Engine) -> Iterator[sa.Connection]:
    """One all-or-nothing unit of work."""
    with engine.begin() as conn:
        yield conn
