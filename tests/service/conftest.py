"""Real RabbitMQ and PostgreSQL for the service's tests: skipped, saying why, when either
is down, unless CI=true (then they fail: CI never silently loses them)."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import IN_CI

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
