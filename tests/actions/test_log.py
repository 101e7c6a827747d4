"""The request log on SQLite and PostgreSQL: written before sending, sent exactly once."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.actions import log
from sheriff.actions.errors import RequestConflict
from sheriff.actions.protocol import ActionsProtocol
from sheriff.errors import InputError
from sheriff.store import db
from tests.actions.conftest import (
    DECISION,
    ORIGINAL,
    REPO,
    REVISION,
    FakeClients,
    FakeTaskcluster,
)

LABEL = "test-linux64-shippable-qr/opt-raptor-assorted-dom-firefox-e10s"
NOW = timedelta(0)


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs, nothing is committed."""


def _retrigger(engine: Engine, key: str = "k1", times: int = 5) -> log.RequestRow:
    with engine.begin() as conn:
        return log.enqueue(
            conn,
            key,
            "retrigger",
            repository=REPO,
            revision=REVISION,
            task_id=ORIGINAL,
            labels=[LABEL],
            input={"times": times},
        )


def test_enqueue_is_idempotent_on_the_key(engine: Engine) -> None:
    first = _retrigger(engine)
    again = _retrigger(engine)
    assert first.id == again.id and again.state == log.REQUESTED
    with engine.connect() as conn:
        assert len(log.requests(conn)) == 1
    with pytest.raises(RequestConflict, match="already names another request"):
        _retrigger(engine, times=4)


def test_enqueue_checks_the_target(engine: Engine) -> None:
    with engine.begin() as conn, pytest.raises(InputError, match="push-level"):
        log.enqueue(conn, "k", "retrigger-multiple", repository=REPO, revision=REVISION,
                    task_id=ORIGINAL, input={})  # fmt: skip
    with engine.begin() as conn, pytest.raises(InputError, match="give its task id"):
        log.enqueue(conn, "k", "retrigger", repository=REPO, revision=REVISION,
                    task_id=None, input={})  # fmt: skip


def test_enqueue_commits_with_the_callers_transaction(engine: Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as conn:
        log.enqueue(conn, "k", "retrigger", repository=REPO, revision=REVISION,
                    task_id=ORIGINAL, input={"times": 1})  # fmt: skip
        raise RuntimeError("the caller's plan failed")
    with engine.connect() as conn:
        assert log.get(conn, "k") is None


def test_dispatch_sends_once_and_records_the_action_task(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    _retrigger(engine)
    [sent] = log.dispatch(engine, protocol)
    assert sent.state == log.SENT
    assert sent.action_task_id in world.tasks
    assert sent.decision_task_id == DECISION
    assert sent.hook == "project-gecko/in-tree-action-3-generic/9353e8f146"
    assert sent.payload["user"]["input"] == {"times": 5}
    assert sent.attempts == 1
    assert log.dispatch(engine, protocol) == []
    _retrigger(engine)  # the same key again: nothing new
    assert log.dispatch(engine, protocol) == []
    assert len(world.triggered) == 1


def test_dry_run_records_and_sends_nothing_until_meant(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    _retrigger(engine)
    [dry] = log.dispatch(engine, protocol, dry_run=True)
    assert dry.state == log.DRY_RUN
    assert dry.payload["user"]["taskId"] == ORIGINAL
    assert world.triggered == []
    assert log.dispatch(engine, protocol) == []  # a dry-run row is not sent later
    assert _retrigger(engine).state == log.REQUESTED  # asked again, for real
    [sent] = log.dispatch(engine, protocol)
    assert sent.state == log.SENT and len(world.triggered) == 1


def test_a_refused_request_fails_with_its_reason(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    _retrigger(engine, times=500)
    [failed] = log.dispatch(engine, protocol)
    assert failed.state == log.FAILED
    assert "500 is greater than the maximum of 100" in failed.reason
    world.hook_failures = [403]
    _retrigger(engine, key="k2", times=2)
    [refused] = log.dispatch(engine, protocol)
    assert refused.state == log.FAILED and "HTTP 403" in refused.reason
    with engine.begin() as conn:
        assert log.requeue(conn, "k2").state == log.REQUESTED
    assert log.dispatch(engine, protocol)[0].state == log.SENT


def test_an_outage_while_preparing_keeps_the_request(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    from sheriff.ci.taskcluster import TaskclusterUnavailable

    def down(*_args: object) -> bytes:
        raise TaskclusterUnavailable("Taskcluster unreachable: GET …")

    clients = FakeClients(world)
    clients.latest_artifact = down  # type: ignore[method-assign]
    _retrigger(engine)
    [kept] = log.dispatch(engine, ActionsProtocol(clients))  # type: ignore[arg-type]
    assert kept.state == log.REQUESTED and "unreachable" in kept.reason
    assert log.dispatch(engine, protocol)[0].state == log.SENT


def test_crash_between_trigger_and_commit_sends_nothing_twice_and_loses_nothing(
    engine: Engine, db_url: str, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    _retrigger(engine)
    world.crash_after_trigger = Crash()
    with pytest.raises(Crash):
        log.dispatch(engine, protocol)
    engine.dispose()
    world.crash_after_trigger = None
    assert len(world.triggered) == 1 and world.action_task_count() == 1

    restarted = db.open_database(db_url)  # a new process: fresh engine, fresh caches
    fresh = ActionsProtocol(FakeClients(world))  # type: ignore[arg-type]
    with restarted.connect() as conn:
        [row] = log.requests(conn)
    assert row.state == log.SENDING
    # Within the lease a live process may still hold it: leave it alone.
    assert log.dispatch(restarted, fresh) == []
    assert log.reconcile(restarted, fresh, lease=timedelta(hours=1)) == []
    [settled] = log.reconcile(restarted, fresh, lease=NOW)
    assert settled.state == log.SENT and settled.action_task_id in world.tasks
    assert log.dispatch(restarted, fresh, lease=NOW) == []
    assert len(world.triggered) == 1 and world.action_task_count() == 1
    restarted.dispose()


def test_crash_before_trigger_sends_on_restart(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    _retrigger(engine)
    original_trigger = protocol.trigger

    def die(*_args: object, **_kwargs: object) -> str:
        raise Crash()

    protocol.trigger = die  # type: ignore[method-assign]
    with pytest.raises(Crash):
        log.dispatch(engine, protocol)
    protocol.trigger = original_trigger  # type: ignore[method-assign]
    assert world.triggered == []
    [sent] = log.dispatch(engine, protocol, lease=NOW)
    assert sent.state == log.SENT and len(world.triggered) == 1


def test_reconcile_does_not_take_another_requests_action_task(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    # Two requests with the same action, task and input (keys differ): two action tasks.
    _retrigger(engine, key="a")
    _retrigger(engine, key="b")
    log.dispatch(engine, protocol, keys=["a"])
    world.crash_after_trigger = Crash()
    with pytest.raises(Crash):
        log.dispatch(engine, protocol, keys=["b"])
    world.crash_after_trigger = None
    [settled] = log.reconcile(engine, protocol, lease=NOW)
    with engine.connect() as conn:
        a, b = log.get(conn, "a"), log.get(conn, "b")
    assert settled.idempotency_key == "b" and b.state == log.SENT
    assert a.action_task_id != b.action_task_id
    assert len(world.triggered) == 2


def test_two_senders_at_once_send_once(engine: Engine, db_url: str, world: FakeTaskcluster) -> None:
    _retrigger(engine)
    world.trigger_delay = 0.2
    results: list[list[log.RequestRow]] = []
    barrier = threading.Barrier(2)

    def sender() -> None:
        own = db.open_database(db_url)
        barrier.wait()
        results.append(log.dispatch(own, ActionsProtocol(FakeClients(world))))  # type: ignore[arg-type]
        own.dispose()

    threads = [threading.Thread(target=sender) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(world.triggered) == 1
    assert sorted(len(r) for r in results) == [0, 1]


def test_runs_requested_counts_what_may_not_exist_yet(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    with engine.begin() as conn:
        multi = {"requests": [{"tasks": ["a", "b"], "times": 3}]}
        log.enqueue(conn, "multi", "retrigger-multiple", repository=REPO, revision=REVISION,
                    task_id=None, labels=["a", "b"], input=multi)  # fmt: skip
        log.enqueue(conn, "one", "retrigger", repository=REPO, revision=REVISION,
                    task_id=ORIGINAL, labels=["a"], input={"times": 2})  # fmt: skip
        assert log.runs_requested(conn, REPO, REVISION) == {"a": 5, "b": 3}
        assert log.runs_requested(conn, REPO, "other") == {}
    sent = {r.idempotency_key: r for r in log.dispatch(engine, protocol)}
    with engine.connect() as conn:
        assert log.runs_requested(conn, REPO, REVISION) == {"a": 5, "b": 3}
        seen = [sent["one"].action_task_id]
        assert log.runs_requested(conn, REPO, REVISION, exclude_action_tasks=seen) == {
            "a": 3,
            "b": 3,
        }


def test_request_rows_are_plain_columns(engine: Engine) -> None:
    _retrigger(engine)
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT state, labels, input FROM action_request")).one()
    assert row.state == "requested"


def test_reconcile_waits_while_the_task_group_cannot_be_read(
    engine: Engine, world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    from sheriff.ci.taskcluster import TaskclusterUnavailable

    _retrigger(engine)
    world.crash_after_trigger = Crash()
    with pytest.raises(Crash):
        log.dispatch(engine, protocol)
    world.crash_after_trigger = None

    def down(*_args: object, **_kwargs: object) -> dict:
        raise TaskclusterUnavailable("Taskcluster unreachable: GET …")

    real = world.queue.listTaskGroup
    world.queue.listTaskGroup = down  # type: ignore[method-assign]
    assert log.dispatch(engine, protocol, lease=NOW) == []
    with engine.connect() as conn:
        assert log.get(conn, "k1").state == log.SENDING
    world.queue.listTaskGroup = real  # type: ignore[method-assign]
    assert log.dispatch(engine, protocol, lease=NOW) == []
    with engine.connect() as conn:
        assert log.get(conn, "k1").state == log.SENT
    assert len(world.triggered) == 1
