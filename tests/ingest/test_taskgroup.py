"""A push's task group as sheriff reads it: in-flight action tasks and what they created."""

from __future__ import annotations

from typing import Any

import jsone
import taskcluster

from sheriff.ci.taskcluster import taskcluster_clients
from sheriff.ingest.taskgroup import list_group
from sheriff.model.actions import select_action
from sheriff.sim.decision import actions_json
from sheriff.sim.scenario import parse_scenario
from sheriff.sim.server import SimServer
from sheriff.sim.tasks import definition
from tests.sim.conftest import ACCESS_TOKEN, CLIENT_ID, tiny_data


def _trigger(sim: SimServer, push: int, name: str, task_id: str | None, input: Any) -> str:
    """Trigger an action as Treeherder does (first of the name matching the task's tags);
    the action task's id."""
    decision = sim.world.pushes[push].decision_task_id
    tags = definition(sim.world, sim.world.tasks[task_id])["tags"] if task_id else None
    action = select_action(actions_json(sim.world, sim.world.pushes[push])["actions"], name, tags)
    assert action is not None
    payload = jsone.render(
        action["hookPayload"], {"taskGroupId": decision, "taskId": task_id, "input": input}
    )
    options = {
        "rootUrl": sim.root_url,
        "credentials": {"clientId": CLIENT_ID, "accessToken": ACCESS_TOKEN},
    }
    answer = taskcluster.Hooks(options).triggerHook(
        action["hookGroupId"], action["hookId"], payload
    )
    return answer["taskId"]


def test_an_unfinished_retrigger_counts_its_runs_to_come() -> None:
    """ACTION_TASK_ID is JSON-encoded in a real action task (`"abc…"`): decoded, the target
    is found and the retrigger's runs are counted before its tasks exist."""
    with SimServer(parse_scenario(tiny_data())) as sim:
        sim.advance(60)
        target = next(
            t for t in sim.world.groups[sim.world.pushes[2].decision_task_id] if t.kind == "test"
        )
        action_task = _trigger(sim, 2, "retrigger", target.task_id, {"times": 3})
        clients = taskcluster_clients(sim.root_url)
        listing = list_group(clients, sim.world.pushes[2].decision_task_id)
        (view,) = [a for a in listing.action_tasks if a.task_id == action_task]
        assert view.target_task_id == target.task_id and view.unresolved
        assert listing.runs_to_come() == {target.label: 3}
        sim.advance(10)  # the action task ran: its tasks exist, nothing more to come
        assert list_group(clients, sim.world.pushes[2].decision_task_id).runs_to_come() == {}


def test_tasks_an_action_created_are_recognised_by_their_tags_or_parent() -> None:
    """Gecko's tags (retrigger-task, backfill-task, …); add-new-jobs tags nothing, so the
    action task that is their parent says what created them."""
    with SimServer(parse_scenario(tiny_data())) as sim:
        sim.advance(60)
        push = sim.world.pushes[3]
        target = next(t for t in sim.world.groups[push.decision_task_id] if t.kind == "test")
        retrigger = _trigger(sim, 3, "retrigger", target.task_id, {"times": 1})
        added = _trigger(sim, 3, "add-new-jobs", None, {"tasks": [target.label], "times": 1})
        sim.advance(10)
        listing = list_group(taskcluster_clients(sim.root_url), push.decision_task_id)
        by_parent: dict[str | None, set[str | None]] = {}
        for job in listing.jobs:
            by_parent.setdefault(job.parent_task_id, set()).add(job.action)
        assert by_parent[retrigger] == {"retrigger-task"}
        assert by_parent[added] == {"add-new-jobs"}
        originals = {j.action for j in listing.jobs if j.parent_task_id == push.decision_task_id}
        assert originals == {None}


def test_the_listing_keeps_the_decision_tasks_definition() -> None:
    """The decision task is a member of its own group: its definition (the scopes the
    actions protocol checks) comes with the listing, not from a `queue.task` call."""
    with SimServer(parse_scenario(tiny_data())) as sim:
        sim.advance(60)
        decision = sim.world.pushes[2].decision_task_id
        listing = list_group(taskcluster_clients(sim.root_url), decision)
        assert listing.decision_task is not None
        assert listing.decision_task["taskGroupId"] == decision
        assert any(s.startswith("assume:repo:") for s in listing.decision_task["scopes"])
