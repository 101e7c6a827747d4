"""The decision task's artifacts: actions.json, label-to-taskid, manifests and tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ActionSpec:
    """One entry of actions.json as gecko_taskgraph's registry builds it."""

    name: str
    callback: str
    title: str
    symbol: str
    context: list[dict[str, str]]
    schema: dict[str, Any] | None
    description: str
    permission: str = "generic"  # the hook: in-tree-action-<level>-<permission>/<hash>


_DEPTH = {
    "default": 19,
    "description": "The number of previous pushes before the current push to attempt to "
    "trigger this task on.",
    "maximum": 25,
    "minimum": 1,
    "title": "Depth",
    "type": "integer",
}
_RETRIGGER_FLAG = {
    "default": True,
    "description": "If False, the task won't retrigger on pushes that have already ran it.",
    "title": "Retrigger",
    "type": "boolean",
}
_BACKFILL_TIMES = {
    "default": 1,
    "description": "The number of times to execute each job you are backfilling.",
    "maximum": 10,
    "minimum": 1,
    "title": "Times",
    "type": "integer",
}

# In the order Gecko's registry sorts them (a client takes the first action of a name whose
# context matches the task), with today's schemas and permissions (gecko_taskgraph
# actions/retrigger.py, add_new_jobs.py, confirm_failure.py, backfill.py).
ACTIONS: list[ActionSpec] = [
    ActionSpec(
        "retrigger",
        "retrigger-decision",
        "Retrigger",
        "rt",
        [
            {"kind": "decision-task"},
            {"kind": "action-callback"},
            {"kind": "cron-task"},
            {"action": "backfill-task"},
        ],
        None,
        "Create a clone of the task (retriggering decision, action, and cron tasks requires\n"
        "special scopes).",
    ),
    ActionSpec(
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
    ActionSpec(
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
    ActionSpec(
        "add-new-jobs",
        "add-new-jobs",
        "Add new jobs",
        "add-new",
        [],
        {"properties": {"tasks": _LABELS, "times": _TIMES}, "type": "object"},
        "Add new jobs using task labels.",
    ),
    ActionSpec(
        "confirm-failures",
        "confirm-failures",
        "Confirm failures in job",
        "cf",
        [{"kind": "test"}],
        {
            "additionalProperties": False,
            "properties": {
                "label": {"description": "A task label", "type": "string"},
                "repeat_args": {"description": "args to pass to test harness", "type": "string"},
                "suite": {"description": "Test suite", "type": "string"},
                "test_group": {"description": "A full path to group name", "type": "string"},
                "test_path": {"description": "A full path to test", "type": "string"},
            },
            "type": "object",
        },
        "Re-run Tests for original manifest, directories or tests for failing tests.",
    ),
    ActionSpec(
        "backfill",
        "backfill",
        "Backfill",
        "Bk",
        [{}],
        {
            "additionalProperties": False,
            "properties": {
                "depth": _DEPTH,
                "inclusive": {
                    "default": False,
                    "description": "If true, the backfill will also retrigger the task on the "
                    "selected push.",
                    "title": "Inclusive Range",
                    "type": "boolean",
                },
                "retrigger": _RETRIGGER_FLAG,
                "times": _BACKFILL_TIMES,
            },
            "type": "object",
        },
        "Given a task schedule it on previous pushes in the same project.",
        permission="backfill",
    ),
    ActionSpec(
        "backfill-task",
        "backfill-task",
        "Backfill task on a push.",
        "backfill-task",
        [],
        {
            "properties": {
                "label": {"description": "A task label", "type": "string"},
                "retrigger": _RETRIGGER_FLAG,
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
                "times": _BACKFILL_TIMES,
            },
            "type": "object",
        },
        "This action is normally scheduled by the backfill action. The intent is to schedule a "
        "task on previous pushes.",
        permission="backfill",
    ),
    ActionSpec(
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
PERMISSIONS = ("generic", "backfill")


def hook_id(world: World, permission: str = "generic") -> str:
    """The in-tree action hook of a permission: one per level and permission, all named after
    the hash of the repository's .taskcluster.yml."""
    digest = draws.hexid(world.seed, 10, "hook", world.scenario.repository)
    return f"in-tree-action-3-{permission}/{digest}"


def action_spec(callback: str) -> ActionSpec | None:
    return next((a for a in ACTIONS if a.callback == callback), None)


def actions_json(world: World, push: Push) -> dict[str, Any]:
    """The decision task's `public/actions.json` (version 1)."""
    repo = world.scenario.repository
    entries = []
    for spec in ACTIONS:
        entry: dict[str, Any] = {
            "context": spec.context,
            "description": spec.description,
            "extra": {"actionPerm": spec.permission},
            "hookGroupId": HOOK_GROUP_ID,
            "hookId": hook_id(world, spec.permission),
            "hookPayload": {
                "decision": {
                    "action": {
                        "cb_name": spec.callback,
                        "description": spec.description,
                        "name": spec.name,
                        "symbol": spec.symbol,
                        "taskGroupId": push.decision_task_id,
                        "title": spec.title,
                    },
                    "push": {
                        "base_revision": world.pushes[push.index - 1].revision
                        if push.index
                        else push.revision,
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
            "name": spec.name,
            "title": spec.title,
        }
        if spec.schema is not None:
            entry["schema"] = spec.schema
        entries.append(entry)
    return {"actions": entries, "variables": {}, "version": 1}


def parameters(world: World, push: Push) -> dict[str, Any]:
    """The decision task's parameters (a few of Gecko's), as parameters.yml holds them."""
    return {
        "head_repository": f"https://hg.mozilla.org/integration/{world.scenario.repository}",
        "head_rev": push.revision,
        "level": "3",
        "owner": push.author,
        "project": world.scenario.repository,
        "pushlog_id": str(push.pushlog_id),
        "tasks_for": "hg-push",
    }


def action_schema(callback: str) -> dict[str, Any]:
    """The input schema of a callback (empty object schema when it takes no input)."""
    spec = action_spec(callback)
    return spec.schema if spec is not None and spec.schema is not None else {"type": "object"}


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
        lines = [f"{key}: {json.dumps(value)}" for key, value in parameters(world, push).items()]
        return ("\n".join(lines) + "\n").encode()
    return None
