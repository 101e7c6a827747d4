"""Ingest a push's task group from Taskcluster: its jobs, and the action tasks still at work.

A push's decision task is found in the Index; `listTaskGroup` then gives every task of the
push (retriggers and backfills land in the same group) with its status. Each run becomes
a job row. Action tasks that have not finished are remembered, not stored: the runs they
will create are what a triage pass must count before asking for more.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sheriff.actions.strategies import REGISTRY
from sheriff.ci.taskcluster import TaskclusterClients, TaskclusterNotFound, paginate
from sheriff.model.actions import action_task_signature
from sheriff.model.job import NotATreeherderJob, TaskJob, TaskShapeError, jobs_of_task
from sheriff.model.task_shapes import StatusShape, check_status

log = logging.getLogger(__name__)

UNRESOLVED = frozenset({"unscheduled", "pending", "running"})


@dataclass(frozen=True)
class ActionTaskView:
    """An action task of the group: which action (its name and callback), on what, asking
    for what."""

    task_id: str
    name: str
    callback: str
    target_task_id: str | None
    input: Mapping[str, Any]
    state: str  # Taskcluster task state

    @property
    def unresolved(self) -> bool:
        return self.state in UNRESOLVED


@dataclass
class GroupListing:
    """What one `listTaskGroup` said about a push."""

    decision_task_id: str
    jobs: list[TaskJob]
    action_tasks: list[ActionTaskView]
    labels: dict[str, str]  # task id → label, for every task of the group
    skipped: int = 0
    malformed: list[str] = field(default_factory=list)  # why each malformed task was skipped
    status_keys: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # of `jobs`' tasks
    # The decision task's own definition (it is a member of its group): its scopes are what
    # the actions protocol checks, so it need not be asked for again (`queue.task`).
    decision_task: Mapping[str, Any] | None = None

    def runs_to_come(self) -> Counter[str]:
        """Runs per label that unfinished action tasks will create on this push."""
        counts: Counter[str] = Counter()
        for action in self.action_tasks:
            if not action.unresolved or action.name not in REGISTRY:
                continue
            if action.callback == "retrigger-disabled" and not action.input.get("force"):
                continue  # Gecko refuses to clone a label that should not be retriggered
            target = self.labels.get(action.target_task_id or "")
            counts.update(REGISTRY[action.name]().runs(action.input, [target] if target else []))
        return counts


def find_decision_task(clients: TaskclusterClients, repo: str, revision: str) -> str | None:
    """The decision task of a push, from the Index; None while it does not exist yet."""
    try:
        found = clients.index.findTask(f"gecko.v2.{repo}.revision.{revision}.taskgraph.decision")
    except TaskclusterNotFound:
        return None
    return found.get("taskId")


def _action_view(task_id: str, task: Mapping[str, Any], state: str) -> ActionTaskView | None:
    signature = action_task_signature(task)
    if signature is None or not signature.callback:
        return None
    return ActionTaskView(
        task_id=task_id,
        name=signature.name,
        callback=signature.callback,
        target_task_id=signature.task_id,
        input=signature.input if isinstance(signature.input, Mapping) else {},
        state=state,
    )


def status_key(status: StatusShape) -> tuple[Any, ...]:
    """What identifies a task's status: equal keys mean nothing new to store."""
    runs = status.get("runs", [])
    return (status.get("state"), len(runs), runs[-1]["state"] if runs else None)


def parse_listing(
    decision_task_id: str,
    entries: Iterable[Mapping[str, Any]],
    stored: Mapping[str, tuple[Any, ...]] | None = None,
) -> GroupListing:
    """Jobs of the listed tasks; with `stored` (task id → status key of what is stored),
    only of the tasks whose status changed since."""
    listing = GroupListing(decision_task_id, [], [], {})
    for index, entry in enumerate(entries):
        # One malformed entry must not stop triage of the push: it is skipped and logged,
        # and the rest of the group is read.
        try:
            task, status = entry["task"], check_status(entry["status"])
            if not isinstance(task, Mapping):
                raise TaskShapeError("task: should be an object")
        except (KeyError, TypeError, TaskShapeError) as exc:
            listing.skipped += 1
            listing.malformed.append(f"entry {index}: {exc}")
            continue
        task_id = status["taskId"]
        if task_id == decision_task_id:
            listing.decision_task = task
        metadata = task.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        listing.labels[task_id] = name if isinstance(name, str) else ""
        view = _action_view(task_id, task, status.get("state", "unscheduled"))
        if view is not None:
            listing.action_tasks.append(view)
        key = status_key(status)
        if stored is not None and stored.get(task_id) == key:
            continue
        listing.status_keys[task_id] = key
        try:
            listing.jobs.extend(jobs_of_task(task_id, task, status.get("runs")))
        except NotATreeherderJob:
            listing.skipped += 1
        except TaskShapeError as exc:
            listing.skipped += 1
            listing.malformed.append(f"task {task_id}: {exc}")
    if listing.malformed:
        # Once per listing, not per task: a group of bad tasks is one line in the log.
        log.warning(
            "task group %s: %d malformed tasks skipped (first: %s)",
            decision_task_id,
            len(listing.malformed),
            listing.malformed[0],
        )
    # Gecko leaves some tasks an action created untagged (add-new-jobs; backfill-task
    # without test_manifests): their parent, an action task of the group, says which.
    callbacks = {a.task_id: a.callback for a in listing.action_tasks}
    listing.jobs = [
        replace(j, action=callbacks[j.parent_task_id])
        if j.action is None and j.parent_task_id in callbacks
        else j
        for j in listing.jobs
    ]
    return listing


def list_group(
    clients: TaskclusterClients,
    decision_task_id: str,
    stored: Mapping[str, tuple[Any, ...]] | None = None,
) -> GroupListing:
    """All tasks of the group, through every page of `listTaskGroup` (see `parse_listing`)."""
    entries = paginate(clients.queue.listTaskGroup, decision_task_id, key="tasks")
    return parse_listing(decision_task_id, entries, stored)
