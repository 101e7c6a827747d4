"""Regression records from the store: a test that began failing with a regression joins it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from sheriff.model.job import job_from_task
from sheriff.store.loader import load_jobs
from sheriff.store.schema import (
    backfill_report,
    job,
    job_type,
    push,
    regression,
    run_observation,
    triage_case,
)
from sheriff.triage.regressions import began_failing_by, file_case, push_orders
from tests.factories import case_row, new_task_id, report_row, task_on_push

LINUX = "linux1804-64-qr"
NOW = datetime(2026, 11, 3, 8, tzinfo=UTC)
# Three tests in three chunks (labels) with their manifests.
CHUNKS = {
    "a/test_a.html": ("bc1", "a/browser.toml"),
    "b/test_b.html": ("bc2", "b/browser.toml"),
    "c/test_c.html": ("bc3", "c/browser.toml"),
}


def line(test: str) -> str:
    return f"TEST-UNEXPECTED-FAIL | {test} | got <n>"


def load(engine, pushes: int, failing: dict[str, set[int]]) -> dict[tuple[int, str], int]:
    """One run of every chunk per push; the tests fail on the pushes `failing` gives.
    (push, test) → the job id of the run of that test's chunk."""
    jobs, shown = [], []
    for index in range(pushes):
        for test, (label, manifest) in CHUNKS.items():
            fails = index in failing.get(test, set())
            task = task_on_push(index, label, LINUX, [manifest])
            run = {"state": "failed" if fails else "completed"}
            jobs.append((index, test, job_from_task(new_task_id(), task, 0, run)))
            shown.append([line(test)] if fails else None)
    with engine.begin() as conn:
        load_jobs(conn, [j for _, _, j in jobs])
        ids = dict(conn.execute(sa.select(job.c.task_id, job.c.id)).all())
        for (_, _, j), lines in zip(jobs, shown, strict=True):
            if lines is not None:
                conn.execute(
                    run_observation.insert().values(
                        job_id=ids[j.task_id],
                        parse_status="parsed",
                        failure_lines=lines,
                        updated_at=NOW,
                    )
                )
    return {(index, test): ids[j.task_id] for index, test, j in jobs}


def file(engine, job_id: int) -> int | None:
    """A regression case of the run, filed into its regression record."""
    with engine.begin() as conn:
        row = conn.execute(
            sa.select(job.c.push_id, job_type.c.name)
            .join(job_type, job_type.c.id == job.c.job_type_id)
            .where(job.c.id == job_id)
        ).one()
        case_id = conn.execute(
            sa.insert(triage_case)
            .values(**case_row(job_id, row.push_id, row.name, NOW))
            .returning(triage_case.c.id)
        ).scalar_one()
        return file_case(conn, case_id, NOW)


def test_tests_begin_failing_on_the_first_push_they_fail_after_a_clean_stretch(engine) -> None:
    load(engine, 16, {"a/test_a.html": {2, 11, 13}, "b/test_b.html": {11, 14}})
    with engine.connect() as conn:
        orders = push_orders(conn, 1)
        began = began_failing_by(conn, 15, orders)
        # a failed on push 2 (too early to tell a beginning); b began on push 11.
        assert began == {"b/test_b.html": 11}
        # Read up to push 10, nothing has begun yet.
        assert began_failing_by(conn, 10, orders) == {}


def test_a_test_that_began_failing_with_a_regression_joins_its_record_and_search(
    engine,
) -> None:
    """A push broke a and b (other chunks) at push 11, failing some of their runs; c began
    on push 12. b's first case (push 14) shares no test with a's record (opened on push
    13): it began failing where a did, so it joins a's record, and the record's search
    names b too; c's case is a regression of its own."""
    ids = load(
        engine,
        16,
        {
            "a/test_a.html": {11, 13},
            "b/test_b.html": {11, 14},
            "c/test_c.html": {12, 14},
        },
    )
    first = file(engine, ids[(13, "a/test_a.html")])
    with engine.begin() as conn:
        rev13 = conn.execute(sa.select(push.c.id).where(push.c.revision == "rev13")).scalar()
        report = report_row(rev13, ids[(13, "a/test_a.html")], NOW, tests=["a/test_a.html"])
        report_id = conn.execute(
            sa.insert(backfill_report).values(**report).returning(backfill_report.c.id)
        ).scalar_one()
        conn.execute(
            sa.update(regression)
            .where(regression.c.id == first)
            .values(backfill_report_id=report_id)
        )
    assert file(engine, ids[(14, "b/test_b.html")]) == first
    other = file(engine, ids[(14, "c/test_c.html")])
    assert other not in (None, first)
    with engine.connect() as conn:
        record = conn.execute(sa.select(regression).where(regression.c.id == first)).one()
        named = conn.execute(
            sa.select(backfill_report.c.tests).where(backfill_report.c.id == report_id)
        ).scalar_one()
    assert set(record.tests) == {"a/test_a.html", "b/test_b.html"}
    assert set(record.labels) == {"bc1", "bc2"}
    assert set(named) == {"a/test_a.html", "b/test_b.html"}
    # b's other cases match the record by its test now.
    assert file(engine, ids[(11, "b/test_b.html")]) == first
