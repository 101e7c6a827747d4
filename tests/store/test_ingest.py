"""Ingestion of real task definitions and Pulse messages, on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from sheriff.errors import InputError
from sheriff.ingest.files import ingest_manifests, ingest_pulse, ingest_tasks
from sheriff.store import loader
from sheriff.store.schema import job, manifest, metadata, push, test_path
from tests.factories import make_task, new_task_id


def _counts(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in metadata.sorted_tables
        }


def _snapshot(engine: sa.Engine) -> dict[str, list]:
    with engine.connect() as conn:
        return {
            t.name: sorted(map(tuple, conn.execute(sa.select(t))), key=repr)
            for t in metadata.sorted_tables
        }


@pytest.fixture
def pulse_dir(reference: Path) -> Path:
    return reference / "treeherder" / "pulse"


def _assert_ingesting_twice_changes_nothing(engine, pulse_dir) -> None:
    first = ingest_tasks(engine, pulse_dir / "taskcluster_tasks.json")
    assert first.jobs_inserted == 91
    before = _snapshot(engine)
    second = ingest_tasks(engine, pulse_dir / "taskcluster_tasks.json")
    assert (second.jobs_inserted, second.jobs_updated, second.jobs_unchanged) == (0, 0, 91)
    assert _snapshot(engine) == before


def test_ingesting_the_reference_tasks_twice_changes_nothing(engine, pulse_dir) -> None:
    _assert_ingesting_twice_changes_nothing(engine, pulse_dir)
    counts = _counts(engine)
    assert counts["job"] == 91 and counts["push"] == 8 and counts["repository"] == 3


def _assert_pulse_moves_every_job_once(engine, pulse_dir) -> None:
    """The Pulse messages move all 91 jobs to Treeherder's states and results; again: none."""
    stats = ingest_pulse(engine, pulse_dir / "taskcluster_pulse_messages.json")
    assert stats.jobs_updated == 91
    transformed = json.loads((pulse_dir / "taskcluster_transformed_jobs.json").read_text())
    with engine.connect() as conn:
        rows = conn.execute(sa.select(job.c.task_id, job.c.state, job.c.result)).all()
    assert {r.task_id: (r.state, r.result) for r in rows} == {
        task_id: (t["job"]["state"], t["job"]["result"]) for task_id, t in transformed.items()
    }
    again = ingest_pulse(engine, pulse_dir / "taskcluster_pulse_messages.json")
    assert again.jobs_unchanged == 91


def test_pulse_messages_update_states_and_results(engine, pulse_dir) -> None:
    ingest_tasks(engine, pulse_dir / "taskcluster_tasks.json")
    _assert_pulse_moves_every_job_once(engine, pulse_dir)


def test_the_copy_path_stores_and_counts_what_the_insert_path_does(
    engine, pulse_dir, monkeypatch
) -> None:
    """Above COPY_THRESHOLD runs PostgreSQL loads through a binary COPY: same rows, counts."""
    if engine.dialect.name != "postgresql":
        pytest.skip("COPY is PostgreSQL's bulk path")
    monkeypatch.setattr(loader, "COPY_THRESHOLD", 0)
    _assert_ingesting_twice_changes_nothing(engine, pulse_dir)
    _assert_pulse_moves_every_job_once(engine, pulse_dir)


def test_a_stale_message_never_moves_a_job_back(engine, pulse_dir, tmp_path) -> None:
    ingest_tasks(engine, pulse_dir / "taskcluster_tasks.json")
    messages = json.loads((pulse_dir / "taskcluster_pulse_messages.json").read_text())
    task_id, completed = next(
        (k, m) for k, m in messages.items() if m["exchange"].endswith("completed")
    )
    stale = json.loads(json.dumps(completed))
    stale["exchange"] = "exchange/taskcluster-queue/v1/task-pending"
    stale["payload"]["status"]["runs"][0]["state"] = "pending"
    (tmp_path / "late.json").write_text(json.dumps([completed, stale]))
    ingest_pulse(engine, tmp_path / "late.json")
    with engine.connect() as conn:
        state = conn.execute(sa.select(job.c.state).where(job.c.task_id == task_id)).scalar()
    assert state == "completed"


def test_a_rerun_marks_the_previous_run_retry(engine, pulse_dir, tmp_path) -> None:
    ingest_tasks(engine, pulse_dir / "taskcluster_tasks.json")
    messages = json.loads((pulse_dir / "taskcluster_pulse_messages.json").read_text())
    task_id = "A35mWTRuQmyj88yMnIF0fA"
    m = messages[task_id]
    status = m["payload"]["status"]
    status["runs"][0].update(state="exception", reasonResolved="worker-shutdown")
    status["runs"].append({"runId": 1, "state": "pending", "reasonCreated": "retry"})
    m["payload"]["runId"] = 1
    (tmp_path / "rerun.json").write_text(json.dumps([m]))
    ingest_pulse(engine, tmp_path / "rerun.json")
    with engine.connect() as conn:
        runs = conn.execute(
            sa.select(job.c.run_id, job.c.state, job.c.result)
            .where(job.c.task_id == task_id)
            .order_by(job.c.run_id)
        ).all()
    assert [tuple(r) for r in runs] == [(0, "completed", "retry"), (1, "pending", "unknown")]


def test_a_truncated_file_changes_nothing_and_names_the_entry(engine, pulse_dir, tmp_path):
    ingest_tasks(engine, pulse_dir / "taskcluster_tasks.json")
    before = _snapshot(engine)
    text = (pulse_dir / "taskcluster_tasks.json").read_text()
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match=r"truncated.json: invalid JSON .* entry for task"):
        ingest_tasks(engine, truncated)
    assert _snapshot(engine) == before


def test_one_malformed_entry_rejects_the_whole_file(engine, pulse_dir, tmp_path) -> None:
    tasks = json.loads((pulse_dir / "taskcluster_tasks.json").read_text())
    bad_id = list(tasks)[60]
    del tasks[bad_id]["metadata"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(tasks))
    with pytest.raises(InputError, match=f"bad.json: task {bad_id}"):
        ingest_tasks(engine, path)
    assert _counts(engine)["job"] == 0


def _write(path: Path, data: object, gz: bool = False) -> Path:
    raw = json.dumps(data).encode()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def test_manifests_and_test_paths_are_stored_once(engine, tmp_path) -> None:
    shared = ["dom/base/test/browser.toml", "layout/test/browser.toml"]
    tasks = {
        new_task_id(): make_task(revision=f"rev{i}", label=f"test-a-{i}", manifests=shared)
        for i in range(3)
    }
    ingest_tasks(engine, _write(tmp_path / "tasks.json", tasks))
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(manifest)).scalar() == 2
        assert conn.execute(sa.select(sa.func.count()).select_from(push)).scalar() == 3
        sets = conn.execute(sa.select(job.c.manifest_set_id).distinct()).scalars().all()
    assert len(sets) == 1


def test_manifest_artifacts_fill_jobs_without_test_paths_env(engine, tmp_path) -> None:
    task_id = new_task_id()
    label = "test-linux1804-64-qr/opt-xpcshell-1"
    tasks = {task_id: make_task(revision="abc", label=label, manifests=None)}
    ingest_tasks(engine, _write(tmp_path / "tasks.json", tasks))
    by_task = _write(tmp_path / "mbt.json.gz", {label: ["a/xpcshell.toml"]}, gz=True)
    by_manifest = _write(
        tmp_path / "tbm.json.gz", {"a/xpcshell.toml": ["a/test_1.js", "a/test_2.js"]}, gz=True
    )
    counts = ingest_manifests(engine, "autoland", "abc", by_task, by_manifest)
    assert counts == {"labels": 1, "manifests": 1, "tests": 2, "jobs_updated": 1}
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(test_path)).scalar() == 2
        assert conn.execute(sa.select(job.c.manifest_set_id)).scalar() is not None
    # Again: nothing new.
    assert ingest_manifests(engine, "autoland", "abc", by_task, by_manifest)["jobs_updated"] == 0


def test_manifests_for_an_unknown_push_are_refused(engine, tmp_path) -> None:
    by_task = _write(tmp_path / "mbt.json", {"label": ["a.toml"]})
    with pytest.raises(InputError, match="ingest its tasks before"):
        ingest_manifests(engine, "autoland", "nope", by_task, None)


def test_a_malformed_manifest_file_names_the_entry(engine, tmp_path) -> None:
    by_task = _write(tmp_path / "mbt.json", {"label": "not-a-list"})
    with pytest.raises(InputError, match=r"manifests-by-task\.label: should be a valid list"):
        ingest_manifests(engine, "autoland", "x", by_task, None)
