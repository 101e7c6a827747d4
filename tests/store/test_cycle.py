"""`sheriff cycle`: exactly the expired data goes, in chunks, and an interrupted run finishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from sheriff.model.job import job_from_task
from sheriff.store import cycle
from sheriff.store.db import open_database
from sheriff.store.loader import load_jobs, load_push_manifests
from sheriff.store.queries import find_push_id
from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    job,
    manifest,
    metadata,
    push,
    run_observation,
    test_path,
    triage_case,
)
from tests.factories import case_row, make_task, named_task_id, new_task_id, report_row

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
OLD_ONLY, SHARED, NEW_ONLY = "old/browser.toml", "shared/browser.toml", "new/browser.toml"
TESTS = {
    OLD_ONLY: ["old/browser_1.js", "shared/browser_common.js"],
    SHARED: ["shared/browser_common.js", "shared/browser_2.js"],
    NEW_ONLY: ["new/browser_3.js"],
}


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _load(engine, now: datetime) -> dict[str, list[int]]:
    """Two old pushes (200 days) and two new ones (10 days); old jobs have cases,
    observations and a backfill report; returns job ids by age."""
    specs = []
    for index, (age, manifests) in enumerate(
        [(200, [OLD_ONLY, SHARED]), (199, [OLD_ONLY]), (10, [SHARED]), (9, [NEW_ONLY, SHARED])]
    ):
        created = now - timedelta(days=age)
        for chunk in range(3):
            task = make_task(
                revision=f"rev{index}".ljust(40, "0"),
                pushlog_id=index + 1,
                label=f"test-linux/opt-mochitest-{chunk}",
                manifests=manifests,
                created=_stamp(created + timedelta(minutes=chunk)),
                task_group_id=named_task_id(f"group {index}"),
            )
            specs.append((age, job_from_task(new_task_id(), task, 0, {"state": "failed"})))
    ids: dict[str, list[int]] = {"old": [], "new": []}
    with engine.begin() as conn:
        load_jobs(conn, [j for _, j in specs])
        by_task = dict(conn.execute(sa.select(job.c.task_id, job.c.id)).all())
        for age, j in specs:
            ids["old" if age > 120 else "new"].append(by_task[j.task_id])
        for index in range(4):
            push_id = find_push_id(conn, "autoland", f"rev{index}".ljust(40, "0"))
            planned = [OLD_ONLY] if index < 2 else [NEW_ONLY]
            load_push_manifests(conn, push_id, {"planned-label": planned}, TESTS)
        for age, j in specs:
            job_id = by_task[j.task_id]
            push_id = conn.execute(sa.select(job.c.push_id).where(job.c.id == job_id)).scalar()
            moment = now - timedelta(days=age)
            case_id = conn.execute(
                triage_case.insert()
                .values(**case_row(job_id, push_id, j.label, moment))
                .returning(triage_case.c.id)
            ).scalar_one()
            conn.execute(
                run_observation.insert().values(job_id=job_id, failure_lines=[], updated_at=moment)
            )
            report_id = conn.execute(
                backfill_report.insert()
                .values(
                    **report_row(
                        push_id,
                        job_id,
                        moment,
                        case_id=case_id,
                        label=j.label,
                        strategy="linear",
                        case_ids=[case_id],
                    )
                )
                .returning(backfill_report.c.id)
            ).scalar_one()
            conn.execute(
                backfill_record.insert().values(
                    report_id=report_id,
                    job_id=job_id,
                    label=j.label,
                    platform="linux1804-64-qr",
                    option_collection="opt",
                    tier=1,
                    manifest_set_id=conn.execute(
                        sa.select(job.c.manifest_set_id).where(job.c.id == job_id)
                    ).scalar(),
                    context={},
                    status="preliminary",
                    created_at=moment,
                    updated_at=moment,
                )
            )
    return ids


def _hashable(value: object) -> object:
    return json.dumps(value, sort_keys=True) if isinstance(value, list | dict) else value


def _snapshot(engine) -> dict[str, set[tuple]]:
    with engine.connect() as conn:
        return {
            t.name: {tuple(map(_hashable, r)) for r in conn.execute(sa.select(t))}
            for t in metadata.sorted_tables
        }


def _expected_after(engine, ids) -> dict[str, set[tuple]]:
    """The database as it must be after cycling: only rows of the new data."""
    with engine.connect() as conn:
        new_jobs = ids["new"]
        keep_pushes = set(
            conn.execute(sa.select(job.c.push_id).where(job.c.id.in_(new_jobs))).scalars()
        )
    before = _snapshot(engine)
    return {
        "job": {r for r in before["job"] if r[0] in new_jobs},
        "push": {r for r in before["push"] if r[0] in keep_pushes},
        "manifest": {r for r in before["manifest"] if r[1] != OLD_ONLY},
        "test_path": {r for r in before["test_path"] if r[1] != "old/browser_1.js"},
    }


def _paths(engine, table) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(sa.select(table.c.path)).scalars())


def test_cycle_deletes_exactly_the_expired_data(engine) -> None:
    ids = _load(engine, NOW)
    expected = _expected_after(engine, ids)
    before = _snapshot(engine)

    stats = cycle.cycle(engine, days=120, chunk_size=4, now=NOW)

    after = _snapshot(engine)
    for table, rows in expected.items():
        assert after[table] == rows, table
    assert stats.deleted["job"] == 6 and stats.deleted["push"] == 2
    for table in ("triage_case", "run_observation", "backfill_report", "backfill_record"):
        assert len(after[table]) == 6, table
        assert stats.deleted[table] == 6, table
    # Nothing of the new data changed, row for row.
    for table in after:
        assert after[table] <= before[table], table
    assert _paths(engine, manifest) == {SHARED, NEW_ONLY}
    assert "old/browser_1.js" not in _paths(engine, test_path)
    assert "shared/browser_common.js" in _paths(engine, test_path)
    again = cycle.cycle(engine, days=120, chunk_size=4, now=NOW)
    assert again.deleted == {}


def test_an_interrupted_cycle_finishes_when_run_again(engine) -> None:
    ids = _load(engine, NOW)
    expected = _expected_after(engine, ids)
    chunks = []

    def stop_after_two(stage: str, rows: int) -> None:
        chunks.append((stage, rows))
        if len(chunks) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cycle.cycle(engine, days=120, chunk_size=2, now=NOW, progress=stop_after_two)
    with engine.connect() as conn:
        left = set(conn.execute(sa.select(job.c.id)).scalars())
        orphans = conn.execute(
            sa.select(sa.func.count())
            .select_from(run_observation)
            .where(~sa.exists().where(job.c.id == run_observation.c.job_id))
        ).scalar_one()
    assert left == set(ids["new"]) | set(sorted(ids["old"])[4:])  # two chunks of two went
    assert orphans == 0

    cycle.cycle(engine, days=120, chunk_size=2, now=NOW)
    after = _snapshot(engine)
    for table, rows in expected.items():
        assert after[table] == rows, table


def test_nothing_younger_than_the_cutoff_is_touched(engine) -> None:
    _load(engine, NOW)
    before = _snapshot(engine)
    stats = cycle.cycle(engine, days=365, now=NOW)
    assert stats.deleted == {}
    assert _snapshot(engine) == before


def test_cycle_command_prints_counts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sheriff.db'}"
    engine = open_database(url)
    _load(engine, datetime.now(UTC))
    engine.dispose()
    env = {**os.environ, "SHERIFF_DATABASE_URL": url}
    run = subprocess.run(
        [sys.executable, "-m", "sheriff", "cycle", "--days", "120", "--chunk-size", "4"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "job: 6 deleted" in run.stdout and "push: 2 deleted" in run.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "sheriff", "cycle", "--days", "0"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("sheriff: error: ")
    engine = open_database(url)
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(push)).scalar_one() == 2
