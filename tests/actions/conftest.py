"""An in-memory Taskcluster for unit tests of the protocol and the request log.

It holds the real reference data (the decision task's actions.json and the original
task) and behaves like the services on the calls sheriff makes: the Index finds the
decision task, the Queue serves definitions and lists the task group, Auth expands
scopes, and Hooks creates an action task in the push's task group the way the in-tree
action hook does (`tags.kind: action-callback`, `extra.action`). The end-to-end tests
in tests/actions/test_e2e_sim.py run the same code against the simulator over HTTP.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sheriff.actions.protocol import ActionsProtocol
from sheriff.ci.retry import RetryPolicy
from sheriff.ci.taskcluster import (
    TaskclusterError,
    TaskclusterNotFound,
    TaskclusterUnavailable,
)

DECISION = "f7Jj_h6MTEKr5Ln_7aFqbw"
ORIGINAL = "N7pD0sjoSNyhIAKR1ZMpZg"  # a slugid: the CLI refuses anything else
REPO = "autoland"
REVISION = "c7766d0b4a121985a8b07e6721d66ccab57bbf76"
HOOK = "project-gecko/in-tree-action-3-generic/9353e8f146"


class _Service:
    def __init__(self, world: FakeTaskcluster) -> None:
        self.world = world


class _Queue(_Service):
    def task(self, task_id: str) -> dict[str, Any]:
        self.world.calls.append(("task", task_id))
        if task_id not in self.world.tasks:
            raise TaskclusterNotFound(f"task {task_id}: HTTP 404", status=404)
        return json.loads(json.dumps(self.world.tasks[task_id]))

    def listTaskGroup(self, group: str, query: dict | None = None) -> dict[str, Any]:
        self.world.calls.append(("listTaskGroup", group))
        tasks = [
            {"status": {"taskId": tid, "state": "pending"}, "task": t}
            for tid, t in self.world.tasks.items()
            if t.get("taskGroupId") == group
        ]
        return {"taskGroupId": group, "tasks": tasks}


class _Index(_Service):
    def findTask(self, path: str) -> dict[str, Any]:
        self.world.calls.append(("findTask", path))
        if path not in self.world.index:
            raise TaskclusterNotFound(f"{path}: HTTP 404", status=404)
        return {"taskId": self.world.index[path]}


class _Auth(_Service):
    def expandScopes(self, body: dict[str, Any]) -> dict[str, Any]:
        self.world.calls.append(("expandScopes", ",".join(body["scopes"])))
        scopes = set(body["scopes"])
        for scope in list(scopes):
            scopes.update(self.world.roles.get(scope, []))
        return {"scopes": sorted(scopes)}


class _Hooks(_Service):
    def triggerHook(self, group: str, hook: str, payload: Any) -> dict[str, Any]:
        world = self.world
        if world.trigger_delay:
            time.sleep(world.trigger_delay)
        world.triggered.append((f"{group}/{hook}", payload))
        if world.hook_failures:
            failure = world.hook_failures.pop(0)
            if failure == "503-after-create":
                world.create_action_task(payload)
                raise TaskclusterUnavailable("POST triggerHook: HTTP 503", status=503)
            if failure == 503:
                raise TaskclusterUnavailable("POST triggerHook: HTTP 503", status=503)
            raise TaskclusterError(f"POST triggerHook: HTTP {failure}", status=failure)
        task_id = world.create_action_task(payload)
        if world.crash_after_trigger:
            raise world.crash_after_trigger
        return {"status": {"taskId": task_id}}


class FakeTaskcluster:
    """The Queue, Index, Auth and Hooks of one push, built from the reference data."""

    def __init__(self, reference: Path) -> None:
        actions_dir = reference / "treeherder" / "actions"
        self.artifacts: dict[tuple[str, str], bytes] = {
            (DECISION, "public/actions.json"): (actions_dir / "initialActions.json").read_bytes()
        }
        original = json.loads((actions_dir / "originalTask.json").read_text())
        self.tasks: dict[str, dict[str, Any]] = {
            DECISION: {
                "taskGroupId": DECISION,
                "scopes": ["assume:repo:hg.mozilla.org/integration/autoland:branch:default"],
                "tags": {"kind": "decision-task"},
                "metadata": {"name": "Gecko Decision Task"},
            },
            ORIGINAL: original,
        }
        self.index = {f"gecko.v2.{REPO}.revision.{REVISION}.taskgraph.decision": DECISION}
        self.roles = {
            "assume:repo:hg.mozilla.org/integration/autoland:branch:default": [
                "in-tree:hook-action:project-gecko/in-tree-action-3-*"
            ]
        }
        self.triggered: list[tuple[str, Any]] = []
        self.hook_failures: list[Any] = []
        self.crash_after_trigger: BaseException | None = None
        self.trigger_delay = 0.0
        self.calls: list[tuple[str, str]] = []
        self._next = 0
        self.queue, self.index_service = _Queue(self), _Index(self)
        self.auth, self.hooks = _Auth(self), _Hooks(self)

    def create_action_task(self, payload: dict[str, Any]) -> str:
        self._next += 1
        task_id = f"ACTION_TASK_{self._next:010d}"
        user, action = payload["user"], payload["decision"]["action"]
        self.tasks[task_id] = {
            "taskGroupId": action["taskGroupId"],
            "tags": {"kind": "action-callback", "createdForUser": "sheriff"},
            "metadata": {"name": f"Action: {action['title']}"},
            "extra": {
                "action": {
                    "name": action["name"],
                    "context": {
                        "taskGroupId": user["taskGroupId"],
                        "taskId": user["taskId"],
                        "input": user["input"],
                    },
                }
            },
            "payload": {"env": {"ACTION_INPUT": json.dumps(user["input"])}},
        }
        return task_id

    def action_task_count(self) -> int:
        return sum(1 for t in self.tasks.values() if t["tags"].get("kind") == "action-callback")


class FakeClients:
    """Shaped like `sheriff.ci.taskcluster.TaskclusterClients`."""

    def __init__(self, world: FakeTaskcluster) -> None:
        self.world = world
        self.root_url = "http://fake.invalid"
        self.queue, self.index, self.auth = world.queue, world.index_service, world.auth
        self.hooks = self.hooks_once = world.hooks
        self.has_credentials = True
        self.transport = RetryPolicy(timeout_seconds=1, retries=2, backoff_seconds=0)

    def latest_artifact(self, task_id: str, name: str) -> bytes:
        if (task_id, name) not in self.world.artifacts:
            raise TaskclusterNotFound(f"artifact {name} of {task_id}: HTTP 404", status=404)
        return self.world.artifacts[(task_id, name)]


@pytest.fixture
def world(reference: Path) -> FakeTaskcluster:
    return FakeTaskcluster(reference)


@pytest.fixture
def protocol(world: FakeTaskcluster) -> ActionsProtocol:
    return ActionsProtocol(FakeClients(world))  # type: ignore[arg-type]
