"""Real RabbitMQ and PostgreSQL for the service's tests: skipped, saying why, when either
is down, unless CI=true (then they fail: CI never silently loses them)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.conftest import IN_CI, POSTGRES_URL

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"


def _rabbitmq_unavailable() -> str | None:
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError as exc:
        return f"RabbitMQ not reachable on 127.0.0.1:5672: {exc.strerror}"
    return None


@pytest.fixture
def amqp_url() -> str:
    reason = _rabbitmq_unavailable()
    if reason:
        if IN_CI:
            pytest.fail(f"{reason} (CI=true: RabbitMQ tests must run)")
        pytest.skip(reason)
    return AMQP_URL


@pytest.fixture
def empty_postgres(postgres_server_url: str) -> Iterator[str]:
    """A database of its own, empty (the service's processes migrate it on first use)."""
    name = f"sheriff_service_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
