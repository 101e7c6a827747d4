"""The pure parts of Taskcluster's actions protocol: matching, selection, scopes.

An `actions.json` (version 1) lists actions; each has a `context`, a list of tag-sets.
A tag-set matches a task when every one of its key/value pairs is in the task's tags;
`context: []` marks a push-level action, which applies only when there is no task.
Nothing here does I/O; `sheriff.actions.protocol` drives it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SUPPORTED_VERSION = 1
SUPPORTED_KIND = "hook"

# `tags.kind` of an action task (what a hook creates). An action task has no `tags.action`:
# its identity is `extra.action` and its environment (Gecko's .taskcluster.yml).
ACTION_TASK_KIND = "action-callback"

# `tags.action` Gecko's callbacks give the tasks they create (gecko_taskgraph actions/
# retrigger.py, backfill.py, confirm_failure.py; set with setdefault, so a clone keeps
# its original's). `add-new-jobs`, and `backfill-task` without test_manifests, tag none.
RETRIGGER_TAGS = frozenset({"retrigger-task", "retrigger-multiple-task", "retrigger-decision-task"})
BACKFILL_TAG = "backfill-task"
CONFIRM_FAILURE_TAG = "confirm-failure"


def tag_set_matches(tag_set: Mapping[str, str], tags: Mapping[str, str]) -> bool:
    """True when every key/value of `tag_set` is in `tags` (the empty set matches any task)."""
    return all(tags.get(key) == value for key, value in tag_set.items())


def context_matches(context: Sequence[Mapping[str, str]], tags: Mapping[str, str] | None) -> bool:
    """Whether an action with `context` applies to a task with `tags` (None: push-level)."""
    if tags is None:
        return len(context) == 0
    return any(tag_set_matches(tag_set, tags) for tag_set in context)


def select_action(
    actions: Iterable[Mapping[str, Any]], name: str, tags: Mapping[str, str] | None
) -> Mapping[str, Any] | None:
    """The first action called `name` whose context matches `tags`, as consumers must pick."""
    for action in actions:
        if action.get("name") == name and context_matches(action.get("context", []), tags):
            return action
    return None


def available_actions(
    actions: Iterable[Mapping[str, Any]], tags: Mapping[str, str] | None
) -> list[Mapping[str, Any]]:
    """Every action that applies to `tags`, first match per name only, in file order."""
    seen: set[str] = set()
    found = []
    for action in actions:
        name = action.get("name", "")
        if name not in seen and context_matches(action.get("context", []), tags):
            seen.add(name)
            found.append(action)
    return found


def render_context(
    *,
    task_group_id: str,
    task_id: str | None,
    input: Any,
    variables: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON-e context `hookPayload` is rendered in; `variables` never shadow the three."""
    return {**variables, "taskGroupId": task_group_id, "taskId": task_id, "input": input}


def hook_scope(hook_group_id: str, hook_id: str) -> str:
    """The scope a decision task must carry for its actions.json to name this hook."""
    return f"in-tree:hook-action:{hook_group_id}/{hook_id}"


def may_assume_role(scope: str) -> bool:
    """Whether a held scope can satisfy some `assume:<role>` (then Auth expands it through
    roles); any other scope expands to itself."""
    return scope.startswith("assume:") or (scope.endswith("*") and "assume:".startswith(scope[:-1]))


def scope_satisfied(held: Iterable[str], required: str) -> bool:
    """Taskcluster's rule: a held scope matches exactly, or ends in `*` and prefixes it."""
    for scope in held:
        if scope == required or (scope.endswith("*") and required.startswith(scope[:-1])):
            return True
    return False


# JSON Schema keywords; any other key of a schema object is not part of the schema.
_SCHEMA_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "id",
        "$ref",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "type",
        "enum",
        "const",
        "properties",
        "patternProperties",
        "additionalProperties",
        "required",
        "minProperties",
        "maxProperties",
        "dependencies",
        "propertyNames",
        "items",
        "additionalItems",
        "contains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions", "$defs"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "items"})
_SUBSCHEMAS = frozenset(
    {"items", "additionalItems", "additionalProperties", "contains", "propertyNames"}
    | {"not", "if", "then", "else"}
)


def repair_schema(schema: Any) -> Any:
    """The schema Gecko meant where it misplaced `properties` (as in `retrigger-multiple`).

    Gecko publishes `retrigger-multiple` with an item schema of `{additionalProperties:
    false, tasks: {...}, times: {...}}`: the property schemas sit beside the keyword
    instead of under `properties`, so read literally it forbids every key and no input
    could ever be valid. Where an object schema has `additionalProperties: false`, no
    `properties`, and non-keyword keys whose values are schemas, those keys are read as
    its properties. Every other schema is returned unchanged.
    """
    if not isinstance(schema, dict):
        return schema
    repaired: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            repaired[key] = {name: repair_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            repaired[key] = [repair_schema(sub) for sub in value]
        elif key in _SCHEMA_KEYWORDS and key not in _SUBSCHEMAS:
            repaired[key] = value
        else:
            repaired[key] = repair_schema(value)
    misplaced = [
        key
        for key, value in repaired.items()
        if key not in _SCHEMA_KEYWORDS and isinstance(value, dict)
    ]
    if repaired.get("additionalProperties") is False and "properties" not in repaired and misplaced:
        repaired["properties"] = {key: repaired.pop(key) for key in misplaced}
    return repaired


# Inputs Gecko's own code sends that the published schema refuses: `backfill` passes
# `backfill-task` the original's decoded MOZHARNESS_TEST_PATHS, a `{suite: [manifests]}`
# object, as `test_manifests`, whose schema says array (gecko_taskgraph actions/
# backfill.py, input_for_support_action). Action tasks do not validate their input, so the
# object is what works; where a client validates, the property takes either shape.
_GECKO_SENDS: dict[tuple[str, str], dict[str, Any]] = {
    ("backfill-task", "test_manifests"): {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    },
}


def widen_schema(action: str, schema: Any) -> Any:
    """`schema` of action `action`, also accepting what Gecko's own callers send there."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return schema
    widened = dict(properties)
    for (name, prop), shape in _GECKO_SENDS.items():
        if name == action and isinstance(widened.get(prop), dict):
            widened[prop] = {"anyOf": [widened[prop], shape]}
    return {**schema, "properties": widened} if widened != properties else schema


def canonical_json(value: Any) -> str:
    """One spelling per JSON value, so equal inputs compare and hash equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(action: str, decision_task_id: str, task_id: str | None, input: Any) -> str:
    """A default idempotency key: the same action on the same target with the same input."""
    text = canonical_json([action, decision_task_id, task_id, input])
    return f"{action}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"


@dataclass(frozen=True)
class ActionTaskSignature:
    """What an action task says about the request that created it: the action's name, its
    callback (ACTION_CALLBACK), the target task and the input."""

    name: str
    task_id: str | None
    input: Any
    callback: str | None = None

    def matches(self, name: str, task_id: str | None, input: Any) -> bool:
        return (
            self.name == name
            and self.task_id == task_id
            and canonical_json(self.input) == canonical_json(input)
        )


def action_task_signature(definition: Mapping[str, Any]) -> ActionTaskSignature | None:
    """Read name, callback, target task and input off an action task's definition.

    Gecko's in-tree action hooks put them in `extra.action` (`name`, `context.taskId`,
    `context.input`) and in the environment (`ACTION_CALLBACK`, and `ACTION_TASK_ID` and
    `ACTION_INPUT` JSON-encoded: `"abc…"` or `null`); either is enough. Tasks that are not
    action tasks give None.
    """
    # Any field may be missing or of the wrong type in a listing: such a task is not one.
    env = _mapping(_mapping(definition.get("payload")).get("env"))
    callback = env.get("ACTION_CALLBACK")
    callback = callback if isinstance(callback, str) and callback else None
    extra_action = _mapping(definition.get("extra")).get("action")
    if isinstance(extra_action, Mapping) and extra_action.get("name"):
        context = _mapping(extra_action.get("context"))
        target = context.get("taskId")
        return ActionTaskSignature(
            name=str(extra_action["name"]),
            task_id=target if isinstance(target, str) else None,
            input=context.get("input"),
            callback=callback,
        )
    tags = _mapping(definition.get("tags"))
    if "ACTION_INPUT" not in env or tags.get("kind") != ACTION_TASK_KIND:
        return None
    try:
        input = json.loads(env["ACTION_INPUT"])
    except (TypeError, ValueError, RecursionError):
        return None
    raw_task_id = env.get("ACTION_TASK_ID")
    try:
        task_id = json.loads(raw_task_id) if raw_task_id else None
    except (TypeError, ValueError, RecursionError):
        task_id = raw_task_id  # an older hook that did not encode it
    if task_id is not None and not isinstance(task_id, str):
        task_id = None
    return ActionTaskSignature(name=callback or "", task_id=task_id, input=input, callback=callback)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def treeherder_route_push(routes: Iterable[str]) -> tuple[str, str] | None:
    """(repository, revision) from a `tc-treeherder.v2.<repo>.<revision>[.<pushlog id>]` route."""
    for route in routes:
        parts = route.split(".")
        if len(parts) >= 4 and parts[0] == "tc-treeherder" and parts[1] == "v2":
            return parts[2], parts[3]
    return None


def treeherder_route_pushlog_id(routes: Iterable[str]) -> int | None:
    """The pushlog id at the end of a `tc-treeherder.v2.<repo>.<revision>.<id>` route."""
    for route in routes:
        parts = route.split(".")
        if len(parts) >= 5 and parts[0] == "tc-treeherder" and parts[4].isdigit():
            return int(parts[4])
    return None
