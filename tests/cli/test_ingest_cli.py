"""`sheriff ingest` as a user runs it: counts, idempotency, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

SHERIFF = [sys.executable, "-m", "sheriff"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SHERIFF_DATABASE_URL": f"sqlite:///{cwd / 'sheriff.db'}"}
    return subprocess.run(
        [*SHERIFF, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _job_count(cwd: Path) -> int:
    engine = sa.create_engine(f"sqlite:///{cwd / 'sheriff.db'}")
    with engine.connect() as conn:
        return conn.execute(sa.text("select count(*) from job")).scalar_one()


def test_ingest_tasks_twice_then_a_truncated_copy(tmp_path: Path, reference: Path) -> None:
    tasks = reference / "treeherder/pulse/taskcluster_tasks.json"
    first = _run(["ingest", "tasks", str(tasks)], tmp_path)
    assert first.returncode == 0, first.stderr
    assert "91 jobs added" in first.stdout
    second = _run(["ingest", "tasks", str(tasks)], tmp_path)
    assert "0 jobs added, 0 updated, 91 unchanged" in second.stdout
    assert _job_count(tmp_path) == 91

    truncated = tmp_path / "truncated.json"
    truncated.write_text(tasks.read_text()[:100_000])
    bad = _run(["ingest", "tasks", str(truncated)], tmp_path)
    assert bad.returncode != 0
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("sheriff: error: ")
    assert "truncated.json" in bad.stderr and "Traceback" not in bad.stderr
    assert _job_count(tmp_path) == 91


def test_a_wrong_flag_is_one_line(tmp_path: Path) -> None:
    result = _run(["ingest", "tasks", "--nope"], tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--nope" in result.stderr


def test_every_command_has_help(tmp_path: Path) -> None:
    for args in (
        ["--help"],
        ["ingest", "--help"],
        ["ingest", "manifests", "--help"],
        ["db", "--help"],
    ):
        result = _run(args, tmp_path)
        assert result.returncode == 0 and "Usage" in result.stdout, args


def test_a_task_id_that_is_no_slugid_is_one_line_on_either_database(
    tmp_path: Path, db_url: str
) -> None:
    # 22 characters, but not 16 bytes of base64: refused before the store (PostgreSQL's uuid
    # column would refuse it too) or Taskcluster is asked.
    env = {**os.environ, "SHERIFF_DATABASE_URL": db_url}
    result = subprocess.run(
        [*SHERIFF, "backfill", "x" * 22],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.startswith("sheriff: error: ")
    assert result.stderr.strip().count("\n") == 0 and "not a task id" in result.stderr
