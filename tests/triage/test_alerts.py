"""Alerts about one regression as it stops and fails again: each turn said once."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from sheriff.config import Settings
from sheriff.model.job import job_from_task
from sheriff.store.loader import load_jobs
from sheriff.store.schema import action_request, push, regression, repository
from sheriff.triage.alerts import plan_alerts
from tests.factories import new_task_id, task_on_push

NOW = datetime(2026, 11, 2, 20, tzinfo=UTC)
LINE = "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got <n>"


def _alerts(engine) -> list[tuple[str, str]]:
    """(event, body) of every alert in the request log, oldest first."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(action_request.c.input).order_by(action_request.c.id))
        return [(r.input["event"], r.input["body"]) for r in rows]


def _plan(engine) -> int:
    with engine.begin() as conn:
        repo = conn.execute(sa.select(repository.c.name)).scalar_one()
        return plan_alerts(
            conn, repo, public_url="http://sheriff.test", live=False, now=NOW, settings=Settings()
        )


def test_a_stopped_regression_that_fails_again_is_announced_again(engine) -> None:
    """A record reopened after its "stopped" alert went out (a later record joined it by
    its culprit, `merged_stop`) says it is failing again, once; a second stop and a second
    reopening are said once each too."""
    passed = {"state": "completed"}
    tasks = [task_on_push(i, "bc1", "linux", ["a.ini"]) for i in range(8)]
    jobs = [job_from_task(new_task_id(), task, 0, passed) for task in tasks]
    with engine.begin() as conn:
        load_jobs(conn, jobs)
        ids = dict(conn.execute(sa.select(push.c.revision, push.c.id)).all())
        record = conn.execute(
            regression.insert().values(
                repository_id=conn.execute(sa.select(repository.c.id)).scalar_one(),
                status="stopped",
                tests=["dom/a/test_a.html"],
                failure_lines=[LINE],
                configurations=["linux/opt"],
                labels=["bc1"],
                first_push_id=ids["rev01"],
                last_push_id=ids["rev02"],
                stopped_push_id=ids["rev03"],
                opened_at=NOW,
                updated_at=NOW,
            )
        ).inserted_primary_key[0]

    def turn(stopped: str | None, last: str) -> None:
        with engine.begin() as conn:
            conn.execute(
                regression.update()
                .where(regression.c.id == record)
                .values(
                    status="stopped" if stopped else "confirmed",
                    stopped_push_id=ids[stopped] if stopped else None,
                    last_push_id=ids[last],
                )
            )

    assert _plan(engine) == 2
    assert [event for event, _ in _alerts(engine)] == ["confirmed", "stopped"]
    assert _plan(engine) == 0
    turn(None, "rev05")
    assert _plan(engine) == 1 and _plan(engine) == 0
    event, body = _alerts(engine)[-1]
    assert event == "failing-again"
    assert "failing again" in body and "failed again up to push rev05" in body
    turn("rev06", "rev05")
    assert _plan(engine) == 1
    assert _alerts(engine)[-1][0] == "stopped-2" and "stopped failing" in _alerts(engine)[-1][1]
    turn(None, "rev07")
    assert _plan(engine) == 1 and _alerts(engine)[-1][0] == "failing-again-2"
    assert _plan(engine) == 0
    assert len(_alerts(engine)) == 5
