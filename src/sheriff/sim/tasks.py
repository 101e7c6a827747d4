"""Taskcluster task definitions and statuses, in the real Queue's shapes."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sheriff.sim.entities import Run, Task
from sheriff.sim.world import World, platform_os

SCHEDULER_ID = "gecko-level-3"
DECISION_QUEUE = "gecko-3/decision-gcp"
ACTION_QUEUE = "gecko-3/decision-gcp"


def repository_url(world: World) -> str:
    return f"https://hg.mozilla.org/integration/{world.scenario.repository}"


def test_type(suite: str) -> str:
    """Gecko's `tags.test-type` for a suite."""
    for prefix, kind in (
        ("mochitest", "mochitest"),
        ("reftest", "reftest"),
        ("crashtest", "reftest"),
        ("xpcshell", "xpcshell"),
        ("web-platform-tests", "web-platform-tests"),
    ):
        if suite.startswith(prefix):
            return kind
    return suite


def task_queue_id(world: World, task: Task) -> str:
    if task.kind == "test":
        assert task.spec is not None
        return world.scenario.platforms[task.spec.platform].task_queue_id
    return DECISION_QUEUE


def definition(world: World, task: Task) -> dict[str, Any]:
    """The task definition `queue.task` returns."""
    if task.kind == "decision-task":
        return _decision_definition(world, task)
    if task.kind == "action-callback":
        assert task.action_info is not None
        return task.action_info
    return _test_definition(world, task)


def definition_json(world: World, task: Task) -> str:
    """The definition as JSON, rendered once: definitions never change."""
    if task.definition_json is None:
        task.definition_json = json.dumps(definition(world, task), separators=(",", ":"))
    return task.definition_json


def _times(world: World, task: Task, expires_days: int) -> dict[str, str]:
    created = world.time_of(task.created)
    fmt = "%Y-%m-%dT%H:%M:%S.%f"
    return {
        "created": created.strftime(fmt)[:-3] + "Z",
        "deadline": (created + timedelta(days=1)).strftime(fmt)[:-3] + "Z",
        "expires": (created + timedelta(days=expires_days)).strftime(fmt)[:-3] + "Z",
    }


def _common_env(world: World, task: Task) -> dict[str, str]:
    return {
        "GECKO_BASE_REPOSITORY": "https://hg.mozilla.org/mozilla-unified",
        "GECKO_HEAD_REPOSITORY": repository_url(world),
        "GECKO_HEAD_REV": task.push.revision,
        "MOZ_AUTOMATION": "1",
        "MOZ_SCM_LEVEL": "3",
    }


def treeherder_route(world: World, task: Task) -> str:
    push = task.push
    return f"tc-treeherder.v2.{world.scenario.repository}.{push.revision}.{push.pushlog_id}"


def treeherder_extra(world: World, task: Task) -> dict[str, Any]:
    """`extra.treeherder` of a task, without rendering the whole definition."""
    if task.kind == "test":
        assert task.spec is not None
        platform = world.scenario.platforms[task.spec.platform]
        suite = world.scenario.suites[task.spec.suite]
        symbol = f"{suite.symbol}{task.spec.chunk}" if suite.chunks > 1 else (suite.symbol or "1")
        return {
            "collection": {platform.collection: True},
            "groupName": suite.group_name,
            "groupSymbol": suite.group_symbol + task.group_suffix,
            "jobKind": "test",
            "machine": {"platform": platform.platform},
            "symbol": symbol + task.symbol_suffix,
            "tier": max(suite.tier, platform.tier),
        }
    return definition(world, task)["extra"]["treeherder"]


def _test_definition(world: World, task: Task) -> dict[str, Any]:
    assert task.spec is not None
    scenario = world.scenario
    platform = scenario.platforms[task.spec.platform]
    suite = scenario.suites[task.spec.suite]
    queue_id = platform.task_queue_id
    provisioner, worker_type = queue_id.split("/", 1)
    os_name = platform_os(platform.platform)
    env = _common_env(world, task)
    env.update(
        {
            "MOZHARNESS_SCRIPT": "desktop_unittest.py",
            "MOZHARNESS_CONFIG": f"unittests/{os_name}_unittest.py",
            "MOZHARNESS_TEST_PATHS": task.test_paths_env
            or json.dumps({suite.name: list(task.manifests)}, sort_keys=True),
            "TASKCLUSTER_CACHES": "/builds/worker/checkouts",
        }
    )
    if task.confirm_paths_env:
        env["MOZHARNESS_CONFIRM_PATHS"] = task.confirm_paths_env
        env["MOZLOG_DUMP_ALL_TESTS"] = "1"
    artifacts_dir = "/builds/worker/workspace/build/blobber_upload_dir/"
    tags = {
        "createdForUser": task.push.author,
        "kind": "test",
        "label": task.label,
        "os": os_name,
        "test-platform": f"{platform.platform}/{platform.collection}",
        "test-suite": suite.name,
        "test-type": test_type(suite.name),
        "trust-domain": "gecko",
        "worker-implementation": "docker-worker" if os_name == "linux" else "generic-worker",
    }
    if suite.retriggerable:
        tags["retrigger"] = "true"
    if task.action_tag:
        tags["action"] = task.action_tag
    description = f"{suite.name} run ([Treeherder push]"
    description += f"(https://treeherder.mozilla.org/#/jobs?repo={scenario.repository}"
    description += f"&revision={task.push.revision}))"
    return {
        "provisionerId": provisioner,
        "workerType": worker_type,
        "taskQueueId": queue_id,
        "schedulerId": SCHEDULER_ID,
        "projectId": "none",
        "taskGroupId": task.push.decision_task_id,
        "dependencies": [task.push.decision_task_id],
        "requires": "all-completed",
        "routes": [treeherder_route(world, task), "checks"],
        "priority": "low",
        "retries": task.retries,
        **_times(world, task, 28),
        "scopes": [
            "secrets:get:project/taskcluster/gecko/hgfingerprint",
            "secrets:get:project/taskcluster/gecko/hgmointernal",
        ],
        "payload": {
            "artifacts": {
                "public/logs/": {"path": "/builds/worker/workspace/logs/", "type": "directory"},
                "public/test_info/": {"path": artifacts_dir, "type": "directory"},
            },
            "command": [
                "/builds/worker/bin/run-task",
                "--",
                f"/builds/worker/bin/test-{os_name}.sh",
                f"--test-suite={suite.name}",
                f"--this-chunk={task.spec.chunk}",
                f"--total-chunks={suite.chunks}",
            ],
            "env": env,
            "maxRunTime": 5400,
            "onExitStatus": {"retry": [4, 137]},
        },
        "metadata": {
            "name": task.label,
            "description": description,
            "owner": task.push.author,
            "source": f"{repository_url(world)}/file/{task.push.revision}/taskcluster/kinds/test",
        },
        "tags": tags,
        "extra": {
            "chunks": {"current": task.spec.chunk, "total": suite.chunks},
            "index": {"rank": 0},
            "parent": task.parent,
            "suite": suite.name,
            "test-setting": {"platform": {"os": {"name": os_name}}},
            "treeherder": treeherder_extra(world, task),
            "treeherder-platform": f"{platform.platform}/{platform.collection}",
        },
    }


def _decision_definition(world: World, task: Task) -> dict[str, Any]:
    repo = world.scenario.repository
    push = task.push
    provisioner, worker_type = DECISION_QUEUE.split("/", 1)
    env = _common_env(world, task)
    env["GECKO_COMMIT_MSG"] = f"Bug {1_900_000 + push.index} - change {push.index}"
    return {
        "provisionerId": provisioner,
        "workerType": worker_type,
        "taskQueueId": DECISION_QUEUE,
        "schedulerId": SCHEDULER_ID,
        "projectId": "none",
        "taskGroupId": task.task_id,
        "dependencies": [],
        "requires": "all-completed",
        "routes": [
            treeherder_route(world, task),
            f"index.gecko.v2.{repo}.latest.taskgraph.decision",
            f"index.gecko.v2.{repo}.revision.{push.revision}.taskgraph.decision",
            f"index.gecko.v2.{repo}.pushlog-id.{push.pushlog_id}.decision",
            "checks",
        ],
        "priority": "very-high",
        "retries": task.retries,
        **_times(world, task, 365),
        "scopes": [
            f"assume:repo:hg.mozilla.org/integration/{repo}:branch:default",
            f"queue:route:notify.email.{push.author}.*",
            "in-tree:hook-action:project-gecko/in-tree-action-3-*",
        ],
        "payload": {
            "artifacts": {"public": {"path": "/builds/worker/artifacts", "type": "directory"}},
            "command": [
                "/builds/worker/bin/run-task",
                "--",
                "bash",
                "-cx",
                "./mach taskgraph decision",
            ],
            "env": env,
            "maxRunTime": 1800,
        },
        "metadata": {
            "name": task.label,
            "description": "The task that creates all of the other tasks in the task graph",
            "owner": push.author,
            "source": f"{repository_url(world)}/raw-file/{push.revision}/.taskcluster.yml",
        },
        "tags": {"createdForUser": push.author, "kind": "decision-task"},
        "extra": {
            "treeherder": {
                "collection": {"opt": True},
                "jobKind": "other",
                "machine": {"platform": "gecko-decision"},
                "symbol": "D",
                "tier": 1,
            },
            "treeherder-platform": "gecko-decision/opt",
            "tasks_for": "hg-push",
        },
    }


def run_dict(world: World, run: Run) -> dict[str, Any]:
    """A run as the Queue shows it: only the fields that have happened."""
    out: dict[str, Any] = {
        "runId": run.run_id,
        "state": run.state,
        "reasonCreated": run.reason_created,
        "scheduled": world.iso(run.scheduled),
    }
    if run.started is not None:
        out["started"] = world.iso(run.started)
        out["workerGroup"] = run.worker_group
        out["workerId"] = run.worker_id
        out["takenUntil"] = world.iso(run.started + 20)
    if run.resolved is not None:
        out["reasonResolved"] = run.reason_resolved
        out["resolved"] = world.iso(run.resolved)
    return out


def status_expires(world: World, task: Task) -> str:
    """A task's expiry (decision and action tasks a year, test tasks 28 days)."""
    return _times(world, task, 365 if task.kind != "test" else 28)["expires"]


def status(world: World, task: Task) -> dict[str, Any]:
    """The task status structure of `queue.status`."""
    queue_id = task_queue_id(world, task)
    provisioner, worker_type = queue_id.split("/", 1)
    times = _times(world, task, 365 if task.kind != "test" else 28)
    return {
        "taskId": task.task_id,
        "provisionerId": provisioner,
        "workerType": worker_type,
        "taskQueueId": queue_id,
        "schedulerId": SCHEDULER_ID,
        "projectId": "none",
        "taskGroupId": task.push.decision_task_id,
        "deadline": times["deadline"],
        "expires": times["expires"],
        "retriesLeft": task.retries_left,
        "state": task.state,
        "runs": [run_dict(world, run) for run in task.runs],
    }


def status_json(world: World, task: Task) -> str:
    """The status as JSON, cached until the task changes."""
    if task.status_json is None:
        task.status_json = json.dumps(status(world, task), separators=(",", ":"))
    return task.status_json


def job_guid(task_id: str, run_id: int) -> str:
    """Treeherder's job guid: the task id as a UUID, then the run."""
    import base64
    import uuid

    raw = base64.urlsafe_b64decode(task_id + "==")
    return f"{uuid.UUID(bytes=raw)}/{run_id}"
