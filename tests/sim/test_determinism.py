"""Same scenario and seed: byte-identical listings, whatever clients ask meanwhile."""

from __future__ import annotations

import httpx

from sheriff.sim.scenario import Scenario, parse_scenario
from sheriff.sim.server import SimServer
from tests.sim.conftest import tiny_data


def _listings(sim: SimServer) -> list[bytes]:
    out = []
    with httpx.Client(base_url=sim.root_url) as client:
        for push in sim.world.pushes:
            out.append(client.get(f"/api/queue/v1/task-group/{push.decision_task_id}/list").content)
        out.append(client.get("/api/project/autoland/push/", params={"count": 100}).content)
    return out


def test_same_seed_same_bytes(tiny: Scenario) -> None:
    with SimServer(tiny) as first:
        first.advance(120)
        one = _listings(first)
        truth = first.truth()
    with SimServer(tiny) as second:
        for _ in range(12):  # the same time, in different steps
            second.advance(10)
        assert _listings(second) == one
        assert second.truth() == truth


def test_another_seed_another_history(tiny: Scenario) -> None:
    other = parse_scenario(tiny_data(seed=12))
    with SimServer(tiny) as first, SimServer(other) as second:
        first.advance(120)
        second.advance(120)
        assert _listings(first) != _listings(second)


def test_client_requests_do_not_change_later_outcomes(tiny: Scenario) -> None:
    """Retriggers on one push leave every original task's outcome as it was."""

    def originals(sim: SimServer) -> dict[str, tuple[str, float | None]]:
        return {
            t.task_id: (t.state, t.runs[-1].resolved)
            for t in sim.world.tasks.values()
            if t.kind == "test" and t.action is None
        }

    with SimServer(tiny) as quiet:
        quiet.advance(200)
        expected = originals(quiet)
    with SimServer(tiny) as busy:
        busy.advance(40)
        from sheriff.sim.actions import trigger_hook
        from sheriff.sim.decision import HOOK_GROUP_ID, actions_json, hook_id

        push = busy.world.pushes[1]
        action = next(
            a for a in actions_json(busy.world, push)["actions"] if a["name"] == "add-new-jobs"
        )
        payload = dict(action["hookPayload"])
        payload["user"] = {
            "input": {"tasks": sorted(push.graph)[:3], "times": 3},
            "taskGroupId": push.decision_task_id,
            "taskId": None,
        }
        trigger_hook(busy.world, HOOK_GROUP_ID, hook_id(busy.world), payload)
        with httpx.Client(base_url=busy.root_url) as client:
            for task_id in list(busy.world.tasks)[:20]:
                client.get(f"/api/queue/v1/task/{task_id}/status")
        busy.advance(160)
        assert len(busy.world.tasks) > len(quiet.world.tasks)
        assert originals(busy) == expected


def test_task_ids_are_valid_slugids(tiny: Scenario) -> None:
    import re

    from sheriff.sim.world import World

    # The Queue's taskId pattern (a v4 UUID in url-safe base64, "nice": no leading '-').
    pattern = re.compile(
        r"^[A-Za-z0-9_][A-Za-z0-9_-]{7}[Q-T][A-Za-z0-9_-][CGKOSWaeimquy26-][A-Za-z0-9_-]{10}[AQgw]$"
    )
    world = World(tiny)
    world.advance(120)
    assert all(pattern.match(task_id) for task_id in world.tasks)
