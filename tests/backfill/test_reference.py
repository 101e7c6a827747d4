"""Backfills of a real task: the reference originalTask.json, backfill action and record context."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonschema
import sqlalchemy as sa

from sheriff.actions.log import enqueue
from sheriff.backfill import BackfillSettings, advance_record, request_backfill
from sheriff.backfill.status import reports
from sheriff.model.job import job_from_task
from sheriff.store.loader import load_jobs
from sheriff.store.schema import action_request, backfill_record
from tests.factories import named_task_id

ORIGINAL_TASK_ID = "KQ5qFIr7SPCY2sQN-lWVxw"
NOW = datetime(2020, 3, 10, 12, 0, tzinfo=UTC)


def _actions(reference: Path) -> Path:
    return reference / "treeherder" / "actions"


def _load_history(
    engine: sa.Engine, reference: Path, earlier: int = 5, earlier_state: str | None = "completed"
) -> str:
    """The real task on its push, its label on `earlier` pushes before, the original failed."""
    original = json.loads((_actions(reference) / "originalTask.json").read_text())
    route = original["routes"][0]  # tc-treeherder.v2.autoland.<revision>.<pushlog id>
    pushlog_id = int(route.rsplit(".", 1)[1])
    created = datetime.fromisoformat(original["created"].replace("Z", "+00:00"))
    jobs = [job_from_task(ORIGINAL_TASK_ID, original, 0, {"runId": 0, "state": "failed"})]
    for back in range(1, earlier + 1):
        task = copy.deepcopy(original)
        task["routes"] = [f"tc-treeherder.v2.autoland.{back:040x}.{pushlog_id - back}"]
        task["created"] = (created - timedelta(hours=back)).isoformat().replace("+00:00", "Z")
        task["taskGroupId"] = named_task_id(f"decision {back}")
        task_id = f"earlier{back}".ljust(21, "x") + "A"  # a slugid: 16 bytes in base64
        run = {"runId": 0, "state": earlier_state} if earlier_state else None
        jobs.append(job_from_task(task_id, task, 0, run))
    with engine.begin() as conn:
        load_jobs(conn, jobs)
    return original["tags"]["label"]


def _request(engine: sa.Engine, strategy: str, depth: int) -> int:
    settings = BackfillSettings()
    with engine.begin() as conn:
        report_id = request_backfill(
            conn, ORIGINAL_TASK_ID, NOW, strategy=strategy, depth=depth, same_manifests=True
        )
        record_id = conn.execute(
            sa.select(backfill_record.c.id).where(backfill_record.c.report_id == report_id)
        ).scalar_one()
    status = advance_record(
        engine, record_id, now=NOW, enqueue=enqueue, observe=None, settings=settings
    )
    assert status == "backfilled"
    return record_id


def test_a_manual_linear_backfill_sends_gecko_backfill_with_valid_input(
    engine: sa.Engine, reference: Path
) -> None:
    label = _load_history(engine, reference)
    _request(engine, "linear", depth=5)
    with engine.connect() as conn:
        [row] = conn.execute(sa.select(action_request)).all()
    action = json.loads((_actions(reference) / "backfillTask.json").read_text())
    assert row.action == action["name"] == "backfill"
    jsonschema.validate(row.input, action["schema"])
    assert row.input == {"depth": 5, "times": 1}
    assert row.task_id == ORIGINAL_TASK_ID
    assert row.revision == "c7766d0b4a121985a8b07e6721d66ccab57bbf76"
    assert row.labels == [label]
    assert row.idempotency_key.startswith("backfill:")


def test_a_manual_bisect_asks_backfill_task_on_the_oldest_push_first(
    engine: sa.Engine, reference: Path
) -> None:
    # The label was not scheduled on the earlier pushes: nothing is known of them yet.
    label = _load_history(engine, reference, earlier_state=None)
    _request(engine, "bisect", depth=5)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(action_request).order_by(action_request.c.id)).all()
    assert {r.strategy for r in rows} == {"backfill-task"}
    # A perf task names no manifests: the label's runs, on the oldest push first to bound
    # the range.
    assert [r.revision for r in rows] == [f"{5:040x}"]
    assert all(r.input["label"] == label and "test_manifests" not in r.input for r in rows)
    assert all(r.task_id is None for r in rows)


def test_record_context_is_reported_in_treeherders_shape(
    engine: sa.Engine, reference: Path
) -> None:
    _load_history(engine, reference)
    _request(engine, "linear", depth=5)
    with engine.connect() as conn:
        [report] = reports(conn)
    treeherder = json.loads((_actions(reference) / "recordContext.json").read_text())
    shared = {"job_id", "push_id", "push_timestamp", "push__revision"}
    assert shared <= set(treeherder[0])
    [record] = report["records"]
    points = record["context"]
    assert len(points) == 6  # the window: five earlier pushes and the original's
    assert all(shared <= set(point) for point in points)
    # Oldest first, as Treeherder lists a record's data points.
    assert [p["push_timestamp"] for p in points] == sorted(p["push_timestamp"] for p in points)
    assert points[-1]["push__revision"] == "c7766d0b4a121985a8b07e6721d66ccab57bbf76"
    assert points[-1]["outcome"] == "failing"
    assert sorted(p["push_timestamp"] for p in treeherder) == [
        p["push_timestamp"] for p in treeherder
    ]
