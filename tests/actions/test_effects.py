"""Effects through the request log (Treeherder writes, alerts): each applied exactly once,
across concurrent processes and a crash, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from sheriff.actions import log
from sheriff.actions.effects import (
    EffectRefused,
    EffectSkipped,
    dispatch_effects,
    enqueue_effect,
)
from sheriff.actions.errors import RequestConflict
from sheriff.errors import ServiceError
from sheriff.store.schema import action_request

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
KIND = "test-effect"


class Counting:
    """A sender that counts what it applied, slowly enough for two passes to overlap."""

    def __init__(self, fail: dict[str, Exception] | None = None) -> None:
        self.applied: Counter[str] = Counter()
        self.fail = fail or {}
        self.lock = threading.Lock()

    def send(self, row: log.RequestRow) -> dict:
        time.sleep(0.01)
        if row.idempotency_key in self.fail:
            raise self.fail[row.idempotency_key]
        with self.lock:
            self.applied[row.idempotency_key] += 1
        return {"applied": row.idempotency_key}


def _enqueue(engine: sa.Engine, keys: list[str], *, live: bool = True) -> None:
    with engine.begin() as conn:
        for key in keys:
            enqueue_effect(
                conn, key, KIND, repository="autoland", revision="a" * 40,
                input={"key": key}, live=live, now=T0,
            )  # fmt: skip


def test_two_processes_at_once_apply_each_effect_once(engine: sa.Engine) -> None:
    keys = [f"effect:{i}" for i in range(20)]
    _enqueue(engine, keys)
    sender = Counting()
    threads = [
        threading.Thread(target=dispatch_effects, args=(engine, {KIND: sender}), kwargs={"now": T0})
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sender.applied == Counter({k: 1 for k in keys})
    with engine.connect() as conn:
        rows = log.requests(conn, strategies=[KIND])
    assert {r.state for r in rows} == {"sent"} and len(rows) == 20
    # Taskcluster's dispatch never sees these rows.
    with engine.connect() as conn:
        assert log.requests(conn) == []


def test_enqueue_is_idempotent_and_refuses_another_request_under_the_same_key(engine) -> None:
    _enqueue(engine, ["effect:x"])
    _enqueue(engine, ["effect:x"])
    with engine.begin() as conn:
        assert len(log.requests(conn, strategies=[KIND])) == 1
        with pytest.raises(RequestConflict):
            enqueue_effect(
                conn, "effect:x", KIND, repository="autoland", revision="a" * 40,
                input={"key": "other"}, now=T0,
            )  # fmt: skip


def test_outcomes_skipped_refused_and_an_outage(engine: sa.Engine) -> None:
    _enqueue(engine, ["ok", "person", "refused", "outage"])
    sender = Counting(
        {
            "person": EffectSkipped("classified by aryx@mozilla.com"),
            "refused": EffectRefused("HTTP 400"),
            "outage": ServiceError("no answer"),
        }
    )
    summary = dispatch_effects(engine, {KIND: sender}, now=T0)
    assert (summary.sent, summary.skipped, summary.failed, summary.deferred) == (1, 1, 1, 1)
    with engine.connect() as conn:
        states = {r.idempotency_key: r.state for r in log.requests(conn, strategies=[KIND])}
    assert states == {"ok": "sent", "person": "skipped", "refused": "failed", "outage": "sending"}
    # The outage's row is sent again after the lease, and only then.
    del sender.fail["outage"]
    assert dispatch_effects(engine, {KIND: sender}, now=T0 + timedelta(minutes=1)).sent == 0
    later = dispatch_effects(engine, {KIND: sender}, now=T0 + timedelta(hours=1))
    assert later.sent == 1 and sender.applied["outage"] == 1 and sender.applied["ok"] == 1


def test_dry_run_records_and_a_live_pass_sends_later(engine: sa.Engine) -> None:
    _enqueue(engine, ["effect:dry"], live=False)
    sender = Counting()
    assert dispatch_effects(engine, {KIND: sender}, dry_run=True, now=T0).dry_run == 1
    _enqueue(engine, ["effect:dry"], live=False)  # planned again, still dry
    with engine.connect() as conn:
        assert log.get(conn, "effect:dry").state == "dry-run"
    _enqueue(engine, ["effect:dry"], live=True)  # now meant
    assert dispatch_effects(engine, {KIND: sender}, now=T0).sent == 1
    assert sender.applied["effect:dry"] == 1


def test_a_crash_while_sending_is_settled_after_the_lease(engine: sa.Engine) -> None:
    _enqueue(engine, ["effect:crash"])
    with engine.begin() as conn:
        conn.execute(
            sa.update(action_request)
            .where(action_request.c.idempotency_key == "effect:crash")
            .values(state="sending", updated_at=T0)
        )
    sender = Counting()
    assert dispatch_effects(engine, {KIND: sender}, now=T0 + timedelta(minutes=5)).sent == 0
    assert dispatch_effects(engine, {KIND: sender}, now=T0 + timedelta(minutes=20)).sent == 1
    assert sender.applied["effect:crash"] == 1
