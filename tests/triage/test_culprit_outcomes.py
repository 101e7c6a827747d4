"""Why each true regression got the culprit it got, or none (`culprit_outcomes`)."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from sheriff.model.job import job_from_task
from sheriff.store.loader import load_jobs
from sheriff.store.schema import backfill_report, job, push, triage_case
from sheriff.triage.simrun import culprit_outcomes
from tests.factories import case_row, new_task_id, report_row, task_on_push

NOW = datetime(2026, 11, 2, 20, tzinfo=UTC)
TIMEOUT = "TEST-UNEXPECTED-TIMEOUT | Last test finished | application timed out"


def test_a_test_less_report_naming_another_regressions_culprit_is_not_this_ones(
    sqlite_engine,
) -> None:
    """A timeout regression and a crash regression (neither line names a test) fail on
    push 5; one report there searched the timeout and named its culprit. It is about both
    by its push, yet it counts for the timeout's: the crash regression's cases joined it,
    and it has no report of its own (not "no culprit" with no reason)."""
    labels = ["bc1", "bc2"]
    failed = {"state": "failed"}
    tasks = [task_on_push(5, label, "linux", ["a.ini"]) for label in labels]
    jobs = [job_from_task(new_task_id(), task, 0, failed) for task in tasks]
    with sqlite_engine.begin() as conn:
        load_jobs(conn, jobs)
        push_id = conn.execute(sa.select(push.c.id)).scalar_one()
        job_ids = dict(conn.execute(sa.select(job.c.task_id, job.c.id)).all())
        case_ids = [
            conn.execute(
                triage_case.insert().values(
                    **case_row(job_ids[j.task_id], push_id, j.label, NOW, policy="history")
                )
            ).inserted_primary_key[0]
            for j in jobs
        ]
        conn.execute(
            backfill_report.insert().values(
                **report_row(
                    push_id,
                    job_ids[jobs[0].task_id],
                    NOW,
                    tests=["Last test finished"],
                    failure_lines=[TIMEOUT],
                    case_ids=case_ids,
                    status="culprit",
                    culprit_revision="rev03",
                )
            )
        )
    truth = {
        "regressions": [
            {"index": 0, "tests": ["a/t1.html"], "failure": "timeout", "culprit_revision": "rev03"},
            {"index": 1, "tests": ["a/t2.html"], "failure": "crash", "culprit_revision": "rev04"},
        ],
        "cases": {
            j.task_id: {"push": "rev05", "failures": [{"test": test, "regression": i}]}
            for i, (j, test) in enumerate(zip(jobs, ["a/t1.html", "a/t2.html"], strict=True))
        },
    }
    with sqlite_engine.connect() as conn:
        outcomes = culprit_outcomes(conn, truth, None)
    assert outcomes["by_regression"] == {0: "right", 1: "joined another report"}
