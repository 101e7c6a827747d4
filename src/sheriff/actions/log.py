"""The request log: exactly-once action requests on top of an at-least-once world.

`enqueue` writes a request (idempotent on its key, inside the caller's transaction).
`dispatch` sends what is `requested`: it claims a row (requested → sending, committed)
before `triggerHook` and records the action task after (sending → sent), so a crash in
between leaves a `sending` row. Such a row is reconciled before anything is sent again:
the push's task group is searched for an action task with the same action, target task
and input that no other request owns; found → `sent`, not found → `requested` again.
The claim is a conditional UPDATE, so two processes never both send one request.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from sheriff.actions.errors import ActionError, RequestConflict
from sheriff.actions.protocol import ActionsProtocol, PreparedAction
from sheriff.actions.strategies import REGISTRY, DryRun, strategy
from sheriff.ci.taskcluster import TaskclusterError
from sheriff.errors import InputError
from sheriff.model.actions import canonical_json
from sheriff.store.schema import action_request

REQUESTED, SENDING, SENT, FAILED, DRY_RUN = "requested", "sending", "sent", "failed", "dry-run"
# An effect that must not be applied after all (a person classified the job first).
SKIPPED = "skipped"
STATES = (REQUESTED, SENDING, SENT, FAILED, DRY_RUN, SKIPPED)

# A `sending` row younger than this may still be in the hands of a live process.
DEFAULT_LEASE = timedelta(minutes=15)


def lease_of(settings: Any) -> timedelta:
    """The lease `sheriff.config.Settings` asks for (`actions_lease_minutes`)."""
    return timedelta(minutes=settings.actions_lease_minutes)


@dataclass(frozen=True)
class RequestRow:
    """One row of the request log."""

    id: int
    idempotency_key: str
    strategy: str
    action: str
    repository: str
    revision: str
    decision_task_id: str | None
    task_id: str | None
    labels: list[str]
    input: Any
    state: str
    hook: str | None
    payload: Any
    action_task_id: str | None
    reason: str | None
    attempts: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_mapping(cls, row: Any) -> RequestRow:
        fields = cls.__dataclass_fields__
        return cls(**{name: row[name] for name in fields})


def _now(now: datetime | None = None) -> datetime:
    # The caller's clock (a triage pass's `now`: CI's time, or the simulator's) when it
    # has one; the wall clock only for a request made by hand.
    return now or datetime.now(UTC)


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"[:100]


def _insert(conn: Connection) -> Any:
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif conn.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - sheriff supports these two backends
        raise InputError(f"unsupported database backend {conn.dialect.name}")
    return insert(action_request)


def get(conn: Connection, key: str) -> RequestRow | None:
    """The request with idempotency key `key`, if any."""
    row = (
        conn.execute(sa.select(action_request).where(action_request.c.idempotency_key == key))
        .mappings()
        .first()
    )
    return RequestRow.from_mapping(row) if row else None


def requests(
    conn: Connection,
    *,
    repository: str | None = None,
    revision: str | None = None,
    states: Collection[str] | None = None,
    keys: Collection[str] | None = None,
    strategies: Collection[str] | None = None,
) -> list[RequestRow]:
    """Requests, oldest first, filtered by push, state, key and strategy.

    By default the Taskcluster action requests only; the other effects in the log
    (Treeherder writes, alerts: `sheriff.actions.effects`) are asked for by their kind.
    """
    query = sa.select(action_request).order_by(action_request.c.id)
    strategies = list(REGISTRY) if strategies is None else strategies
    if repository is not None:
        query = query.where(action_request.c.repository == repository)
    if revision is not None:
        query = query.where(action_request.c.revision == revision)
    if states is not None:
        query = query.where(action_request.c.state.in_(list(states)))
    if keys is not None:
        query = query.where(action_request.c.idempotency_key.in_(list(keys)))
    query = query.where(action_request.c.strategy.in_(list(strategies)))
    return [RequestRow.from_mapping(r) for r in conn.execute(query).mappings()]


def enqueue(
    conn: Connection,
    key: str,
    strategy_name: str,
    *,
    repository: str,
    revision: str,
    task_id: str | None,
    input: Any,
    labels: Sequence[str] = (),
    decision_task_id: str | None = None,
    now: datetime | None = None,
) -> RequestRow:
    """Record a request to send, once per key; runs inside the caller's transaction.

    The same key again returns the existing row (a `dry-run` row becomes `requested`
    again: the caller now means it). The same key for a different request is an error.
    """
    chosen = strategy(strategy_name)
    if chosen.push_level and task_id is not None:
        raise InputError(f"{strategy_name} is a push-level action: it takes no task id")
    if not chosen.push_level and chosen.sends and task_id is None:
        raise InputError(f"{strategy_name} acts on a task: give its task id")
    if not chosen.sends:
        raise InputError("dry-run is a way of dispatching, not a request: enqueue the real one")
    now = _now(now)
    row = insert_once(
        conn,
        key,
        strategy_name,
        chosen.action,
        repository=repository,
        revision=revision,
        task_id=task_id,
        input=input,
        labels=labels,
        decision_task_id=decision_task_id,
        now=now,
    )
    same = (
        row.strategy == strategy_name
        and row.repository == repository
        and row.revision == revision
        and row.task_id == task_id
        and canonical_json(row.input) == canonical_json(input)
    )
    if not same:
        raise RequestConflict(
            f"idempotency key {key!r} already names another request "
            f"({row.strategy} on {row.task_id or row.revision[:12]}, state {row.state})"
        )
    if row.state == DRY_RUN:
        _update(conn, row.id, {"state": REQUESTED, "reason": None}, expect_state=DRY_RUN, now=now)
        row = get(conn, key)
        assert row is not None
    return row


def insert_once(
    conn: Connection,
    key: str,
    strategy_name: str,
    action: str,
    *,
    repository: str,
    revision: str,
    task_id: str | None,
    input: Any,
    labels: Sequence[str] = (),
    decision_task_id: str | None = None,
    now: datetime,
) -> RequestRow:
    """Insert a `requested` row unless one with `key` exists; the row either way."""
    values = {
        "idempotency_key": key,
        "strategy": strategy_name,
        "action": action,
        "repository": repository,
        "revision": revision,
        "decision_task_id": decision_task_id,
        "task_id": task_id,
        "labels": list(labels),
        "input": input,
        "state": REQUESTED,
        "attempts": 0,
        "created_at": now,
        "updated_at": now,
    }
    conn.execute(_insert(conn).values(**values).on_conflict_do_nothing())
    row = get(conn, key)
    assert row is not None  # inserted now, or there before
    return row


def _update(
    conn: Connection,
    request_id: int,
    values: dict[str, Any],
    *,
    expect_state: str,
    also: Iterable[Any] = (),
    now: datetime | None = None,
) -> bool:
    """Change a row only if it is still in `expect_state`; True when it was."""
    query = (
        sa.update(action_request)
        .where(action_request.c.id == request_id, action_request.c.state == expect_state, *also)
        .values(updated_at=_now(now), **values)
    )
    return conn.execute(query).rowcount == 1


def runs_requested(
    conn: Connection,
    repository: str,
    revision: str,
    *,
    exclude_action_tasks: Collection[str] = (),
) -> dict[str, int]:
    """Runs per label that sheriff asked for on a push and whose tasks may not exist yet.

    Counts requests not yet sent and sent ones whose action task is not in
    `exclude_action_tasks` (pass the action tasks you already counted from the task group).
    """
    counts: Counter[str] = Counter()
    for row in requests(conn, repository=repository, revision=revision):
        pending = row.state in (REQUESTED, SENDING)
        unseen = row.state == SENT and row.action_task_id not in exclude_action_tasks
        if (pending or unseen) and row.strategy in REGISTRY:
            counts.update(strategy(row.strategy).runs(row.input, row.labels))
    return dict(counts)


def requeue(conn: Connection, key: str, *, now: datetime | None = None) -> RequestRow:
    """Put a failed request back in the queue (a person decided to try again)."""
    row = get(conn, key)
    if row is None:
        raise InputError(f"no request with key {key!r}")
    values = {"state": REQUESTED, "reason": None}
    if not _update(conn, row.id, values, expect_state=FAILED, now=now):
        raise InputError(f"request {key!r} is {row.state}, not failed")
    return get(conn, key)  # type: ignore[return-value]


# -- sending -----------------------------------------------------------------------------


def _owned_action_tasks(conn: Connection, decision_task_id: str) -> set[str]:
    found = conn.execute(
        sa.select(action_request.c.action_task_id).where(
            action_request.c.decision_task_id == decision_task_id,
            action_request.c.action_task_id.is_not(None),
        )
    )
    return {task_id for (task_id,) in found}


def _prepared_from_row(row: RequestRow) -> PreparedAction:
    hook_group_id, _, hook_id = (row.hook or "/").partition("/")
    callback = None
    if isinstance(row.payload, dict):
        callback = ((row.payload.get("decision") or {}).get("action") or {}).get("cb_name")
    return PreparedAction(
        name=row.action,
        decision_task_id=row.decision_task_id or "",
        task_id=row.task_id,
        input=row.input,
        hook_group_id=hook_group_id,
        hook_id=hook_id,
        payload=row.payload,
        callback=callback,
    )


def reconcile(
    engine: Engine,
    protocol: ActionsProtocol,
    *,
    lease: timedelta = DEFAULT_LEASE,
    keys: Collection[str] | None = None,
    now: datetime | None = None,
) -> list[RequestRow]:
    """Settle `sending` rows older than `lease` against their push's task group."""
    cutoff = _now(now) - lease
    with engine.connect() as conn:
        stale = [r for r in requests(conn, states=[SENDING], keys=keys) if r.updated_at <= cutoff]
    settled = []
    by_decision: dict[str, list[RequestRow]] = {}
    for row in stale:
        by_decision.setdefault(row.decision_task_id or "", []).append(row)
    for decision_task_id, rows in by_decision.items():
        with engine.connect() as conn:
            owned = _owned_action_tasks(conn, decision_task_id)
        try:
            action_tasks = protocol.action_tasks(decision_task_id) if decision_task_id else []
        except TaskclusterError:
            continue  # cannot look now: the rows stay `sending` until a pass that can
        for row in rows:
            prepared = _prepared_from_row(row)
            names = {prepared.name} | ({prepared.callback} if prepared.callback else set())
            match = next(
                (
                    t.task_id
                    for t in action_tasks
                    if t.task_id not in owned
                    and any(t.signature.matches(n, row.task_id, row.input) for n in names)
                ),
                None,
            )
            guard = [action_request.c.updated_at == row.updated_at]
            with engine.begin() as conn:
                if match:
                    changed = _update(
                        conn,
                        row.id,
                        {"state": SENT, "action_task_id": match, "reason": "reconciled"},
                        expect_state=SENDING,
                        also=guard,
                        now=now,
                    )
                    if changed:
                        owned.add(match)
                else:
                    _update(
                        conn,
                        row.id,
                        {"state": REQUESTED, "reason": "reconciled: no action task found"},
                        expect_state=SENDING,
                        also=guard,
                        now=now,
                    )
                settled.append(get(conn, row.idempotency_key))
    return [r for r in settled if r is not None]


def dispatch(
    engine: Engine,
    protocol: ActionsProtocol,
    *,
    dry_run: bool = False,
    keys: Collection[str] | None = None,
    lease: timedelta = DEFAULT_LEASE,
    on_result: Callable[[RequestRow], None] | None = None,
    now: datetime | None = None,
) -> list[RequestRow]:
    """Send (or, dry, record) every `requested` request, after reconciling stale ones.

    Returns the rows it settled, in their new state. Requests whose protocol check fails
    become `failed` with the reason; a Taskcluster outage while preparing leaves them
    `requested` for the next pass. `now` is the caller's clock (default: the wall clock).
    """
    if not dry_run:
        reconcile(engine, protocol, lease=lease, keys=keys, now=now)
    owner = _owner()
    results = []
    # One connection for the pass, one short transaction per step: nothing is held open
    # while Taskcluster is being called.
    with engine.connect() as conn:
        with conn.begin():
            pending = requests(conn, states=[REQUESTED], keys=keys)
        for row in pending:
            settled = _dispatch_one(conn, protocol, row, dry_run=dry_run, owner=owner, now=now)
            if settled is not None:
                results.append(settled)
                if on_result:
                    on_result(settled)
    return results


def _dispatch_one(
    conn: Connection,
    protocol: ActionsProtocol,
    row: RequestRow,
    *,
    dry_run: bool,
    owner: str,
    now: datetime | None,
) -> RequestRow | None:
    def finish(expect_state: str, values: dict[str, Any]) -> RequestRow | None:
        with conn.begin():
            _update(conn, row.id, values, expect_state=expect_state, now=now)
            return get(conn, row.idempotency_key)

    try:
        chosen = strategy(row.strategy)
    except InputError as exc:  # a strategy this version of sheriff no longer has
        return finish(REQUESTED, {"state": FAILED, "reason": str(exc)})
    sender = DryRun() if dry_run else chosen
    try:
        decision_task_id = row.decision_task_id or protocol.decision_task(
            row.repository, row.revision
        )
        prepared = protocol.prepare(
            chosen.action, decision_task_id=decision_task_id, task_id=row.task_id, input=row.input
        )
    except ActionError as exc:
        return finish(REQUESTED, {"state": FAILED, "reason": str(exc)})
    except TaskclusterError as exc:
        # An outage, not a verdict on the request: keep it for the next pass.
        return finish(REQUESTED, {"reason": f"not sent yet: {exc}"})
    recorded = {
        "decision_task_id": decision_task_id,
        "hook": prepared.hook,
        "payload": prepared.payload,
        "reason": None,
    }
    if not sender.sends:
        return finish(REQUESTED, {**recorded, "state": DRY_RUN})
    with conn.begin():
        claimed = _update(
            conn,
            row.id,
            {
                **recorded,
                "state": SENDING,
                "claimed_by": owner,
                "attempts": action_request.c.attempts + 1,
            },
            expect_state=REQUESTED,
            now=now,
        )
    if not claimed:
        return None  # another process has it, or settled it meanwhile

    def owned() -> set[str]:
        with conn.begin():
            return _owned_action_tasks(conn, decision_task_id)

    try:
        action_task_id = sender.send(protocol, prepared, known_action_tasks=owned)
    except ActionError as exc:
        return finish(SENDING, {"state": FAILED, "reason": str(exc)})
    return finish(SENDING, {"state": SENT, "action_task_id": action_task_id})
