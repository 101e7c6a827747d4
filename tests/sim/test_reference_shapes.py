"""The simulator's task definitions and Pulse messages carry every field the real ones do."""

from __future__ import annotations

import json
from pathlib import Path

from sheriff.sim import tasks as taskdefs
from sheriff.sim.pulse import message
from sheriff.sim.scenario import Scenario
from sheriff.sim.world import World


def _real_test_tasks(reference: Path) -> list[dict]:
    tasks = json.loads((reference / "treeherder/pulse/taskcluster_tasks.json").read_text())
    return [t for t in tasks.values() if t.get("tags", {}).get("kind") == "test"]


def test_test_task_definitions_have_the_real_fields(reference: Path, tiny: Scenario) -> None:
    world = World(tiny)
    world.advance(30)
    ours = taskdefs.definition(world, next(t for t in world.tasks.values() if t.kind == "test"))
    for real in _real_test_tasks(reference):
        assert set(real) <= set(ours)
        assert set(real["extra"]) <= set(ours["extra"])
        assert set(real["extra"]["treeherder"]) <= set(ours["extra"]["treeherder"])
        assert set(real["tags"]) <= set(ours["tags"])
        assert set(real["metadata"]) <= set(ours["metadata"])
        for key in ("chunks", "treeherder-platform", "suite"):
            assert type(real["extra"][key]) is type(ours["extra"][key])
    assert ours["taskQueueId"] == f"{ours['provisionerId']}/{ours['workerType']}"


def test_pulse_messages_have_the_real_fields(reference: Path, tiny: Scenario) -> None:
    real = json.loads((reference / "treeherder/pulse/taskcluster_pulse_messages.json").read_text())
    sent: list[tuple[str, dict, list[str]]] = []

    def listen(world: World, exchange: str, task, run) -> None:  # type: ignore[no-untyped-def]
        payload, routes = message(world, exchange, task, run)
        sent.append((exchange, payload, routes))

    world = World(tiny, listeners=[listen])
    world.advance(90)
    ours = {exchange: (payload, routes) for exchange, payload, routes in sent}
    for item in real.values():
        exchange = item["exchange"].rsplit("/", 1)[-1]
        payload, routes = ours[exchange]
        assert set(item["payload"]) <= set(payload)
        assert set(item["payload"]["status"]) <= set(payload["status"])
        assert set(item["payload"]["status"]["runs"][-1]) <= set(payload["status"]["runs"][-1])
        assert len(routes[0].split(".")) == len(item["routes"].split("."))
