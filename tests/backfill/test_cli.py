"""`sheriff backfill` as a user runs it: status as table and JSON, routing, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from sheriff.backfill import (
    BackfillSettings,
    advance_backfills,
    open_report_for_case,
    request_backfill,
)
from sheriff.store.db import open_database
from sheriff.store.schema import backfill_report, job, triage_case
from tests.backfill.conftest import LABEL, START, A, B, FakeCI, revision
from tests.factories import make_task
from tests.loopback import scripted_server

SHERIFF = [sys.executable, "-m", "sheriff"]


def _run(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SHERIFF_DATABASE_URL": f"sqlite:///{cwd / 'sheriff.db'}",
        "COLUMNS": "200",
        # Nothing here may reach a real Taskcluster: a request fails at once unless a test
        # serves one.
        "TASKCLUSTER_ROOT_URL": "http://127.0.0.1:9",
        **extra,
    }
    return subprocess.run(
        [*SHERIFF, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A database with one report whose culprit bisect named."""
    engine = open_database(f"sqlite:///{tmp_path / 'sheriff.db'}")
    ci = FakeCI(engine)
    ci.history()
    case = ci.regression_case(20)
    settings = BackfillSettings(strategy="bisect")
    with engine.begin() as conn:
        open_report_for_case(conn, case, START, settings)
    now = START + timedelta(hours=1)
    for _ in range(8):
        advance_backfills(
            engine, now=now, actions=ci.enqueue, settings=settings, task_definition=ci.definition
        )
        ci.run_requests()
        now += timedelta(minutes=30)
    engine.dispose()
    return tmp_path


def test_status_shows_the_culprit(finished: Path) -> None:
    as_json = _run(["backfill", "status", "--json"], finished)
    assert as_json.returncode == 0, as_json.stderr
    [report] = json.loads(as_json.stdout)
    assert report["status"] == "culprit"
    assert report["culprit_revision"] == revision(11)
    assert report["records"][0]["status"] == "successful"
    table = _run(["backfill", "status"], finished)
    assert table.returncode == 0, table.stderr
    assert revision(11)[:12] in table.stdout


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = _run(["backfill", "status", "--status", "sideways"], tmp_path)
    assert bad.returncode != 0
    assert bad.stderr.strip().count("\n") == 0 and "unknown report status" in bad.stderr
    not_a_task = _run(["backfill", "nonsense"], tmp_path)
    assert not_a_task.returncode != 0
    assert "not a task id" in not_a_task.stderr and "Traceback" not in not_a_task.stderr
    strategy = _run(["backfill", "KQ5qFIr7SPCY2sQN-lWVxw", "--strategy", "sideways"], tmp_path)
    assert strategy.returncode != 0 and "unknown backfill strategy" in strategy.stderr


def test_a_task_id_is_routed_to_request(tmp_path: Path) -> None:
    # Not in the database and no reachable Taskcluster: the request fails, as one line,
    # which shows the task id reached `request` rather than an unknown command.
    env = {
        **os.environ,
        "SHERIFF_DATABASE_URL": f"sqlite:///{tmp_path / 'sheriff.db'}",
        "TASKCLUSTER_ROOT_URL": "http://127.0.0.1:9",
        "SHERIFF_HTTP_RETRIES": "0",
        "SHERIFF_HTTP_TIMEOUT_SECONDS": "2",
    }
    result = subprocess.run(
        [*SHERIFF, "backfill", "KQ5qFIr7SPCY2sQN-lWVxw", "--depth", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "No such command" not in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("sheriff: error:")


def test_culprit_metrics_against_the_truth(finished: Path) -> None:
    from sheriff.backfill import culprit_metrics

    engine = open_database(f"sqlite:///{finished / 'sheriff.db'}")
    right = {"tests": ["a/browser_regressed.js"], "culprit_revision": revision(11)}
    wrong = {"tests": ["a/browser_regressed.js"], "culprit_revision": revision(12)}
    unseen = {"tests": ["z/browser_other.js"], "culprit_revision": revision(3)}
    with engine.connect() as conn:
        figures = culprit_metrics(conn, [right, unseen])
        assert culprit_metrics(conn, [wrong])["correct"] == 0
        # Every report that names a push counts: a wrong one makes the regression wrong.
        against = culprit_metrics(conn, [wrong])
        # Backfill runs are test runs only: an action task (kind other) is not one.
        runs = figures["backfill_runs"]
        first = conn.execute(sa.select(job).where(job.c.action == "backfill-task")).first()
        assert first is not None
        conn.execute(
            job.insert().values(
                {**first._mapping, "id": None, "task_id": first.task_id[:-2] + "zz"}
                | {"job_kind": "other"}
            )
        )
        after = culprit_metrics(conn, [right])["backfill_runs"]
        tests_runs = conn.execute(
            sa.select(sa.func.count())
            .select_from(job)
            .where(job.c.action == "backfill-task", job.c.job_kind == "test")
        ).scalar_one()
        nothing = culprit_metrics(conn, [unseen])
    engine.dispose()
    assert figures["regressions"] == 2 and figures["found"] == 1 and figures["correct"] == 1
    assert figures["reports_named"] == figures["reports_correct"] == 1 and not figures["wrong"]
    assert against["found"] == 1 and against["correct"] == 0 and against["reports_correct"] == 0
    [named] = against["wrong"]
    assert named["named"] == revision(11) and named["true"] == revision(12)
    assert runs > 0 and after == runs == tests_runs
    # A report about tests no true regression broke names a push for a range without one.
    assert nothing["reports_without_true_culprit"] == 1 and len(nothing["false_culprits"]) == 1


def test_json_times_carry_their_zone_and_a_piped_table_does_not_fold(finished: Path) -> None:
    [report] = json.loads(_run(["backfill", "status", "--json"], finished).stdout)
    for moment in (report["opened_at"], report["closed_at"]):
        assert moment.endswith("+00:00"), moment
    assert all(p["push_timestamp"].endswith("+00:00") for p in report["records"][0]["context"])
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["SHERIFF_DATABASE_URL"] = f"sqlite:///{finished / 'sheriff.db'}"
    piped = subprocess.run(
        [*SHERIFF, "backfill", "status"], cwd=finished, env=env, capture_output=True, text=True
    )
    assert report["label"] in piped.stdout  # whole, on one line, though stdout is a pipe


def _ingested_task(tmp_path: Path, index: int) -> tuple[FakeCI, str]:
    engine = open_database(f"sqlite:///{tmp_path / 'sheriff.db'}")
    ci = FakeCI(engine)
    ci.history()
    case = ci.regression_case(index)
    with engine.connect() as conn:
        task_id = conn.execute(
            sa.select(job.c.task_id)
            .join(triage_case, triage_case.c.job_id == job.c.id)
            .where(triage_case.c.id == case)
        ).scalar_one()
    return ci, task_id


def test_a_backfill_by_hand_takes_the_documented_defaults(tmp_path: Path) -> None:
    ci, task_id = _ingested_task(tmp_path, 20)
    definition = make_task(revision=revision(20), label=LABEL, manifests=[A, B])
    with scripted_server() as taskcluster:
        # The original's definition (for its MOZHARNESS_TEST_PATHS), then nothing else
        # exists: the dry run records what it cannot prepare, and sends nothing.
        taskcluster.script = [(200, definition)] + [(404, {"code": "ResourceNotFound"})] * 20
        env = {"TASKCLUSTER_ROOT_URL": taskcluster.url}
        result = _run(["backfill", task_id], tmp_path, **env)
        assert result.returncode == 0, result.stderr
        with ci.engine.connect() as conn:
            report = conn.execute(sa.select(backfill_report)).one()
        assert (report.strategy, report.same_manifests) == ("bisect", True)
        taskcluster.script = [(200, definition)] + [(404, {"code": "ResourceNotFound"})] * 20
        by_label = _run(
            ["backfill", task_id, "--by-label", "--strategy", "linear"], tmp_path, **env
        )
        assert by_label.returncode == 0, by_label.stderr
    assert all(path.startswith("/api/") for _, path, _ in taskcluster.seen)


def test_one_open_search_per_label_and_push(tmp_path: Path) -> None:
    ci, task_id = _ingested_task(tmp_path, 20)
    with ci.engine.begin() as conn:
        case = conn.execute(sa.select(sa.func.max(triage_case.c.id))).scalar_one()
        from_triage = open_report_for_case(conn, case, START, BackfillSettings())
    # Another run of the same label on the same push, asked for by hand: the same search.
    retrigger = ci.add_run(20, [A, B], action="retrigger", failed=True)
    with ci.engine.begin() as conn:
        other_task = conn.execute(sa.select(job.c.task_id).where(job.c.id == retrigger)).scalar()
        assert request_backfill(conn, other_task, START) == from_triage
        assert request_backfill(conn, task_id, START) == from_triage
        assert conn.execute(sa.select(sa.func.count()).select_from(backfill_report)).scalar() == 1
