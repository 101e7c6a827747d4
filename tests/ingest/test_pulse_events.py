"""Pulse messages into events: what the service stores and which pushes it passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sheriff.ingest.pulse import event_of, push_of
from sheriff.model.job import TaskShapeError
from sheriff.sim import pulse
from sheriff.sim.scenario import load_scenario
from sheriff.sim.world import World

TINY = Path(__file__).parent.parent / "triage" / "tiny.yaml"


@pytest.fixture(scope="module")
def messages() -> list[tuple[str, dict, list[str]]]:
    """Every resolved-run message of tiny.yaml's first hours, as the simulator publishes."""
    found: list[tuple[str, dict, list[str]]] = []

    def listener(world, exchange, task, run) -> None:  # type: ignore[no-untyped-def]
        payload, routes = pulse.message(world, exchange, task, run)
        found.append((pulse.EXCHANGE_PREFIX + exchange, json.loads(json.dumps(payload)), routes))

    World(load_scenario(TINY), listeners=[listener]).advance(180)
    return found


def _resolved(messages):  # type: ignore[no-untyped-def]
    return [m for m in messages if m[0].rsplit("-", 1)[-1] in ("completed", "failed", "exception")]


def test_resolved_messages_become_events_of_their_push(messages) -> None:
    events = [event_of(x, p, routes[1:]) for x, p, routes in _resolved(messages)]
    assert events and {e.repo for e in events} == {"autoland"}
    assert {e.state for e in events} >= {"completed", "failed"}
    failed = [e for e in events if e.state == "failed" and e.kind == "test"]
    assert failed and all(e.failed and e.label and e.updates for e in failed)
    for e in events:
        assert all(u.task_id == e.task_id for u in e.updates)


def test_an_exception_the_queue_reruns_is_not_a_failure_nor_stored_alone(messages) -> None:
    retried = [
        event_of(x, p, routes[1:])
        for x, p, routes in _resolved(messages)
        if x.endswith("task-exception") and p["status"]["retriesLeft"] > 0
    ]
    assert retried, "tiny.yaml's infra failures give exceptions the queue retries"
    assert all(e.retried and not e.failed and e.updates == () for e in retried)


def test_pending_and_running_and_garbage_are_refused(messages) -> None:
    exchange, payload, routes = next(m for m in messages if m[0].endswith("task-pending"))
    with pytest.raises(TaskShapeError):
        event_of(exchange, payload, routes[1:])
    exchange, payload, routes = _resolved(messages)[0]
    with pytest.raises(TaskShapeError, match="tc-treeherder"):
        event_of(exchange, payload, ["route.checks"])
    with pytest.raises(TaskShapeError):
        event_of(exchange, {"runId": 9, "status": payload["status"]}, routes[1:])
    with pytest.raises(TaskShapeError):
        event_of(exchange, "not an object", routes[1:])


def test_the_push_is_read_from_the_treeherder_route() -> None:
    assert push_of(["route.checks", "route.tc-treeherder.v2.autoland.abc123.45"]) == (
        "autoland",
        "abc123",
    )
    assert push_of(["route.tc-treeherder.v2.autoland"]) is None
    assert push_of([]) is None
