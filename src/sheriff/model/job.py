"""What a Taskcluster task run is as a Treeherder job: pure derivation, no I/O.

The fields follow Treeherder's own transform of a task and its Pulse status (its
taskcluster pulse handler and job loader), so a job here and a job there agree on
platforms, group, symbol, tier, option collection, state and result. Beyond Treeherder,
sheriff keeps what triage needs: the task queue, the action that created the task, its
parent, and the manifests it ran (`MOZHARNESS_TEST_PATHS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import slugid

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


class TaskShapeError(ValueError):
    """A task definition or status is malformed; the message says what."""


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


def parse_time(value: str | None) -> datetime | None:
    """Taskcluster's ISO 8601 timestamps ("2019-06-26T19:13:51.402Z") as aware datetimes."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def push_from_routes(routes: list[str]) -> PushRef | None:
    """The push of a task from its single `tc-treeherder` route, or None without one."""
    matching = [r for r in routes if r.split(".")[0] == "tc-treeherder"]
    if len(matching) != 1:
        return None
    parts = matching[0].split(".")
    # v2: tc-treeherder.v2.<project>.<revision>.<pushlog id>; v1: tc-treeherder.<project>.<rev>
    if parts[1] == "v2" and len(parts) >= 4:
        pushlog = parts[4] if len(parts) > 4 else None
        return PushRef(parts[2], parts[3], int(pushlog) if pushlog and pushlog.isdigit() else None)
    if len(parts) >= 3:
        return PushRef(parts[1], parts[2], None)
    return None


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
    raw = (task.get("payload") or {}).get("env", {}).get("MOZHARNESS_TEST_PATHS")
    if raw is None:
        return None
    try:
        by_suite = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise TaskShapeError(f"MOZHARNESS_TEST_PATHS is not JSON: {exc.msg}") from exc
    if not isinstance(by_suite, dict) or not all(isinstance(v, list) for v in by_suite.values()):
        raise TaskShapeError("MOZHARNESS_TEST_PATHS is not an object of lists")
    return tuple(sorted({str(p) for paths in by_suite.values() for p in paths}))


def option_collection(treeherder: Mapping[str, Any]) -> str:
    labels = treeherder.get("labels") or list((treeherder.get("collection") or {}).keys())
    return " ".join(sorted(labels)) if labels else "opt"


def run_state_and_result(run: Mapping[str, Any] | None, job_kind: str) -> tuple[str, str]:
    """Treeherder's (state, result) for a Taskcluster run (None: defined, not scheduled)."""
    if run is None:
        return "unscheduled", "unknown"
    tc_state = run.get("state", "unscheduled")
    if tc_state in ("unscheduled", "pending", "running"):
        return tc_state, "unknown"
    if tc_state == "completed":
        pulse_result = "success"
    elif tc_state == "failed":
        pulse_result = "fail"
    elif tc_state == "exception":
        reason = run.get("reasonResolved")
        pulse_result = reason if reason in ("canceled", "superseded") else "exception"
    else:
        raise TaskShapeError(f"run state {tc_state!r} is not a Taskcluster run state")
    results = _TEST_RESULTS if job_kind == "test" else _BUILD_RESULTS
    return "completed", results[pulse_result]


def job_from_task(
    task_id: str,
    task: Mapping[str, Any],
    run_id: int = 0,
    run: Mapping[str, Any] | None = None,
) -> TaskJob:
    """Derive the job of run `run_id` of a task; `run` is that entry of the task's status."""
    try:
        return _job_from_task(task_id, task, run_id, run)
    except (KeyError, TypeError, AttributeError) as exc:
        raise TaskShapeError(
            f"malformed task definition ({exc.__class__.__name__}: {exc})"
        ) from exc


def _job_from_task(
    task_id: str, task: Mapping[str, Any], run_id: int, run: Mapping[str, Any] | None
) -> TaskJob:
    treeherder = (task.get("extra") or {}).get("treeherder")
    if not isinstance(treeherder, Mapping) or "symbol" not in treeherder:
        raise NotATreeherderJob("has no extra.treeherder configuration")
    push = push_from_routes(list(task.get("routes") or []))
    if push is None:
        raise NotATreeherderJob("has no single tc-treeherder route naming its push")
    submit_time = parse_time(task.get("created"))
    if submit_time is None:
        raise TaskShapeError("has no 'created' time")
    tags = task.get("tags") or {}
    machine = treeherder.get("machine") or {}
    platform = Platform(
        os_name=machine.get("os", "-"),
        platform=machine.get("platform", task.get("workerType", "")),
        architecture=machine.get("architecture", "-"),
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
        job_symbol=str(treeherder["symbol"]),
        option_collection=option_collection(treeherder),
        tier=int(treeherder.get("tier", 1)),
        job_kind=job_kind,
        task_queue_id=task_queue_id(task),
        state=state,
        result=result,
        reason=treeherder.get("reason", "scheduled"),
        who=(task.get("metadata") or {}).get("owner", "unknown"),
        product_name=treeherder.get("productName", "unknown"),
        machine=run.get("workerId", "unknown"),
        retriggerable=str(tags.get("retrigger", "")).lower() == "true",
        action=tags.get("action"),
        parent_task_id=(task.get("extra") or {}).get("parent"),
        test_type=tags.get("test-type"),
        manifests=manifests_from_env(task),
        submit_time=submit_time,
        start_time=parse_time(run.get("started")),
        end_time=parse_time(run.get("resolved")),
    )


def jobs_of_task(
    task_id: str, task: Mapping[str, Any], runs: list[Mapping[str, Any]] | None
) -> list[TaskJob]:
    """Every run of a task as a job (one unscheduled job without runs); an exception run
    followed by an automatic rerun is `retry`, as Treeherder shows it."""
    listed: list[Mapping[str, Any] | None] = list(runs) if runs else [None]
    jobs = [job_from_task(task_id, task, run_id, run) for run_id, run in enumerate(listed)]
    last = len(listed) - 1
    return [
        replace(j, result="retry") if j.result == "exception" and j.run_id < last else j
        for j in jobs
    ]
