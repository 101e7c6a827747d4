"""Concurrent first use: several processes opening one empty database at once all succeed,
and the schema ends at head (migrations under an advisory lock, or a file lock on SQLite)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from sheriff.store import db

PROCESSES = 4
# Each process waits for the same moment, then upgrades: the migrations really race.
_UPGRADE_AT = """
import sys, time
from sheriff.cli import main
at = float(sys.argv[1])
while time.time() < at:
    time.sleep(0.001)
sys.argv = ["sheriff", "db", "upgrade"]
main()
"""


def _race(url: str, cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKCLUSTER_", "SHERIFF_"))}
    env["SHERIFF_DATABASE_URL"] = url
    at = str(time.time() + 3)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _UPGRADE_AT, at],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    outputs = [p.communicate(timeout=240) for p in processes]
    return [
        subprocess.CompletedProcess(p.args, p.returncode, out, err)
        for p, (out, err) in zip(processes, outputs, strict=True)
    ]


def _assert_all_at_head(results: list[subprocess.CompletedProcess[str]], url: str) -> None:
    assert [r.returncode for r in results] == [0] * PROCESSES, [r.stderr for r in results]
    assert all(r.stderr == "" for r in results), [r.stderr for r in results]
    engine = db.create_engine(url)
    try:
        assert db.current_revision(engine) == db.head_revision()
        assert "job" in sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_processes_migrating_an_empty_postgresql_database_at_once(
    empty_postgres: str, tmp_path: Path
) -> None:
    _assert_all_at_head(_race(empty_postgres, tmp_path), empty_postgres)


def test_processes_migrating_an_empty_sqlite_file_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    _assert_all_at_head(_race(url, tmp_path), url)
