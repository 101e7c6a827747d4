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
    update: RunUpdate | None  # None for a run created as an exception (never shown)

    @property
    def failed(self) -> bool:
        return self.state in ("failed", "exception")


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
    tags = payload.get("task", {}).get("tags", {}) if isinstance(payload, Mapping) else {}
    kind = tags.get("kind") if isinstance(tags, Mapping) else None
    return TaskEvent(
        exchange=exchange,
        repo=pushed[0],
        revision=pushed[1],
        task_id=status["taskId"],
        run_id=run_id,
        state=PULSE_EXCHANGE_STATES[exchange],
        kind=kind if isinstance(kind, str) else None,
        update=run_update(checked),
    )


def run_update(checked: PulseShape) -> RunUpdate | None:
    """The run update a checked message carries; None for a run created as an exception
    (deadline exceeded), which is never shown (as Treeherder)."""
    run_id, status = checked["payload"]["runId"], checked["payload"]["status"]
    run = status["runs"][run_id]
    if run.get("reasonCreated") == "exception" and checked["exchange"].endswith("task-exception"):
        return None
    return RunUpdate(status["taskId"], run_id, run)


def store_events(engine: Engine, events: Sequence[TaskEvent]) -> LoadStats:
    """Record the runs of tasks already stored, in one transaction (others: their listing)."""
    updates = [e.update for e in events if e.update is not None]
    with engine.begin() as conn:
        return apply_run_updates(conn, updates)
