"""Shared fixtures: a freshly migrated database on SQLite and on PostgreSQL, and paths.

PostgreSQL tests use `SHERIFF_TEST_POSTGRES_URL` (default: root on 127.0.0.1:5432, database
`test`) to create a throwaway database per test session. Without a reachable server they
skip and say why; under `CI=true` they fail instead, so CI never silently loses them.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.sim.scenario import BUNDLED
from sheriff.store import db
from sheriff.store.schema import metadata

ROOT = Path(__file__).resolve().parent.parent
# Real Firefox CI files (Treeherder's test data, MPL-2.0): tests/data/README.md.
REFERENCE = ROOT / "tests" / "data"
SCENARIOS = BUNDLED

# No test may reach the real Firefox CI: whatever a test (or a command it starts) does not
# point elsewhere goes to a closed port on loopback and fails at once.
for _name in ("TASKCLUSTER_ROOT_URL", "SHERIFF_TREEHERDER_URL"):
    os.environ.setdefault(_name, "http://127.0.0.1:9")

POSTGRES_URL = os.environ.get(
    "SHERIFF_TEST_POSTGRES_URL", "postgresql+psycopg://root@127.0.0.1:5432/test"
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    # pytest 9.2 no longer reads the test ids by which pytest-xdist 3.8 groups tests: the
    # broker tests below would run side by side and fail now and then. Say so instead.
    if config.getoption("dist", "no") == "loadgroup" and pytest.version_tuple >= (9, 2):
        raise pytest.UsageError(
            "pytest-xdist cannot keep the RabbitMQ tests on one worker under pytest "
            f"{pytest.__version__}: pip install 'pytest<9.2' (pyproject.toml pins it)"
        )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that talk to RabbitMQ run one after another on one pytest-xdist worker:
    every simulator publishes Pulse to the same exchanges on one vhost, so two plays at
    once would hear each other's messages (tests/service/conftest.py). They go first: one
    after another they take minutes, and begun last they were the whole run's tail."""
    broker = {
        item.nodeid
        for item in items
        if item.get_closest_marker("rabbitmq") or item.path.is_relative_to(ROOT / "tests/service")
    }
    for item in items:
        if item.nodeid in broker:
            item.add_marker(pytest.mark.xdist_group("broker"))
    items.sort(key=lambda item: item.nodeid not in broker)  # stable: the rest keep their order


@pytest.fixture(scope="session")
def reference() -> Path:
    """The real reference files the repository carries (tests/data)."""
    return REFERENCE


@pytest.fixture(scope="session")
def scenarios_dir() -> Path:
    """The scenarios shipped inside the package (small, autoland-day)."""
    return SCENARIOS


def _postgres_unavailable() -> str | None:
    try:
        engine = sa.create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # any failure to connect means: no server for these tests
        return f"PostgreSQL not reachable at {POSTGRES_URL}: {exc.__class__.__name__}"
    return None


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """URL of a throwaway PostgreSQL database, migrated, dropped at the end of the session."""
    reason = _postgres_unavailable()
    if reason:
        if IN_CI:
            pytest.fail(f"{reason} (CI=true: PostgreSQL tests must run)")
        pytest.skip(reason)
    name = f"sheriff_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    engine = db.open_database(url)
    engine.dispose()
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def empty_postgres(postgres_server_url: str) -> Iterator[str]:
    """A database with nothing in it, created for this test (the
    processes a test starts migrate it on first use)."""
    name = f"sheriff_empty_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(POSTGRES_URL).set(database=name).render_as_string(False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test instead of migrating every time."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = db.open_database(f"sqlite:///{path}")
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


def _truncate_all(engine: Engine) -> None:
    names = ", ".join(f'"{t.name}"' for t in metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL to an empty, migrated database: each test runs once per backend."""
    if request.param == "sqlite":
        target = tmp_path / "sheriff.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), target)
        yield f"sqlite:///{target}"
    else:
        url = request.getfixturevalue("postgres_server_url")
        engine = db.create_engine(url)
        _truncate_all(engine)
        engine.dispose()
        yield url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on the per-test database (see `db_url`)."""
    engine = db.open_database(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def sqlite_engine(tmp_path: Path, sqlite_template: Path) -> Iterator[Engine]:
    """SQLite only, for tests that have nothing backend-specific to prove."""
    target = tmp_path / "sheriff.db"
    shutil.copy(sqlite_template, target)
    engine = db.open_database(f"sqlite:///{target}")
    yield engine
    engine.dispose()
