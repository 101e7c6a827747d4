"""Effects other than Taskcluster actions, through the same request log.

Treeherder write-back (classifications, bug links, notes) and alerts share the
`action_request` table, its idempotency keys and its state machine with the actions:
a row is written (requested) inside the transaction that decided it, claimed
(requested → sending, a conditional UPDATE: one process only) before it is sent, and
settled after (sent, skipped, failed). Each kind has a sender. A sender's `send` is
idempotent on the row: it looks before it writes (a Treeherder note carrying the
request's reference, a Matrix transaction id, an SMTP Message-ID), so a `sending` row
left by a crash is simply sent again after the lease, and what reached the other side
the first time is found rather than written twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy.engine import Connection, Engine

from sheriff.actions.errors import RequestConflict
from sheriff.actions.log import (
    DEFAULT_LEASE,
    DRY_RUN,
    FAILED,
    REQUESTED,
    SENDING,
    SENT,
    SKIPPED,
    RequestRow,
    _now,
    _owner,
    _update,
    get,
    insert_once,
    requests,
)
from sheriff.errors import ServiceError
from sheriff.model.actions import canonical_json
from sheriff.store.schema import action_request


class EffectSkipped(Exception):
    """The effect must not be applied (say why): the row ends `skipped`."""


class EffectRefused(Exception):
    """The other side refused the effect for good (a 4xx): the row ends `failed`."""


class EffectSender(Protocol):
    """Applies one kind of effect; `send` must find an earlier application of the same
    row (by `reference(row)`) and answer it instead of applying it twice."""

    def send(self, row: RequestRow) -> Any: ...


def reference(row: RequestRow) -> str:
    """A short stable reference of a request, carried by what it writes outside."""
    return hashlib.sha1(row.idempotency_key.encode()).hexdigest()[:12]


def enqueue_effect(
    conn: Connection,
    key: str,
    kind: str,
    *,
    repository: str,
    revision: str,
    input: Any,
    task_id: str | None = None,
    live: bool = True,
    now: datetime | None = None,
) -> RequestRow:
    """Record an effect to apply, once per key, inside the caller's transaction.

    A `dry-run` row becomes `requested` again when the caller is live now.
    """
    now = _now(now)
    row = insert_once(
        conn, key, kind, kind, repository=repository, revision=revision, task_id=task_id,
        input=input, now=now,
    )  # fmt: skip
    if row.strategy != kind or canonical_json(row.input) != canonical_json(input):
        raise RequestConflict(f"idempotency key {key!r} already names another request")
    if row.state == DRY_RUN and live:
        _update(conn, row.id, {"state": REQUESTED, "reason": None}, expect_state=DRY_RUN, now=now)
        row = get(conn, key)
        assert row is not None
    return row


@dataclass
class EffectSummary:
    sent: int = 0
    skipped: int = 0
    failed: int = 0
    dry_run: int = 0
    deferred: int = 0  # an outage: tried again on a later pass


def dispatch_effects(
    engine: Engine,
    senders: Mapping[str, EffectSender],
    *,
    dry_run: bool = False,
    lease: timedelta = DEFAULT_LEASE,
    now: datetime | None = None,
) -> EffectSummary:
    """Apply every `requested` effect of the kinds in `senders` (and those a crash left
    `sending` for longer than `lease`), each exactly once."""
    summary = EffectSummary()
    owner = _owner()
    cutoff = _now(now) - lease
    kinds = list(senders)
    with engine.connect() as conn:
        with conn.begin():
            stale = [
                r
                for r in requests(conn, states=[SENDING], strategies=kinds)
                if r.updated_at <= cutoff
            ]
            for row in stale:
                guard = [action_request.c.updated_at == row.updated_at]
                _update(
                    conn,
                    row.id,
                    {"state": REQUESTED, "reason": "sent again after a crash: looked first"},
                    expect_state=SENDING,
                    also=guard,
                    now=now,
                )
            pending = requests(conn, states=[REQUESTED], strategies=kinds)
        for row in pending:
            _apply(
                conn,
                senders[row.strategy],
                row,
                dry_run=dry_run,
                owner=owner,
                now=now,
                summary=summary,
            )
    return summary


def _apply(
    conn: Connection,
    sender: EffectSender,
    row: RequestRow,
    *,
    dry_run: bool,
    owner: str,
    now: datetime | None,
    summary: EffectSummary,
) -> None:
    def finish(values: dict[str, Any]) -> None:
        with conn.begin():
            _update(
                conn, row.id, values, expect_state=SENDING if not dry_run else REQUESTED, now=now
            )

    if dry_run:
        finish({"state": DRY_RUN})
        summary.dry_run += 1
        return
    with conn.begin():
        claimed = _update(
            conn,
            row.id,
            {"state": SENDING, "claimed_by": owner, "attempts": action_request.c.attempts + 1},
            expect_state=REQUESTED,
            now=now,
        )
    if not claimed:
        return  # another process has it
    try:
        answer = sender.send(row)
    except EffectSkipped as exc:
        finish({"state": SKIPPED, "reason": str(exc)})
        summary.skipped += 1
        return
    except EffectRefused as exc:
        finish({"state": FAILED, "reason": str(exc)})
        summary.failed += 1
        return
    except ServiceError as exc:
        # Perhaps applied, perhaps not: the row stays `sending` until the lease ends, then
        # it is sent again, and the sender looks for the first application first.
        with conn.begin():
            _update(conn, row.id, {"reason": f"not settled: {exc}"}, expect_state=SENDING, now=now)
        summary.deferred += 1
        return
    finish({"state": SENT, "payload": answer, "reason": None})
    summary.sent += 1
