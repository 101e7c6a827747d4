"""The in-tree action hook: triggered tasks, and what each Gecko callback creates when it runs."""

from __future__ import annotations

import json
from typing import Any

import jsone

from sheriff.sim import draws
from sheriff.sim.decision import HOOK_GROUP_ID, action_schema, hook_id
from sheriff.sim.entities import Push, Task
from sheriff.sim.world import World, WorldError

# The hook's task template, modelled on ci-configuration's in-tree action hooks: the
# hooks service renders it with {payload, firedBy, taskId, now}.
HOOK_TEMPLATE: dict[str, Any] = {
    "$let": {
        "action": {"$eval": "payload.decision.action"},
        "push": {"$eval": "payload.decision.push"},
        "repository": {"$eval": "payload.decision.repository"},
        "user": {"$eval": "payload.user"},
    },
    "in": {
        "provisionerId": "gecko-3",
        "workerType": "decision-gcp",
        "taskQueueId": "gecko-3/decision-gcp",
        "schedulerId": "gecko-level-3",
        "projectId": "none",
        "taskGroupId": {"$eval": "action.taskGroupId"},
        "dependencies": [],
        "requires": "all-completed",
        "routes": [
            "tc-treeherder.v2.${repository.project}.${push.revision}.${push.pushlog_id}",
            "checks",
        ],
        "priority": "very-high",
        "retries": 5,
        "created": {"$fromNow": ""},
        "deadline": {"$fromNow": "1 day"},
        "expires": {"$fromNow": "1 year"},
        "scopes": ["assume:repo:${repository.url[8:]}:action:generic"],
        "payload": {
            "env": {
                "GECKO_BASE_REPOSITORY": "https://hg.mozilla.org/mozilla-unified",
                "GECKO_HEAD_REPOSITORY": "${repository.url}",
                "GECKO_HEAD_REV": "${push.revision}",
                "ACTION_TASK_GROUP_ID": "${user.taskGroupId}",
                "ACTION_TASK_ID": {"$json": {"$eval": "user.taskId"}},
                "ACTION_INPUT": {"$json": {"$eval": "user.input"}},
                "ACTION_CALLBACK": "${action.cb_name}",
                "ACTION_PERM": "generic",
                "MOZ_SCM_LEVEL": "${repository.level}",
            },
            "command": [
                "/builds/worker/bin/run-task",
                "--",
                "bash",
                "-cx",
                "./mach taskgraph action-callback",
            ],
            "maxRunTime": 1800,
            "artifacts": {"public": {"path": "/builds/worker/artifacts", "type": "directory"}},
        },
        "metadata": {
            "name": "Action: ${action.title}",
            "description": "${action.description}",
            "owner": "${push.owner}",
            "source": "${repository.url}/raw-file/${push.revision}/.taskcluster.yml",
        },
        "tags": {
            "createdForUser": "${push.owner}",
            "kind": "action-callback",
            "action": "${action.cb_name}",
        },
        "extra": {
            "treeherder": {
                "collection": {"opt": True},
                "groupName": "action-callback",
                "groupSymbol": "AC",
                "jobKind": "other",
                "machine": {"platform": "gecko-decision"},
                "symbol": "${action.symbol}",
                "tier": 1,
            },
            "treeherder-platform": "gecko-decision/opt",
            "parent": {"$eval": "action.taskGroupId"},
            "action": {
                "name": "${action.name}",
                "context": {
                    "taskGroupId": "${user.taskGroupId}",
                    "taskId": {"$eval": "user.taskId"},
                    "input": {"$eval": "user.input"},
                },
            },
            "tasks_for": "action",
        },
    },
}


def trigger_hook(world: World, hook_group: str, hook: str, payload: Any) -> Task:
    """Render the hook's task as the hooks service does and create it (pending)."""
    with world.lock:
        if hook_group != HOOK_GROUP_ID or hook != hook_id(world):
            raise HookNotFound(f"hook {hook_group}/{hook} does not exist")
        task = _create_action_task(world, payload)
        world.hook_triggered.append(task.task_id)
        return task


class HookNotFound(WorldError):
    """No hook with that id."""


class HookPayloadError(WorldError):
    """The payload does not render into a task."""


def _create_action_task(world: World, payload: Any) -> Task:
    try:
        group = payload["decision"]["action"]["taskGroupId"]
        callback = payload["decision"]["action"]["cb_name"]
    except (KeyError, TypeError):
        raise HookPayloadError("payload lacks decision.action.taskGroupId / cb_name") from None
    decision = world.tasks.get(group)
    if decision is None or decision.kind != "decision-task":
        raise HookPayloadError(f"payload names task group {group}, which is no decision task")
    task_id = draws.slug(world.seed, "action-task", world.action_tasks_created, callback)
    context = {
        "payload": payload,
        "firedBy": "triggerHook",
        "taskId": task_id,
        "now": world.iso(world.minutes),
    }
    try:
        rendered = jsone.render(HOOK_TEMPLATE, context)
    except jsone.JSONTemplateError as exc:
        raise HookPayloadError(f"hook template: {exc}") from None
    task = Task(
        task_id=task_id,
        kind="action-callback",
        push=decision.push,
        label=rendered["metadata"]["name"],
        created=world.minutes,
        parent=group,
        action=callback,
        action_info=rendered,
    )
    world.add_action_task(decision.push, task)
    return task


def run_action_callback(world: World, action_task: Task) -> bool:
    """Do what the action task's callback asks; False makes the action task fail."""
    assert action_task.action_info is not None
    env = action_task.action_info["payload"]["env"]
    callback = env["ACTION_CALLBACK"]
    try:
        action_input = json.loads(env["ACTION_INPUT"]) or {}
        target_id = json.loads(env["ACTION_TASK_ID"])
    except ValueError:
        return False
    handler = _CALLBACKS.get(callback)
    if handler is None or not isinstance(action_input, dict):
        return False
    target = world.tasks.get(target_id) if isinstance(target_id, str) else None
    # Like Gecko's action task, the input is not checked against the schema here (the real
    # retrigger-multiple schema would reject every request); a wrong type fails the task.
    try:
        return handler(
            world, action_task, target, _with_defaults(action_input, action_schema(callback))
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False


def _with_defaults(action_input: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(action_input)
    for key, spec in schema.get("properties", {}).items():
        if isinstance(spec, dict) and "default" in spec:
            out.setdefault(key, spec["default"])
    return out


def _retrigger(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    if target is None or target.kind != "test":
        return False
    spec = target.push.graph.get(target.label)
    if spec is None:
        return False
    for _ in range(inp["times"]):
        world.create_test_task(target.push, spec, parent=action.task_id, action="retrigger")
    return True


def _create_labels(
    world: World, action: Task, push: Push, labels: list[str], times: int, name: str
) -> bool:
    specs = [push.graph.get(label) for label in labels]
    if any(spec is None for spec in specs):
        return False  # Gecko's callback raises on a label outside the full task graph
    for spec in specs:
        assert spec is not None
        for _ in range(times):
            world.create_test_task(push, spec, parent=action.task_id, action=name)
    return True


def _retrigger_multiple(
    world: World, action: Task, target: Task | None, inp: dict[str, Any]
) -> bool:
    ok = True
    for request in inp.get("requests", []):
        times = request.get("times", 1)
        ok &= _create_labels(
            world, action, action.push, request.get("tasks", []), times, "retrigger-multiple"
        )
    return ok


def _add_new_jobs(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    return _create_labels(
        world, action, action.push, inp.get("tasks", []), inp["times"], "add-new-jobs"
    )


def _confirm_failures(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    if target is None or target.kind != "test" or target.spec is None or not target.runs:
        return False
    failing = {f.test for f in target.runs[-1].outcome.failures}
    manifests = tuple(sorted({world.catalog.test_manifest[t] for t in failing}))
    if not manifests:
        return True  # nothing failed: Gecko's callback schedules nothing
    for _ in range(inp["times"]):
        world.create_test_task(
            target.push,
            target.spec,
            parent=action.task_id,
            action="confirm-failures",
            manifests=manifests,
            symbol_suffix="-cf",
        )
    return True


def _backfill(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    if target is None or target.kind != "test" or target.spec is None:
        return False
    index = target.push.index
    first = index if inp["inclusive"] else index - 1
    manifests = [inp["testPath"]] if inp.get("testPath") else list(target.manifests)
    suite = world.scenario.suites[target.spec.suite]
    symbol = f"{suite.symbol}{target.spec.chunk}" if suite.chunks > 1 else (suite.symbol or "1")
    for i in range(first, max(-1, index - inp["depth"] - 1), -1):
        push = world.pushes[i]
        payload = _payload_for(world, push, "backfill-task")
        payload["user"] = {
            "input": {
                "label": target.label,
                "revision": target.push.revision,
                "symbol": symbol,
                "test_manifests": manifests,
                "times": inp["times"],
                "retrigger": True,
            },
            "taskGroupId": push.decision_task_id,
            "taskId": None,
        }
        _create_action_task(world, payload)
    return True


def _backfill_task(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    push = action.push
    spec = push.graph.get(inp["label"])
    if spec is None:
        return True  # the label does not exist on this push: nothing to backfill here
    if not inp["retrigger"] and push.label_copies.get(spec.label):
        return True
    manifests = tuple(inp["test_manifests"]) or spec.manifests
    suffix = "-bk"
    if inp["test_manifests"]:
        suffix = f"-{draws.hexid(world.seed, 11, *manifests)}-bk"
    for _ in range(inp["times"]):
        world.create_test_task(
            push,
            spec,
            parent=action.task_id,
            action="backfill-task",
            manifests=manifests,
            symbol_suffix=suffix,
            group_suffix="-bk",
        )
    return True


def _payload_for(world: World, push: Push, callback: str) -> dict[str, Any]:
    from sheriff.sim.decision import actions_json

    for entry in actions_json(world, push)["actions"]:
        if entry["hookPayload"]["decision"]["action"]["cb_name"] == callback:
            return json.loads(json.dumps(entry["hookPayload"]))
    raise WorldError(f"no action {callback}")


_CALLBACKS = {
    "retrigger": _retrigger,
    "retrigger-multiple": _retrigger_multiple,
    "add-new-jobs": _add_new_jobs,
    "confirm-failures": _confirm_failures,
    "backfill": _backfill,
    "backfill-task": _backfill_task,
}
