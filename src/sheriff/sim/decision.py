"""The decision task's artifacts: actions.json, label-to-taskid, manifests and tests."""

from __future__ import annotations

import json
from typing import Any

from sheriff.sim import draws
from sheriff.sim.artifacts import gz_json
from sheriff.sim.entities import Push, Task
from sheriff.sim.world import World

HOOK_GROUP_ID = "project-gecko"
ACTION_OWNER = "mozilla-taskcluster-maintenance@mozilla.com"

_TIMES = {
    "default": 1,
    "description": "How many times to run each task.",
    "maximum": 100,
    "minimum": 1,
    "title": "Times",
    "type": "integer",
}
_LABELS = {"description": "An array of task labels", "items": {"type": "string"}, "type": "array"}

# name, callback, title, symbol, context, schema, description; in the order Gecko lists them
# (a client takes the first action of a name whose context matches the task).
ACTIONS: list[tuple[str, str, str, str, list[dict[str, str]], dict[str, Any] | None, str]] = [
    (
        "retrigger",
        "retrigger-decision",
        "Retrigger",
        "rt",
        [{"kind": "decision-task"}, {"kind": "action-callback"}, {"kind": "cron-task"}],
        None,
        "Create a clone of the task (retriggering decision, action, and cron tasks requires\n"
        "special scopes).",
    ),
    (
        "retrigger",
        "retrigger",
        "Retrigger",
        "rt",
        [{"retrigger": "true"}],
        {
            "properties": {
                "downstream": {
                    "default": False,
                    "description": "If true, downstream tasks from this one will be cloned as "
                    "well. The dependencies will be updated to work with the new task at the root.",
                    "type": "boolean",
                },
                "times": _TIMES,
            },
            "type": "object",
        },
        "Create a clone of the task.",
    ),
    (
        "retrigger",
        "retrigger-disabled",
        "Retrigger (disabled)",
        "rt",
        [{}],
        {
            "properties": {
                "downstream": {"default": False, "type": "boolean"},
                "force": {
                    "default": False,
                    "description": "This task should not be re-triggered. This can be overridden "
                    "by passing `true` here.",
                    "type": "boolean",
                },
                "times": _TIMES,
            },
            "type": "object",
        },
        "Create a clone of the task.\n\nThis type of task should typically be re-run instead of "
        "re-triggered.",
    ),
    (
        "add-new-jobs",
        "add-new-jobs",
        "Add new jobs",
        "add-new",
        [],
        {"properties": {"tasks": _LABELS, "times": _TIMES}, "type": "object"},
        "Add new jobs using task labels.",
    ),
    (
        "confirm-failures",
        "confirm-failures",
        "Confirm failures in job",
        "it",
        [{"kind": "test"}],
        {"additionalProperties": False, "properties": {"times": _TIMES}, "type": "object"},
        "Re-run Tests for original manifest, directories or tests for failing tests.",
    ),
    (
        "backfill",
        "backfill",
        "Backfill",
        "Bk",
        [{}],
        {
            "additionalProperties": False,
            "properties": {
                "depth": {
                    "default": 9,
                    "description": "The number of previous pushes before the current push to "
                    "attempt to trigger this task on.",
                    "maximum": 25,
                    "minimum": 1,
                    "title": "Depth",
                    "type": "integer",
                },
                "inclusive": {
                    "default": False,
                    "description": "If true, the backfill will also retrigger the task on the "
                    "selected push.",
                    "title": "Inclusive Range",
                    "type": "boolean",
                },
                "testPath": {"title": "Test Path", "type": "string"},
                "times": {
                    "default": 1,
                    "description": "The number of times to execute each job you are backfilling.",
                    "maximum": 10,
                    "minimum": 1,
                    "title": "Times",
                    "type": "integer",
                },
            },
            "type": "object",
        },
        "Take the label of the current task, and trigger the task with that label on previous "
        "pushes in the same project.",
    ),
    (
        "backfill-task",
        "backfill-task",
        "Backfill task on a push.",
        "backfill-task",
        [],
        {
            "properties": {
                "label": {"description": "A task label", "type": "string"},
                "revision": {
                    "description": "Revision of the original push from where we backfill.",
                    "type": "string",
                },
                "symbol": {
                    "description": "Symbol to be used by the scheduled task.",
                    "type": "string",
                },
                "test_manifests": {
                    "default": [],
                    "description": "An array of test manifest paths",
                    "items": {"type": "string"},
                    "type": "array",
                },
                "times": {
                    "default": 1,
                    "description": "The number of times to execute each job you are backfilling.",
                    "maximum": 8,
                    "minimum": 1,
                    "title": "Times",
                    "type": "integer",
                },
                "retrigger": {
                    "default": True,
                    "description": "If False, the task won't retrigger on pushes that have "
                    "already ran it.",
                    "title": "Retrigger",
                    "type": "boolean",
                },
            },
            "required": ["label"],
            "type": "object",
        },
        "This action is normally scheduled by the backfill action. The intent is to schedule a "
        "task on previous pushes.",
    ),
    (
        "retrigger-multiple",
        "retrigger-multiple",
        "Retrigger",
        "rt",
        [],
        {
            "properties": {
                "additionalProperties": False,
                "requests": {
                    "items": {
                        "additionalProperties": False,
                        "tasks": _LABELS,
                        "times": _TIMES,
                    },
                    "type": "array",
                },
            },
            "type": "object",
        },
        "Create a clone of the task.",
    ),
]


def hook_id(world: World) -> str:
    """The in-tree action hook of the scenario's repository (one per level and permission)."""
    return (
        f"in-tree-action-3-generic/{draws.hexid(world.seed, 10, 'hook', world.scenario.repository)}"
    )


def actions_json(world: World, push: Push) -> dict[str, Any]:
    """The decision task's `public/actions.json` (version 1)."""
    repo = world.scenario.repository
    entries = []
    for name, callback, title, symbol, context, schema, description in ACTIONS:
        entry: dict[str, Any] = {
            "context": context,
            "description": description,
            "extra": {"actionPerm": "generic"},
            "hookGroupId": HOOK_GROUP_ID,
            "hookId": hook_id(world),
            "hookPayload": {
                "decision": {
                    "action": {
                        "cb_name": callback,
                        "description": description,
                        "name": name,
                        "symbol": symbol,
                        "taskGroupId": push.decision_task_id,
                        "title": title,
                    },
                    "push": {
                        "owner": ACTION_OWNER,
                        "pushlog_id": str(push.pushlog_id),
                        "revision": push.revision,
                    },
                    "repository": {
                        "level": "3",
                        "project": repo,
                        "url": f"https://hg.mozilla.org/integration/{repo}",
                    },
                },
                "user": {
                    "input": {"$eval": "input"},
                    "taskGroupId": {"$eval": "taskGroupId"},
                    "taskId": {"$eval": "taskId"},
                },
            },
            "kind": "hook",
            "name": name,
            "title": title,
        }
        if schema is not None:
            entry["schema"] = schema
        entries.append(entry)
    return {"actions": entries, "variables": {}, "version": 1}


def action_schema(callback: str) -> dict[str, Any]:
    """The input schema of a callback (empty object schema when it takes no input)."""
    for _, name, _, _, _, schema, _ in ACTIONS:
        if name == callback and schema is not None:
            return schema
    return {"type": "object"}


def artifact(world: World, task: Task, name: str) -> bytes | None:
    push = task.push
    if name == "public/actions.json":
        return json.dumps(actions_json(world, push), indent=2, sort_keys=True).encode()
    scheduled = [
        t for t in world.groups[push.decision_task_id] if t.kind == "test" and t.action is None
    ]
    if name == "public/label-to-taskid.json":
        mapping = {t.label: t.task_id for t in scheduled}
        mapping["Gecko Decision Task"] = push.decision_task_id
        return json.dumps(mapping, indent=2, sort_keys=True).encode()
    if name == "public/manifests-by-task.json.gz":
        return gz_json({t.label: list(t.manifests) for t in scheduled})
    if name == "public/tests-by-manifest.json.gz":
        cached = getattr(world, "_tests_by_manifest_gz", None)
        if cached is None:
            cached = gz_json({m: list(ts) for m, ts in world.catalog.manifest_tests.items()})
            world._tests_by_manifest_gz = cached  # type: ignore[attr-defined]
        return cached
    if name == "public/parameters.yml":
        lines = [
            f"head_repository: https://hg.mozilla.org/integration/{world.scenario.repository}",
            f"head_rev: {push.revision}",
            f"project: {world.scenario.repository}",
            f"pushlog_id: '{push.pushlog_id}'",
            f"owner: {push.author}",
            "level: '3'",
            "tasks_for: hg-push",
        ]
        return ("\n".join(lines) + "\n").encode()
    return None
