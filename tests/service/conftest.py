"""Real RabbitMQ and PostgreSQL for the service's tests: skipped, saying why, when either
is down, unless CI=true (then they fail: CI never silently loses them)."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest

from tests.conftest import IN_CI

# SHERIFF_TEST_AMQP_URL names another vhost on the same broker: two plays of one scenario
# on one vhost hear each other's Pulse messages (every simulator publishes to the same
# exchanges), so a second session testing on the machine uses a vhost of its own.
AMQP_URL = os.environ.get("SHERIFF_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")


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


def assert_verdicts_of_polling(expected: dict[str, Any], played: dict[str, Any]) -> set[str]:
    """Every case of `sheriff sim run` (`expected`) is in the service's play with its verdict,
    but for a race with a person: a case they classified while sheriff was deciding ends
    `classified` in whichever play decided later. Returns the cases that differ so."""
    outcome = played["outcome"]
    assert outcome.keys() == expected.keys()
    differing = {t for t in expected if expected[t] != outcome[t]}
    assert differing <= set(played["classified_by_a_person"])
    assert all("classified" in (expected[t][1], outcome[t][1]) for t in differing)
    assert played["service"]["actions_sent_twice"] == 0 and played["excess_retriggers"] == 0
    return differing
