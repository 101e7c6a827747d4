"""Alerts over real local servers, through the request log: sent once, never repeated
by a restart, never dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from sheriff.actions.effects import dispatch_effects, enqueue_effect, reference
from sheriff.actions.log import get
from sheriff.notify import ALERT, AlertSender
from sheriff.notify.matrix import MatrixChannel
from sheriff.notify.smtp import SmtpChannel
from sheriff.store.schema import action_request
from sheriff.triage.alerts import message

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)

REGRESSION = {
    "id": 7,
    "repository": "autoland",
    "status": "culprit",
    "tests": ["dom/base/test/browser_a.js", "dom/base/test/browser_b.js"],
    "failure_lines": [],
    "configurations": ["linux1804-64-qr/opt", "windows11-64-24h2/debug"],
    "labels": [],
    "first_push": {"revision": "f" * 40},
    "culprit": {
        "revision": "c0ffee" + "0" * 34,
        "author": "dev@example.test",
        "message": "Bug 1900011 - make the frobnicator faster r=reviewer\n\nDetails.",
    },
    "stopped_push": None,
    "cases": [{}, {}, {}],
}


def _enqueue(engine: sa.Engine, key: str, channel: str, event: str = "confirmed") -> None:
    subject, body = message(REGRESSION, event, "http://sheriff.test")
    with engine.begin() as conn:
        enqueue_effect(
            conn,
            key,
            ALERT,
            repository="autoland",
            revision="f" * 40,
            input={
                "channel": channel,
                "event": event,
                "regression_id": 7,
                "culprit": REGRESSION["culprit"]["revision"],
                "subject": subject,
                "body": body,
            },
            now=T0,
        )


def test_the_message_says_what_to_do() -> None:
    subject, body = message(REGRESSION, "confirmed", "http://sheriff.test")
    assert "regression 7 confirmed" in subject
    for needed in (
        "dom/base/test/browser_a.js",
        "linux1804-64-qr/opt, windows11-64-24h2/debug",
        "c0ffee",
        "dev@example.test",
        "make the frobnicator faster",
        "back out c0ffee",
        "http://sheriff.test/api/regressions/7",
    ):
        assert needed in body


def test_smtp_alert_is_sent_once(sqlite_engine: sa.Engine, smtp_server) -> None:
    channel = SmtpChannel(smtp_server.host, smtp_server.port, "sheriff@test", ["sheriffs@test"])
    senders = {ALERT: AlertSender({"smtp": channel})}
    _enqueue(sqlite_engine, "alert:7:confirmed:smtp", "smtp")
    first = dispatch_effects(sqlite_engine, senders, now=T0)
    again = dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(hours=1))
    _enqueue(sqlite_engine, "alert:7:confirmed:smtp", "smtp")  # planned again: same key
    third = dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(hours=2))
    assert (first.sent, again.sent, third.sent) == (1, 0, 0)
    assert len(smtp_server.messages) == 1
    mail = smtp_server.messages[0]
    with sqlite_engine.connect() as conn:
        row = get(conn, "alert:7:confirmed:smtp")
    assert row is not None and row.state == "sent"
    assert mail["Message-ID"] == f"<{reference(row)}@sheriff>"
    assert "regression 7 confirmed" in mail["Subject"]
    assert "back out c0ffee" in mail.get_payload()


def test_smtp_outage_keeps_the_alert_for_later(sqlite_engine: sa.Engine, smtp_server) -> None:
    down = SmtpChannel("127.0.0.1", 1, "sheriff@test", ["sheriffs@test"])  # nothing listens
    _enqueue(sqlite_engine, "alert:7:stopped:smtp", "smtp", event="stopped")
    failed = dispatch_effects(sqlite_engine, {ALERT: AlertSender({"smtp": down})}, now=T0)
    assert failed.deferred == 1 and not smtp_server.messages
    up = SmtpChannel(smtp_server.host, smtp_server.port, "sheriff@test", ["sheriffs@test"])
    senders = {ALERT: AlertSender({"smtp": up})}
    # Within the lease the row may still be another process's: left alone.
    assert dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(minutes=1)).sent == 0
    later = dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(hours=1))
    assert later.sent == 1 and len(smtp_server.messages) == 1  # not dropped


def test_matrix_alert_is_sent_once(sqlite_engine: sa.Engine, synapse) -> None:
    channel = MatrixChannel(synapse.url, synapse.access_token, synapse.room_id)
    senders = {ALERT: AlertSender({"matrix": channel})}
    before = len(synapse.messages())
    _enqueue(sqlite_engine, "alert:7:confirmed:matrix", "matrix")
    assert dispatch_effects(sqlite_engine, senders, now=T0).sent == 1
    assert dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(hours=1)).sent == 0
    sent = synapse.messages()[: len(synapse.messages()) - before]
    assert len(sent) == 1
    content = sent[0]["content"]
    assert content["msgtype"] == "m.text"
    assert "regression 7 confirmed" in content["body"] and "back out c0ffee" in content["body"]


def test_a_restart_after_a_matrix_send_does_not_repeat_it(sqlite_engine: sa.Engine, synapse):
    """The process sent the message and died before recording it: the row is `sending`.
    After the lease it is sent again with the same transaction id, and the homeserver
    answers the first event instead of posting a second message."""
    channel = MatrixChannel(synapse.url, synapse.access_token, synapse.room_id)
    senders = {ALERT: AlertSender({"matrix": channel})}
    key = "alert:7:culprit:matrix"
    _enqueue(sqlite_engine, key, "matrix", event="culprit")
    before = len(synapse.messages())
    with sqlite_engine.begin() as conn:
        row = get(conn, key)
        assert row is not None
        first = AlertSender({"matrix": channel}).send(row)  # reached the homeserver…
        conn.execute(  # …and the process died before it recorded `sent`
            sa.update(action_request)
            .where(action_request.c.id == row.id)
            .values(state="sending", updated_at=T0)
        )
    assert dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(minutes=5)).sent == 0
    settled = dispatch_effects(sqlite_engine, senders, now=T0 + timedelta(hours=1))
    assert settled.sent == 1
    with sqlite_engine.connect() as conn:
        row = get(conn, key)
    assert row is not None and row.state == "sent"
    assert row.payload["event_id"] == first["event_id"]
    assert len(synapse.messages()) - before == 1
