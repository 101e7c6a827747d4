"""Hooks, scopes and every Gecko action creating the right tasks."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsone
import pytest
import taskcluster

from sheriff.sim.entities import Task
from sheriff.sim.server import SimServer


def _matches(context: list[dict[str, str]], tags: dict[str, str]) -> bool:
    return any(all(tags.get(k) == v for k, v in tag_set.items()) for tag_set in context)


def trigger(
    sim: SimServer, options: dict[str, Any], name: str, task: Task | None, push: int, inp: Any
) -> dict:
    """Trigger an action the way a Treeherder-like client does, returning the hook's answer."""
    queue = taskcluster.Queue(options)
    decision_id = sim.world.pushes[push].decision_task_id
    actions = httpx.get(queue.getLatestArtifact(decision_id, "public/actions.json")["url"]).json()
    tags = queue.task(task.task_id)["tags"] if task else None
    action = next(
        a
        for a in actions["actions"]
        if a["name"] == name and (_matches(a["context"], tags) if tags else a["context"] == [])
    )
    payload = jsone.render(
        action["hookPayload"],
        {
            "taskGroupId": decision_id,
            "taskId": task.task_id if task else None,
            "input": inp,
            **actions["variables"],
        },
    )
    return taskcluster.Hooks(options).triggerHook(action["hookGroupId"], action["hookId"], payload)


def _created_by(sim: SimServer, action_task_id: str) -> list[Task]:
    return [t for t in sim.world.tasks.values() if t.parent == action_task_id and t.kind == "test"]


def _failed_test(sim: SimServer, push: int) -> Task:
    return next(
        t
        for t in sim.world.groups[sim.world.pushes[push].decision_task_id]
        if t.kind == "test" and t.state == "failed" and t.runs[-1].outcome.failures
    )


def test_retrigger_creates_tasks_only_when_the_action_task_completes(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    target = _failed_test(sim, 3)
    answer = trigger(sim, tc_options, "retrigger", target, 3, {"times": 2})
    assert answer == {"taskId": answer["taskId"], "status": {"taskId": answer["taskId"]}}
    action_id = answer["taskId"]
    queue = taskcluster.Queue(tc_options)
    status = queue.status(action_id)["status"]
    assert status["state"] == "pending" and status["taskGroupId"] == target.push.decision_task_id
    action = queue.task(action_id)
    assert action["tags"]["kind"] == "action-callback" and action["tags"]["action"] == "retrigger"
    env = action["payload"]["env"]
    assert (
        env["ACTION_CALLBACK"] == "retrigger"
        and json.loads(env["ACTION_TASK_ID"]) == target.task_id
    )
    assert json.loads(env["ACTION_INPUT"]) == {"times": 2}
    assert env["ACTION_TASK_GROUP_ID"] == target.push.decision_task_id
    assert _created_by(sim, action_id) == []  # the action task has not run yet
    sim.advance(10)
    assert queue.status(action_id)["status"]["state"] == "completed"
    created = _created_by(sim, action_id)
    assert len(created) == 2
    for task in created:
        definition = queue.task(task.task_id)
        assert definition["metadata"]["name"] == target.label
        assert definition["taskGroupId"] == target.push.decision_task_id
        assert (
            definition["tags"]["action"] == "retrigger"
            and definition["extra"]["parent"] == action_id
        )
    counts = {(c["push_index"], c["label"]): c for c in sim.truth()["action_tasks"]}
    assert counts[(3, target.label)]["tasks"] == 2
    assert counts[(3, target.label)]["by_action"] == {"retrigger": 2}


def test_retrigger_multiple_and_add_new_jobs_are_push_level(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    push = sim.world.pushes[4]
    labels = sorted(push.graph)[:2]
    answer = trigger(
        sim,
        tc_options,
        "retrigger-multiple",
        None,
        4,
        {"requests": [{"tasks": labels, "times": 2}]},
    )
    added = trigger(sim, tc_options, "add-new-jobs", None, 4, {"tasks": labels[:1], "times": 1})
    sim.advance(10)
    created = _created_by(sim, answer["status"]["taskId"])
    assert sorted(t.label for t in created) == sorted(labels * 2)
    assert {t.action for t in created} == {"retrigger-multiple"}
    assert [t.label for t in _created_by(sim, added["status"]["taskId"])] == labels[:1]


def test_an_unknown_label_fails_the_action_task(sim: SimServer, tc_options: dict[str, Any]) -> None:
    answer = trigger(
        sim, tc_options, "add-new-jobs", None, 1, {"tasks": ["test-nothing/opt-nope"], "times": 1}
    )
    sim.advance(10)
    assert sim.world.tasks[answer["status"]["taskId"]].state == "failed"
    assert _created_by(sim, answer["status"]["taskId"]) == []


def test_confirm_failures_runs_the_failing_manifests(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    target = _failed_test(sim, 2)
    answer = trigger(sim, tc_options, "confirm-failures", target, 2, {"times": 1})
    sim.advance(10)
    (created,) = _created_by(sim, answer["status"]["taskId"])
    env = taskcluster.Queue(tc_options).task(created.task_id)["payload"]["env"]
    manifests = set(json.loads(env["MOZHARNESS_TEST_PATHS"]).popitem()[1])
    failing = {sim.world.catalog.test_manifest[f.test] for f in target.runs[-1].outcome.failures}
    assert manifests == failing


def test_backfill_runs_the_label_with_its_manifests_on_earlier_pushes(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    target = _failed_test(sim, 4)
    answer = trigger(sim, tc_options, "backfill", target, 4, {"depth": 3, "times": 1})
    sim.advance(6)  # backfill action task done: it triggered one backfill-task per earlier push
    world = sim.world
    backfill_tasks = [
        t
        for t in world.tasks.values()
        if t.kind == "action-callback" and t.action == "backfill-task"
    ]
    assert sorted(t.push.index for t in backfill_tasks) == [1, 2, 3]
    sim.advance(10)
    queue = taskcluster.Queue(tc_options)
    for action_task in backfill_tasks:
        (created,) = _created_by(sim, action_task.task_id)
        definition = queue.task(created.task_id)
        assert definition["taskGroupId"] == action_task.push.decision_task_id
        assert definition["metadata"]["name"] == target.label
        assert definition["tags"]["action"] == "backfill-task"
        assert definition["extra"]["parent"] == action_task.task_id
        paths = json.loads(definition["payload"]["env"]["MOZHARNESS_TEST_PATHS"])
        assert next(iter(paths.values())) == list(target.manifests)
    assert sim.world.tasks[answer["taskId"]].state == "completed"


def test_backfill_task_with_test_manifests_runs_exactly_those(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    target = _failed_test(sim, 4)
    wanted = list(target.manifests[:1])
    answer = trigger(
        sim,
        tc_options,
        "backfill-task",
        None,
        2,
        {
            "label": target.label,
            "revision": target.push.revision,
            "symbol": "x",
            "test_manifests": wanted,
            "times": 2,
        },
    )
    sim.advance(10)
    created = _created_by(sim, answer["status"]["taskId"])
    assert len(created) == 2 and all(t.manifests == tuple(wanted) for t in created)
    assert all(t.push.index == 2 for t in created)


def test_without_test_manifests_a_label_runs_what_it_has_on_that_push(tiny: Any) -> None:
    from sheriff.sim.scenario import parse_scenario
    from tests.sim.conftest import tiny_data

    scenario = parse_scenario(tiny_data(dynamic_chunking=True))
    with SimServer(scenario) as sim:
        sim.advance(100)
        label = next(iter(sim.world.pushes[4].graph))
        assert (
            sim.world.pushes[4].graph[label].manifests != sim.world.pushes[1].graph[label].manifests
        )
        options = {
            "rootUrl": sim.root_url,
            "credentials": {"clientId": "sheriff-dev", "accessToken": "sheriff-dev-token"},
        }
        answer = trigger(sim, options, "backfill-task", None, 1, {"label": label, "times": 1})
        sim.advance(10)
        (created,) = _created_by(sim, answer["status"]["taskId"])
        assert created.manifests == sim.world.pushes[1].graph[label].manifests


def test_trigger_hook_needs_a_valid_signature_and_the_scope(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    push = sim.world.pushes[1]
    from sheriff.sim.decision import HOOK_GROUP_ID, hook_id

    hook = hook_id(sim.world)
    from sheriff.sim.decision import actions_json

    action = next(
        a for a in actions_json(sim.world, push)["actions"] if a["name"] == "add-new-jobs"
    )
    context = {"taskGroupId": push.decision_task_id, "taskId": None, "input": {"tasks": []}}
    payload = jsone.render(action["hookPayload"], context)
    unsigned = taskcluster.Hooks({"rootUrl": sim.root_url})
    with pytest.raises(taskcluster.TaskclusterRestFailure) as info:
        unsigned.triggerHook(HOOK_GROUP_ID, hook, payload)
    assert info.value.status_code == 403 and info.value.body["code"] == "InsufficientScopes"
    wrong = taskcluster.Hooks(
        {
            "rootUrl": sim.root_url,
            "credentials": {"clientId": "sheriff-dev", "accessToken": "wrong"},
        }
    )
    with pytest.raises(taskcluster.TaskclusterAuthFailure) as info:
        wrong.triggerHook(HOOK_GROUP_ID, hook, payload)
    assert info.value.status_code == 401 and set(info.value.body) == {
        "code",
        "message",
        "requestInfo",
    }
    with SimServer(
        sim.world.scenario, clients={"reader": ("reader-token", ["queue:get-artifact:*"])}
    ) as other:
        reader = taskcluster.Hooks(
            {
                "rootUrl": other.root_url,
                "credentials": {"clientId": "reader", "accessToken": "reader-token"},
            }
        )
        with pytest.raises(taskcluster.TaskclusterRestFailure) as info:
            reader.triggerHook(HOOK_GROUP_ID, hook, payload)
        assert info.value.status_code == 403
    answer = taskcluster.Hooks(tc_options).triggerHook(HOOK_GROUP_ID, hook, payload)
    assert sim.world.tasks[answer["taskId"]].state == "pending"


def test_scopes_expand_to_the_in_tree_action_scope(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    auth = taskcluster.Auth(tc_options)
    decision = taskcluster.Queue(tc_options).task(sim.world.pushes[0].decision_task_id)
    expanded = auth.expandScopes({"scopes": decision["scopes"]})["scopes"]
    assert "in-tree:hook-action:project-gecko/in-tree-action-3-*" in expanded
    current = auth.currentScopes()["scopes"]
    assert "hooks:trigger-hook:project-gecko/in-tree-action-3-*" in current
