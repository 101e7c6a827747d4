"""Taskcluster Pulse messages (the queue's task-* exchanges) into run updates and pushes.

A message is a hint, not the truth: it names a run of a task and the push (repository and
revision) the task belongs to, read from its `tc-treeherder.v2.<repo>.<revision>.<id>`
route. Its run state is stored when the task is (a later listing rewrites it as
Taskcluster has it), and the push pass it leads to reads the task group itself, so a
message that comes twice or out of order changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from sheriff.model.job import PULSE_EXCHANGE_STATES, TaskShapeError
from sheriff.model.task_shapes import PulseShape, check_pulse_message
from sheriff.store.loader import LoadStats, RunUpdate, apply_run_updates

TREEHERDER_ROUTE = "route.tc-treeherder.v2."
# Exceptions the queue answers with a new run at once while the task has retries left.
RETRIED_REASONS = ("worker-shutdown", "claim-expired", "intermittent-task")
# What the service listens to: a run resolved. Pending and running change no case.
RESOLVED_EXCHANGES = tuple(
    name
    for name, state in PULSE_EXCHANGE_STATES.items()
    if state in ("completed", "failed", "exception")
)


@dataclass(frozen=True)
class TaskEvent:
    """One checked message: a run of a task of a push resolved."""

    exchange: str
    repo: str
    revision: str
    task_id: str
    run_id: int
    state: str  # completed | failed | exception
    kind: str | None  # tags.kind (test, build, …) when the message carries the tags
    label: str | None  # tags.label, likewise
    # Every run the message's status lists (a rerun the queue made at once is news too),
    # less those created as an exception (never shown).
    updates: tuple[RunUpdate, ...]

    retried: bool = False  # an exception the queue reruns at once: its rerun is the news

    @property
    def failed(self) -> bool:
        return self.state in ("failed", "exception") and not self.retried


def push_of(routes: Iterable[str]) -> tuple[str, str] | None:
    """(repository, revision) from a task's Treeherder route, if it has one."""
    for route in routes:
        if route.startswith(TREEHERDER_ROUTE):
            parts = route[len(TREEHERDER_ROUTE) :].split(".")
            if len(parts) >= 2 and parts[0] and parts[1]:
                return parts[0], parts[1]
    return None


def event_of(exchange: str, payload: Any, routes: Sequence[str]) -> TaskEvent:
    """The event of one delivered message (its exchange, JSON body and CC routing keys);
    a `TaskShapeError` saying why when it is not a resolved-run message of a push."""
    checked = check_pulse_message(
        {"exchange": exchange, "payload": payload}, dict.fromkeys(RESOLVED_EXCHANGES)
    )
    pushed = push_of(routes)
    if pushed is None:
        raise TaskShapeError("no route.tc-treeherder.v2.<repo>.<revision>.* routing key")
    run_id, status = checked["payload"]["runId"], checked["payload"]["status"]
    retried = (
        PULSE_EXCHANGE_STATES[exchange] == "exception"
        and status["runs"][run_id].get("reasonResolved") in RETRIED_REASONS
        and _retries_left(payload) > 0
    )
    tags = payload.get("task", {}).get("tags", {}) if isinstance(payload, Mapping) else {}
    kind = tags.get("kind") if isinstance(tags, Mapping) else None
    label = tags.get("label") if isinstance(tags, Mapping) else None
    return TaskEvent(
        exchange=exchange,
        repo=pushed[0],
        revision=pushed[1],
        task_id=status["taskId"],
        run_id=run_id,
        state=PULSE_EXCHANGE_STATES[exchange],
        kind=kind if isinstance(kind, str) else None,
        label=label if isinstance(label, str) else None,
        # A retried exception is not stored alone: as the last run of its task it would
        # look like a case until its rerun is known (the push's next listing stores both).
        updates=()
        if retried
        else tuple(
            u for u in (run_update(checked, i) for i in range(len(status["runs"]))) if u is not None
        ),
        retried=retried,
    )


def _retries_left(payload: Mapping[str, Any]) -> int:
    # Not a field the status check keeps: read from the message as it came.
    left = payload["status"].get("retriesLeft")
    return left if isinstance(left, int) and not isinstance(left, bool) else 0


def run_update(checked: PulseShape, run_id: int | None = None) -> RunUpdate | None:
    """The update of run `run_id` (default: the message's own) of a checked message; None
    for a run created as an exception (deadline exceeded), never shown (as Treeherder)."""
    status = checked["payload"]["status"]
    run_id = checked["payload"]["runId"] if run_id is None else run_id
    run = status["runs"][run_id]
    if run.get("reasonCreated") == "exception" and (
        run_id != checked["payload"]["runId"] or checked["exchange"].endswith("task-exception")
    ):
        return None
    return RunUpdate(status["taskId"], run_id, run)


def store_events(engine: Engine, events: Sequence[TaskEvent]) -> LoadStats:
    """Record the runs of tasks already stored, in one transaction (others: their listing)."""
    updates = [u for e in events for u in e.updates]
    with engine.begin() as conn:
        return apply_run_updates(conn, updates)
