"""What a Taskcluster task run is as a Treeherder job: pure derivation, no I/O.

The fields follow Treeherder's own transform of a task and its Pulse status (its
taskcluster pulse handler and job loader), so a job here and a job there agree on
platforms, group, symbol, tier, option collection, state and result. Beyond Treeherder,
sheriff keeps what triage needs: the task queue, the action that created the task, its
parent, and the manifests it ran (`MOZHARNESS_TEST_PATHS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import slugid

from sheriff.model.task_shapes import (
    MAX_OPTION_COLLECTION,
    RunShape,
    TaskShape,
    TaskShapeError,
    check_runs,
    check_task,
    check_task_id,
    check_test_paths,
)

# Treeherder's job states, in the order a run moves through them; a message that would
# move a job backwards (a late `pending` after `completed`) is stale.
STATE_RANK = {"unscheduled": 0, "pending": 1, "running": 2, "completed": 3}

_TEST_RESULTS = {
    "success": "success",
    "fail": "testfailed",
    "exception": "exception",
    "canceled": "usercancel",
    "superseded": "superseded",
    "unknown": "unknown",
}
_BUILD_RESULTS = {**_TEST_RESULTS, "fail": "busted"}

PULSE_EXCHANGE_STATES = {
    "exchange/taskcluster-queue/v1/task-pending": "pending",
    "exchange/taskcluster-queue/v1/task-running": "running",
    "exchange/taskcluster-queue/v1/task-completed": "completed",
    "exchange/taskcluster-queue/v1/task-failed": "failed",
    "exchange/taskcluster-queue/v1/task-exception": "exception",
}


# The parts of a `tc-treeherder` route: a repository name and a revision (hg or git).
_PROJECT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_REVISION = re.compile(r"[0-9A-Za-z]{1,40}")


class NotATreeherderJob(TaskShapeError):
    """A well-formed task that Treeherder would not show as a job (no config or route)."""


@dataclass(frozen=True)
class Platform:
    os_name: str
    platform: str
    architecture: str


@dataclass(frozen=True)
class PushRef:
    """The push a task belongs to, from its `tc-treeherder` route."""

    repository: str
    revision: str
    pushlog_id: int | None


@dataclass(frozen=True)
class TaskJob:
    """One run of one task, as sheriff stores it (Treeherder's job, plus triage fields)."""

    task_id: str
    run_id: int
    push: PushRef
    task_group_id: str
    label: str
    build_platform: Platform
    machine_platform: Platform
    group_name: str
    group_symbol: str
    job_symbol: str
    option_collection: str  # Treeherder option labels joined with a space: "opt", "debug"
    tier: int
    job_kind: str
    task_queue_id: str
    state: str
    result: str
    reason: str
    who: str
    product_name: str
    machine: str
    retriggerable: bool
    action: str | None
    parent_task_id: str | None
    test_type: str | None
    manifests: tuple[str, ...] | None  # None: the task definition does not say
    submit_time: datetime
    start_time: datetime | None
    end_time: datetime | None

    @property
    def job_guid(self) -> str:
        return f"{slugid.decode(self.task_id)}/{self.run_id}"

    @property
    def job_type_name(self) -> str:
        # Treeherder keeps at most 99 characters of the label as the job type name.
        return self.label[:99]


def push_from_routes(routes: Sequence[str]) -> PushRef | None:
    """The push of a task from its single `tc-treeherder` route, or None without one."""
    matching = [r for r in routes if r.split(".")[0] == "tc-treeherder"]
    if len(matching) != 1:
        return None
    parts = matching[0].split(".")
    # v2: tc-treeherder.v2.<project>.<revision>.<pushlog id>; v1: tc-treeherder.<project>.<rev>
    if parts[1] == "v2" and len(parts) >= 4:
        project, revision, pushlog = parts[2], parts[3], parts[4] if len(parts) > 4 else None
    elif len(parts) >= 3:
        project, revision, pushlog = parts[1], parts[2], None
    else:
        return None
    if not _PROJECT.fullmatch(project) or not _REVISION.fullmatch(revision):
        raise TaskShapeError(f"route {matching[0][:120]!r} does not name a repository and revision")
    pushlog_id = int(pushlog) if pushlog and pushlog.isdigit() and len(pushlog) < 10 else None
    return PushRef(project, revision, pushlog_id)


def task_queue_id(task: Mapping[str, Any]) -> str:
    """`taskQueueId`, or `<provisionerId>/<workerType>` for tasks older than task queues."""
    if task.get("taskQueueId"):
        return str(task["taskQueueId"])
    provisioner, worker_type = task.get("provisionerId"), task.get("workerType")
    if not provisioner or not worker_type:
        raise TaskShapeError("has neither taskQueueId nor provisionerId/workerType")
    return f"{provisioner}/{worker_type}"


def manifests_from_env(task: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The manifests `MOZHARNESS_TEST_PATHS` (JSON `{suite: [paths]}`) says the task runs."""
    payload = task.get("payload")
    env = payload.get("env") if isinstance(payload, Mapping) else None
    raw = env.get("MOZHARNESS_TEST_PATHS") if isinstance(env, Mapping) else None
    if raw is None:
        return None
    try:
        by_suite = json.loads(raw) if isinstance(raw, str) else raw
    except (json.JSONDecodeError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise TaskShapeError(f"MOZHARNESS_TEST_PATHS is not JSON: {why}") from exc
    return tuple(sorted({p for paths in check_test_paths(by_suite).values() for p in paths}))


def option_collection(treeherder: Mapping[str, Any]) -> str:
    labels = treeherder.get("labels") or list((treeherder.get("collection") or {}).keys())
    return " ".join(sorted(labels)) if labels else "opt"


def run_state_and_result(run: RunShape | None, job_kind: str) -> tuple[str, str]:
    """Treeherder's (state, result) for a Taskcluster run (None: defined, not scheduled)."""
    if run is None:
        return "unscheduled", "unknown"
    if run.state in ("pending", "running"):
        return run.state, "unknown"
    if run.state == "completed":
        pulse_result = "success"
    elif run.state == "failed":
        pulse_result = "fail"
    else:  # exception: the checked shape has no other state
        reason = run.reasonResolved
        pulse_result = reason if reason in ("canceled", "superseded") else "exception"
    results = _TEST_RESULTS if job_kind == "test" else _BUILD_RESULTS
    return "completed", results[pulse_result]


def job_from_task(
    task_id: str,
    task: Mapping[str, Any],
    run_id: int = 0,
    run: Mapping[str, Any] | None = None,
) -> TaskJob:
    """Derive the job of run `run_id` of a task; `run` is that entry of the task's status.
    A malformed definition or run is a `TaskShapeError` naming the field."""
    check_task_id(task_id)
    shape = _treeherder_task(task)
    [checked] = check_runs([run]) if run is not None else [None]
    return _job_from_task(task_id, task, shape, run_id, checked)


def _treeherder_task(task: Any) -> TaskShape:
    """The checked definition of a task Treeherder would show, else `NotATreeherderJob`."""
    if not isinstance(task, Mapping):
        raise TaskShapeError("is not an object")
    extra = task.get("extra")
    treeherder = extra.get("treeherder") if isinstance(extra, Mapping) else None
    if not isinstance(treeherder, Mapping) or "symbol" not in treeherder:
        raise NotATreeherderJob("has no extra.treeherder configuration")
    return check_task(task)


def _job_from_task(
    task_id: str,
    task: Mapping[str, Any],
    shape: TaskShape,
    run_id: int,
    run: RunShape | None,
) -> TaskJob:
    assert shape.extra is not None and shape.extra.treeherder is not None  # _treeherder_task
    treeherder = shape.extra.treeherder
    push = push_from_routes(shape.routes)
    if push is None:
        raise NotATreeherderJob("has no single tc-treeherder route naming its push")
    tags = shape.tags
    machine = treeherder.machine
    platform = Platform(
        os_name=(machine and machine.os) or "-",
        platform=(machine and machine.platform) or shape.workerType or "",
        architecture=(machine and machine.architecture) or "-",
    )
    collection = option_collection(task["extra"]["treeherder"])
    if len(collection) > MAX_OPTION_COLLECTION:
        raise TaskShapeError(
            f"extra.treeherder: option collection {collection[:60]!r} is longer than "
            f"{MAX_OPTION_COLLECTION} characters"
        )
    state, result = run_state_and_result(run, treeherder.jobKind)
    return TaskJob(
        task_id=task_id,
        run_id=run_id,
        push=push,
        task_group_id=shape.taskGroupId or task_id,
        label=shape.metadata.name,
        build_platform=platform,
        machine_platform=platform,
        group_name=treeherder.groupName or "unknown",
        group_symbol=treeherder.groupSymbol or "?",
        job_symbol=treeherder.symbol,
        option_collection=collection,
        tier=treeherder.tier,
        job_kind=treeherder.jobKind,
        task_queue_id=task_queue_id(task),
        state=state,
        result=result,
        reason=treeherder.reason or "scheduled",
        who=shape.metadata.owner or "unknown",
        product_name=treeherder.productName or "unknown",
        machine=(run and run.workerId) or "unknown",
        retriggerable=(tags is not None and (tags.retrigger or "").lower() == "true"),
        action=tags and tags.action,
        parent_task_id=shape.extra.parent,
        test_type=tags and tags.test_type,
        manifests=manifests_from_env(task),
        submit_time=shape.created,
        start_time=run and run.started,
        end_time=run and run.resolved,
    )


def jobs_of_task(task_id: str, task: Mapping[str, Any], runs: Any) -> list[TaskJob]:
    """Every run of a task as a job (one unscheduled job without runs); an exception run
    followed by an automatic rerun is `retry`, as Treeherder shows it. The definition is
    checked first (`NotATreeherderJob` for a task Treeherder would not show), then the runs."""
    check_task_id(task_id)
    shape = _treeherder_task(task)
    listed: list[RunShape | None] = list(check_runs(runs)) or [None]
    jobs = [_job_from_task(task_id, task, shape, run_id, run) for run_id, run in enumerate(listed)]
    last = len(listed) - 1
    return [
        replace(j, result="retry") if j.result == "exception" and j.run_id < last else j
        for j in jobs
    ]
