"""The in-tree action hook: triggered tasks, and what each Gecko callback creates when it runs."""

from __future__ import annotations

import json
import re
from typing import Any

import jsone

from sheriff.sim import draws
from sheriff.sim.decision import (
    HOOK_GROUP_ID,
    PERMISSIONS,
    action_schema,
    action_spec,
    hook_id,
    parameters,
)
from sheriff.sim.entities import LabelSpec, Push, Task
from sheriff.sim.world import World, WorldError

# Gecko's backfill symbol suffixes (actions/backfill.py SYMBOL_REGEX, GROUP_SYMBOL_REGEX).
_BACKFILL_SYMBOL = re.compile(r"^(.*)-[a-z0-9]{11}-bk$")
_CONFIRM_LIMIT = 10  # confirm_failure.get_failures stops after this many failing tests

# The hook's task template, modelled on ci-configuration's in-tree action hooks (one hook
# per permission, `action:<permission>` in its repo scope) wrapping Gecko's
# .taskcluster.yml: the hooks service renders it with {payload, firedBy, taskId, now,
# clientId}. An action task carries no `tags.action`: its identity is `extra.action`.
HOOK_TEMPLATE: dict[str, Any] = {
    "$let": {
        "permission": {"$eval": "permission"},
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
        "scopes": ["assume:repo:${repository.url[8:]}:action:${permission}"],
        "payload": {
            "env": {
                "GECKO_BASE_REPOSITORY": "https://hg.mozilla.org/mozilla-unified",
                "GECKO_HEAD_REPOSITORY": "${repository.url}",
                "GECKO_HEAD_REV": "${push.revision}",
                "ACTION_TASK_GROUP_ID": "${user.taskGroupId}",
                "ACTION_TASK_ID": {"$json": {"$eval": "user.taskId"}},
                "ACTION_INPUT": {"$json": {"$eval": "user.input"}},
                "ACTION_CALLBACK": "${action.cb_name}",
                "ACTION_PARAMETERS": {"$json": {"$eval": "parameters"}},
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
        "tags": {"createdForUser": "${push.owner}", "kind": "action-callback"},
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
                    "parameters": {"$eval": "parameters"},
                    "clientId": {"$eval": "clientId"},
                },
            },
            "tasks_for": "action",
        },
    },
}


def trigger_hook(
    world: World, hook_group: str, hook: str, payload: Any, client_id: str | None = None
) -> Task:
    """Render the hook's task as the hooks service does and create it (pending)."""
    with world.lock:
        permission = next((p for p in PERMISSIONS if hook == hook_id(world, p)), None)
        if hook_group != HOOK_GROUP_ID or permission is None:
            raise HookNotFound(f"hook {hook_group}/{hook} does not exist")
        task = _create_action_task(world, payload, permission, client_id)
        world.hook_triggered.append(task.task_id)
        return task


class HookNotFound(WorldError):
    """No hook with that id."""


class HookPayloadError(WorldError):
    """The payload does not render into a task."""


def _create_action_task(
    world: World, payload: Any, permission: str, client_id: str | None = None
) -> Task:
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
        "clientId": client_id,
        "permission": permission,
        "parameters": parameters(world, decision.push),
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
    spec = action_spec(callback)
    if handler is None or spec is None or not isinstance(action_input, dict):
        return False
    # registry.sanity_check_task_scope: the action task must hold the callback's own
    # permission (a backfill through the generic hook fails).
    repo = f"hg.mozilla.org/integration/{world.scenario.repository}"
    if f"assume:repo:{repo}:action:{spec.permission}" not in action_task.action_info["scopes"]:
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


def retriggerable(world: World, spec: LabelSpec) -> bool:
    """Gecko's `retrigger` attribute of a label (`_should_retrigger`)."""
    return world.scenario.suites[spec.suite].retriggerable


def _retrigger(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    """`retrigger` and `retrigger-disabled`: clones of the label, refused (the action task
    exits 1) for a label that should not be retriggered unless `force`."""
    if target is None or target.kind != "test":
        return False
    spec = target.push.graph.get(target.label)
    if spec is None or not (inp.get("force") or retriggerable(world, spec)):
        return False
    for _ in range(inp.get("times", 1)):
        world.create_test_task(
            target.push,
            spec,
            parent=action.task_id,
            action="retrigger",
            action_tag="retrigger-task",
        )
    return True


def _retrigger_decision(
    world: World, action: Task, target: Task | None, inp: dict[str, Any]
) -> bool:
    """`retrigger-decision` on a backfilled test task: an exact clone of its definition, which
    keeps its `tags.action` (set with setdefault). Decision and action tasks need scopes
    the simulated hook does not have."""
    if target is None or target.kind != "test" or target.spec is None:
        return False
    world.create_test_task(
        target.push,
        target.spec,
        parent=action.task_id,
        action="retrigger",
        action_tag=target.action_tag or "retrigger-decision-task",
        manifests=target.manifests,
        symbol_suffix=target.symbol_suffix,
        group_suffix=target.group_suffix,
        test_paths_env=target.test_paths_env,
    )
    return True


def _retrigger_multiple(
    world: World, action: Task, target: Task | None, inp: dict[str, Any]
) -> bool:
    """Clones of the retriggerable labels; the others' failed tasks are rerun instead."""
    push = action.push
    for request in inp.get("requests", []):
        labels = request.get("tasks", [])
        specs = [push.graph.get(label) for label in labels]
        if any(spec is None for spec in specs):
            return False  # label_to_taskids has no such label: Gecko's callback raises
        for label, spec in zip(labels, specs, strict=True):
            assert spec is not None
            if retriggerable(world, spec):
                continue
            for task in world.groups[push.decision_task_id]:
                if task.kind == "test" and task.label == label:
                    world.rerun(task)
        to_clone = [spec for spec in specs if spec is not None and retriggerable(world, spec)]
        for _ in range(request.get("times", 1)):
            for spec in to_clone:
                world.create_test_task(
                    push,
                    spec,
                    parent=action.task_id,
                    action="retrigger-multiple",
                    action_tag="retrigger-multiple-task",
                )
    return True


def _add_new_jobs(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    """New tasks of labels of the full graph; Gecko tags them with nothing."""
    push = action.push
    specs = [push.graph.get(label) for label in inp.get("tasks", [])]
    if any(spec is None for spec in specs):
        return False  # Gecko's callback raises on a label outside the full task graph
    for _ in range(inp["times"]):
        for spec in specs:
            assert spec is not None
            world.create_test_task(push, spec, parent=action.task_id, action="add-new-jobs")
    return True


def _confirm_failures(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    """One `<label>-cf` task per failing test (at most ten), running its manifest with the
    test repeated (confirm_failure.py); no failing test found: a retrigger instead."""
    if target is None or target.kind != "test" or target.spec is None or not target.runs:
        return False
    failing = sorted({f.test for f in target.runs[-1].outcome.failures})[:_CONFIRM_LIMIT]
    if not failing:
        return _retrigger(world, action, target, {"times": 1})
    suite = world.scenario.suites[target.spec.suite].name
    for test in failing:
        group = world.catalog.test_manifest[test]
        world.create_test_task(
            target.push,
            target.spec,
            parent=action.task_id,
            action="confirm-failures",
            action_tag="confirm-failure",
            label=f"{target.label}-cf",
            manifests=(group,),
            test_paths_env=json.dumps({suite: [group]}, sort_keys=True),
            confirm_paths_env=json.dumps({suite: [test]}, sort_keys=True),
        )
    return True


def _backfill(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    """Gecko's `backfill`: a `backfill-task` action on each of the `depth` earlier pushes
    (this one too with `inclusive`), its input built by `input_for_support_action`."""
    if target is None or target.kind != "test" or target.spec is None:
        return False
    from sheriff.sim.tasks import definition, treeherder_extra

    index = target.push.index
    first = index if inp["inclusive"] else index - 1
    support: dict[str, Any] = {
        "label": target.label,
        "revision": target.push.revision,
        "times": inp["times"],
        "symbol": treeherder_extra(world, target)["symbol"],
        "retrigger": inp["retrigger"],
    }
    paths = definition(world, target)["payload"]["env"].get("MOZHARNESS_TEST_PATHS")
    if paths:
        support["test_manifests"] = json.loads(paths)
    for i in range(first, max(-1, index - inp["depth"] - 1), -1):
        push = world.pushes[i]
        payload = _payload_for(world, push, "backfill-task")
        payload["user"] = {"input": support, "taskGroupId": push.decision_task_id, "taskId": None}
        _create_action_task(world, payload, "backfill")
    return True


def _backfill_task(world: World, action: Task, target: Task | None, inp: dict[str, Any]) -> bool:
    """Gecko's `backfill-task` (add_task_with_original_manifests + backfill_modifier).

    `test_manifests` is written to MOZHARNESS_TEST_PATHS unchanged; mozharness runs the
    suite's entry of that object, and the suite's default tests (what the label runs on
    this push) when it is not an object or has no entry for the suite.
    """
    push = action.push
    label = inp["label"]
    if not inp["retrigger"] and push.label_copies.get(label):
        return True  # the push already ran it
    spec = push.graph.get(label) or _new_label(push, label)
    if spec is None:
        return False  # new_label raises: no such label or chunk on this push
    test_manifests = inp.get("test_manifests")
    suite = world.scenario.suites[spec.suite]
    manifests = spec.manifests
    if isinstance(test_manifests, dict) and isinstance(test_manifests.get(suite.name), list):
        manifests = tuple(str(m) for m in test_manifests[suite.name])
    symbol_suffix = group_suffix = ""
    tag = None
    if test_manifests:
        symbol = treeherder_symbol(world, spec)
        if not _BACKFILL_SYMBOL.match(symbol):
            symbol_suffix = f"-{inp.get('revision', push.revision)[:11]}-bk"
        group_suffix = "" if suite.group_symbol.endswith("-bk") else "-bk"
        tag = "backfill-task"  # only with test_manifests (backfill_modifier)
    for _ in range(inp["times"]):
        world.create_test_task(
            push,
            spec,
            parent=action.task_id,
            action="backfill-task",
            action_tag=tag,
            manifests=manifests,
            symbol_suffix=symbol_suffix,
            group_suffix=group_suffix,
            test_paths_env=json.dumps(test_manifests) if test_manifests else None,
        )
    return True


def _new_label(push: Push, label: str) -> LabelSpec | None:
    """backfill.new_label: a chunk this push does not have falls back to the unchunked label
    or chunk 1."""
    head, _, tail = label.rpartition("-")
    if not head or not tail.isdigit():
        return None
    return push.graph.get(head) or push.graph.get(f"{head}-1")


def treeherder_symbol(world: World, spec: LabelSpec) -> str:
    """The job symbol of a label: the suite's symbol and chunk."""
    suite = world.scenario.suites[spec.suite]
    return f"{suite.symbol}{spec.chunk}" if suite.chunks > 1 else (suite.symbol or "1")


def _payload_for(world: World, push: Push, callback: str) -> dict[str, Any]:
    from sheriff.sim.decision import actions_json

    for entry in actions_json(world, push)["actions"]:
        if entry["hookPayload"]["decision"]["action"]["cb_name"] == callback:
            return json.loads(json.dumps(entry["hookPayload"]))
    raise WorldError(f"no action {callback}")


_CALLBACKS = {
    "retrigger": _retrigger,
    "retrigger-disabled": _retrigger,
    "retrigger-decision": _retrigger_decision,
    "retrigger-multiple": _retrigger_multiple,
    "add-new-jobs": _add_new_jobs,
    "confirm-failures": _confirm_failures,
    "backfill": _backfill,
    "backfill-task": _backfill_task,
}
