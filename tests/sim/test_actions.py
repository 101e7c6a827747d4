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
    # Gecko's .taskcluster.yml: an action task's tags are only its kind (and who it is for);
    # which action it runs is in extra.action.
    assert action["tags"] == {
        "createdForUser": action["tags"]["createdForUser"],
        "kind": "action-callback",
    }
    assert action["extra"]["action"]["name"] == "retrigger"
    assert action["extra"]["action"]["context"]["taskId"] == target.task_id
    assert action["extra"]["action"]["context"]["clientId"] == "sheriff-dev"
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
            definition["tags"]["action"] == "retrigger-task"  # gecko actions/retrigger.py
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
    assert {t.action_tag for t in created} == {"retrigger-multiple-task"}
    new_jobs = _created_by(sim, added["status"]["taskId"])
    assert [t.label for t in new_jobs] == labels[:1]
    assert [t.action_tag for t in new_jobs] == [None]  # add-new-jobs tags nothing


def test_an_unknown_label_fails_the_action_task(sim: SimServer, tc_options: dict[str, Any]) -> None:
    answer = trigger(
        sim, tc_options, "add-new-jobs", None, 1, {"tasks": ["test-nothing/opt-nope"], "times": 1}
    )
    sim.advance(10)
    assert sim.world.tasks[answer["status"]["taskId"]].state == "failed"
    assert _created_by(sim, answer["status"]["taskId"]) == []


def test_confirm_failures_runs_each_failing_test_in_a_cf_task(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    target = _failed_test(sim, 2)
    answer = trigger(sim, tc_options, "confirm-failures", target, 2, {})
    sim.advance(10)
    created = _created_by(sim, answer["status"]["taskId"])
    failing = sorted({f.test for f in target.runs[-1].outcome.failures})
    assert len(created) == len(failing)
    queue = taskcluster.Queue(tc_options)
    confirmed = set()
    for task in created:
        definition = queue.task(task.task_id)
        assert definition["metadata"]["name"] == f"{target.label}-cf"
        assert definition["tags"]["action"] == "confirm-failure"  # gecko confirm_failure.py
        env = definition["payload"]["env"]
        ((suite, groups),) = json.loads(env["MOZHARNESS_TEST_PATHS"]).items()
        ((confirm_suite, tests),) = json.loads(env["MOZHARNESS_CONFIRM_PATHS"]).items()
        assert suite == confirm_suite == sim.world.scenario.suites[target.spec.suite].name
        assert groups == [sim.world.catalog.test_manifest[tests[0]]]
        confirmed.update(tests)
    assert sorted(confirmed) == failing


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
    queue = taskcluster.Queue(tc_options)
    original = queue.task(target.task_id)
    for action_task in backfill_tasks:
        # input_for_support_action: the original's MOZHARNESS_TEST_PATHS, decoded
        env = queue.task(action_task.task_id)["payload"]["env"]
        support = json.loads(env["ACTION_INPUT"])
        assert support["test_manifests"] == json.loads(
            original["payload"]["env"]["MOZHARNESS_TEST_PATHS"]
        )
        assert support["revision"] == target.push.revision
    sim.advance(10)
    for action_task in backfill_tasks:
        (created,) = _created_by(sim, action_task.task_id)
        definition = queue.task(created.task_id)
        assert definition["taskGroupId"] == action_task.push.decision_task_id
        assert definition["metadata"]["name"] == target.label
        assert definition["tags"]["action"] == "backfill-task"
        assert definition["extra"]["parent"] == action_task.task_id
        th = definition["extra"]["treeherder"]
        assert th["symbol"].endswith(f"-{target.push.revision[:11]}-bk")
        assert th["groupSymbol"].endswith("-bk")
        paths = json.loads(definition["payload"]["env"]["MOZHARNESS_TEST_PATHS"])
        assert next(iter(paths.values())) == list(target.manifests)
    assert sim.world.tasks[answer["taskId"]].state == "completed"


def _backfill_task(sim: SimServer, options: dict[str, Any], label: str, **input: Any) -> list[Task]:
    answer = trigger(sim, options, "backfill-task", None, 2, {"label": label, **input})
    sim.advance(10)
    return _created_by(sim, answer["status"]["taskId"])


def test_backfill_task_with_the_suites_object_runs_exactly_those(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    target = _failed_test(sim, 4)
    suite = sim.world.scenario.suites[target.spec.suite].name
    wanted = {suite: list(target.manifests[:1])}
    created = _backfill_task(
        sim, tc_options, target.label, revision=target.push.revision, test_manifests=wanted, times=2
    )
    assert len(created) == 2 and all(t.manifests == tuple(wanted[suite]) for t in created)
    assert all(t.push.index == 2 and t.action_tag == "backfill-task" for t in created)


def test_backfill_task_with_a_list_runs_the_suites_default_tests(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    """Gecko writes test_manifests to MOZHARNESS_TEST_PATHS unchanged; mozharness looks the
    suite up in it, finds none in a list and runs what the label runs on that push."""
    target = _failed_test(sim, 4)
    wanted = list(target.manifests[:1])
    (created,) = _backfill_task(
        sim, tc_options, target.label, revision=target.push.revision, test_manifests=wanted
    )
    assert created.manifests == sim.world.pushes[2].graph[target.label].manifests
    definition = taskcluster.Queue(tc_options).task(created.task_id)
    assert json.loads(definition["payload"]["env"]["MOZHARNESS_TEST_PATHS"]) == wanted
    other_suite = _backfill_task(
        sim, tc_options, target.label, test_manifests={"no-such-suite": wanted}
    )
    assert [t.manifests for t in other_suite] == [created.manifests]


def test_backfill_task_of_a_missing_chunk_takes_chunk_one(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    label = next(lb for lb in sim.world.pushes[2].graph if lb.endswith("-1"))
    (created,) = _backfill_task(sim, tc_options, label[:-1] + "99")
    assert created.label == label  # backfill.new_label
    assert created.action_tag is None  # no test_manifests: backfill_modifier tags nothing


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


def test_backfill_actions_use_the_backfill_hook(sim: SimServer, tc_options: dict[str, Any]) -> None:
    """gecko registry.py: hookId in-tree-action-<level>-<permission>/<hash>; backfill and
    backfill-task have the `backfill` permission, and an action task run through another
    permission's hook fails (sanity_check_task_scope)."""
    from sheriff.sim.decision import HOOK_GROUP_ID, actions_json, hook_id

    world = sim.world
    push = world.pushes[2]
    by_name = {a["name"]: a for a in reversed(actions_json(world, push)["actions"])}
    for name in ("backfill", "backfill-task"):
        assert by_name[name]["hookId"] == hook_id(world, "backfill")
        assert by_name[name]["extra"] == {"actionPerm": "backfill"}
    for name in ("retrigger", "retrigger-multiple", "add-new-jobs", "confirm-failures"):
        assert by_name[name]["hookId"] == hook_id(world, "generic")
    label = next(iter(push.graph))
    payload = jsone.render(
        by_name["backfill-task"]["hookPayload"],
        {"taskGroupId": push.decision_task_id, "taskId": None, "input": {"label": label}},
    )
    hooks = taskcluster.Hooks(tc_options)
    wrong = hooks.triggerHook(HOOK_GROUP_ID, hook_id(world, "generic"), payload)["taskId"]
    right = hooks.triggerHook(HOOK_GROUP_ID, hook_id(world, "backfill"), payload)["taskId"]
    scopes = taskcluster.Queue(tc_options).task(right)["scopes"]
    assert scopes == ["assume:repo:hg.mozilla.org/integration/autoland:action:backfill"]
    sim.advance(10)
    assert world.tasks[wrong].state == "failed"
    assert world.tasks[right].state == "completed"


def test_retrigger_refuses_a_label_that_should_not_be_retriggered(
    tc_options: dict[str, Any],
) -> None:
    """gecko retrigger.py: without the retrigger attribute, `retrigger` (its disabled
    variant) exits 1 unless forced, and `retrigger-multiple` reruns the failed task."""
    from sheriff.sim.scenario import parse_scenario
    from tests.sim.conftest import tiny_data

    data = tiny_data()
    for suite in data["suites"]:
        suite["retriggerable"] = False
    with SimServer(parse_scenario(data)) as sim:
        sim.advance(120)
        options = {**tc_options, "rootUrl": sim.root_url}
        target = _failed_test(sim, 3)
        assert "retrigger" not in taskcluster.Queue(options).task(target.task_id)["tags"]
        refused = trigger(sim, options, "retrigger", target, 3, {"times": 2})["taskId"]
        forced = trigger(sim, options, "retrigger", target, 3, {"times": 1, "force": True})
        runs = len(target.runs)
        multiple = trigger(
            sim, options, "retrigger-multiple", None, 3, {"requests": [{"tasks": [target.label]}]}
        )
        sim.advance(10)
        assert sim.world.tasks[refused].state == "failed" and not _created_by(sim, refused)
        assert len(_created_by(sim, forced["taskId"])) == 1
        assert not _created_by(sim, multiple["taskId"])  # no clone: a rerun
        assert len(target.runs) == runs + 1 and target.runs[-1].reason_created == "rerun"


def test_trigger_hook_needs_a_valid_signature_and_the_scope(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    push = sim.world.pushes[1]
    from sheriff.sim.decision import HOOK_GROUP_ID, hook_id

    hook = hook_id(sim.world, "generic")
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
    assert "in-tree:hook-action:project-gecko/in-tree-action-3-*" in decision["scopes"]
    current = auth.currentScopes()["scopes"]
    # Both hooks' permissions: generic (retrigger, …) and backfill (backfill, backfill-task).
    assert "hooks:trigger-hook:project-gecko/in-tree-action-3-generic/*" in current
    assert "hooks:trigger-hook:project-gecko/in-tree-action-3-backfill/*" in current
