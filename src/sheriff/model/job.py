"""What a Taskcluster task run is as a Treeherder job: pure derivation, no I/O.

The fields follow Treeherder's own transform of a task and its Pulse status (its
taskcluster pulse handler and job loader), so a job here and a job there agree on
platforms, group, symbol, tier, option collection, state and result. Beyond Treeherder,
sheriff keeps what triage needs: the task queue, the action that created the task, its
parent, and the manifests it ran (`MOZHARNESS_TEST_PATHS`).
"""

from __future__ import annotations

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
class PushDetails:
    """Who pushed and what the tip revision says, from Treeherder's push list."""

    author: str | None
    message: str | None

    @classmethod
    def from_treeherder(cls, push: Mapping[str, Any]) -> PushDetails:
        """From one `/api/project/<repo>/push/` result; the tip is the push's `revision`."""
        revisions = [r for r in push.get("revisions") or () if isinstance(r, Mapping)]
        tip = next((r for r in revisions if r.get("revision") == push.get("revision")), None)
        tip = tip or (revisions[0] if revisions else {})
        # Treeherder's serializer says `comments`; its ingestion samples say `comment`.
        message = tip.get("comments", tip.get("comment"))
        author = push.get("author")
        return cls(
            author=author[:255] if isinstance(author, str) and author else None,
            message=message if isinstance(message, str) and message else None,
        )


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
    pushlog_id = int(pushlog) if pushlog and pushlog.isdigit() else None
    if pushlog_id is not None and pushlog_id >= 2**31:
        raise TaskShapeError(
            f"route {matching[0][:120]!r}: pushlog id {pushlog[:30]} is out of range"
        )
    return PushRef(project, revision, pushlog_id)


def task_queue_id(task: Mapping[str, Any]) -> str:
    """`taskQueueId`, or `<provisionerId>/<workerType>` for tasks older than task queues."""
    if task.get("taskQueueId"):
        return str(task["taskQueueId"])
    provisioner, worker_type = task.get("provisionerId"), task.get("workerType")
    if not provisioner or not worker_type:
        raise TaskShapeError("has neither taskQueueId nor provisionerId/workerType")
    return f"{provisioner}/{worker_type}"


def mozharness_test_paths(task: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """`MOZHARNESS_TEST_PATHS` decoded: Gecko's `{suite: [manifest paths]}` object.

    None when the task has none (mozharness then runs the suite's default tests: what the
    label runs on its push, as manifests-by-task.json says). Anything but such an object
    (text that is not JSON, a list, values that are not lists of paths) is a
    TaskShapeError: Gecko never writes it, and guessing what a worker made of it would
    give the job a manifest set nobody can check.
    """
    payload = task.get("payload")
    env = payload.get("env") if isinstance(payload, Mapping) else None
    raw = env.get("MOZHARNESS_TEST_PATHS") if isinstance(env, Mapping) else None
    if not raw:
        return None
    return check_test_paths(raw)


def manifests_from_env(task: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The manifests `MOZHARNESS_TEST_PATHS` says the task runs (None: it does not say)."""
    by_suite = mozharness_test_paths(task)
    if by_suite is None:
        return None
    return tuple(sorted({p for paths in by_suite.values() for p in paths}))


def option_collection(treeherder: Mapping[str, Any]) -> str:
    labels = treeherder.get("labels") or list((treeherder.get("collection") or {}).keys())
    return " ".join(sorted(labels)) if labels else "opt"


def run_state_and_result(run: Mapping[str, Any] | None, job_kind: str) -> tuple[str, str]:
    """Treeherder's (state, result) for a checked Taskcluster run (None: not scheduled)."""
    if run is None:
        return "unscheduled", "unknown"
    state = run["state"]
    if state in ("pending", "running"):
        return state, "unknown"
    if state == "completed":
        pulse_result = "success"
    elif state == "failed":
        pulse_result = "fail"
    else:  # exception: a checked run has no other state
        reason = run.get("reasonResolved")
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
    return _job_from_task(task_id, shape, run_id, checked)


def _treeherder_task(task: Any) -> TaskShape:
    """The checked definition of a task Treeherder would show, else `NotATreeherderJob`."""
    if not isinstance(task, Mapping):
        raise TaskShapeError("is not an object")
    extra = task.get("extra")
    treeherder = extra.get("treeherder") if isinstance(extra, Mapping) else None
    if not isinstance(treeherder, Mapping) or "symbol" not in treeherder:
        raise NotATreeherderJob("has no extra.treeherder configuration")
    return check_task(task)


def _job_from_task(task_id: str, task: TaskShape, run_id: int, run: RunShape | None) -> TaskJob:
    """The job of a checked task and run (`check_task`, `check_runs`)."""
    extra = task["extra"]
    treeherder = extra["treeherder"]
    push = push_from_routes(task.get("routes", []))
    if push is None:
        raise NotATreeherderJob("has no single tc-treeherder route naming its push")
    tags = task.get("tags", {})
    machine = treeherder.get("machine", {})
    platform = Platform(
        os_name=machine.get("os", "-"),
        platform=machine.get("platform", task.get("workerType", "")),
        architecture=machine.get("architecture", "-"),
    )
    collection = option_collection(treeherder)
    if len(collection) > MAX_OPTION_COLLECTION:
        raise TaskShapeError(
            f"extra.treeherder: option collection {collection[:60]!r} is longer than "
            f"{MAX_OPTION_COLLECTION} characters"
        )
    job_kind = treeherder.get("jobKind", "other")
    state, result = run_state_and_result(run, job_kind)
    run = run or {}
    return TaskJob(
        task_id=task_id,
        run_id=run_id,
        push=push,
        task_group_id=task.get("taskGroupId") or task_id,
        label=task["metadata"]["name"],
        build_platform=platform,
        machine_platform=platform,
        group_name=treeherder.get("groupName", "unknown"),
        group_symbol=treeherder.get("groupSymbol", "?"),
        job_symbol=treeherder["symbol"],
        option_collection=collection,
        tier=treeherder.get("tier", 1),
        job_kind=job_kind,
        task_queue_id=task_queue_id(task),
        state=state,
        result=result,
        reason=treeherder.get("reason", "scheduled"),
        who=task["metadata"].get("owner", "unknown"),
        product_name=treeherder.get("productName", "unknown"),
        machine=run.get("workerId", "unknown"),
        retriggerable=tags.get("retrigger", "").lower() == "true",
        action=tags.get("action"),
        parent_task_id=extra.get("parent"),
        test_type=tags.get("test-type"),
        manifests=manifests_from_env(task),
        submit_time=task["created"],
        start_time=run.get("started"),
        end_time=run.get("resolved"),
    )


def jobs_of_task(
    task_id: str, task: Mapping[str, Any], runs: list[RunShape] | None
) -> list[TaskJob]:
    """Every run of a task as a job (one unscheduled job without runs); an exception run
    followed by an automatic rerun is `retry`, as Treeherder shows it. `runs` are checked
    already (`check_status`, `check_runs`); the definition is checked here
    (`NotATreeherderJob` for a task Treeherder would not show)."""
    check_task_id(task_id)
    shape = _treeherder_task(task)
    listed: list[RunShape | None] = list(runs) if runs else [None]
    jobs = [_job_from_task(task_id, shape, run_id, run) for run_id, run in enumerate(listed)]
    last = len(listed) - 1
    return [
        replace(j, result="retry") if j.result == "exception" and j.run_id < last else j
        for j in jobs
    ]
