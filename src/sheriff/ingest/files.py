"""Load files in the real formats: task definitions, Pulse messages, manifest artifacts.

Each file is parsed and checked whole before anything is written, then written in one
transaction, so a malformed file leaves the database exactly as it was; the error names
the file and the entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.ci.artifacts import gunzipped
from sheriff.errors import InputError
from sheriff.ingest.pulse import run_update
from sheriff.model.job import (
    PULSE_EXCHANGE_STATES,
    NotATreeherderJob,
    TaskJob,
    TaskShapeError,
    jobs_of_task,
)
from sheriff.model.task_shapes import (
    check_manifests_by_task,
    check_pulse_message,
    check_status,
    check_tests_by_manifest,
)
from sheriff.store.loader import (
    LoadStats,
    RunUpdate,
    apply_run_updates,
    load_jobs,
    load_push_manifests,
)
from sheriff.store.schema import push, repository

_ENTRY_KEY = re.compile(r'"([A-Za-z0-9_-]{22})"\s*:\s*\{')


def read_json(path: Path) -> Any:
    """A JSON file, gzipped or not; errors name the file and, where it can, the entry."""
    try:
        text = gunzipped(path.read_bytes()).decode("utf-8")
    except (OSError, InputError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from exc
    try:
        # orjson: strict JSON (no NaN), numbers in range, nesting at most 1,024 deep.
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        keys = _ENTRY_KEY.findall(text, 0, exc.pos)
        where = f" (in the entry for task {keys[-1]})" if keys else ""
        raise InputError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}{where}: {exc.msg}"
        ) from exc


def _entries(path: Path, data: Any, what: str) -> list[tuple[str, Any]]:
    """Entries keyed by task id: an object `{taskId: …}` or a list of objects."""
    if isinstance(data, Mapping):
        if isinstance(data.get("tasks"), list):  # a listTaskGroup response
            data = data["tasks"]
        else:
            return list(data.items())
    if isinstance(data, list):
        return [(str(i), item) for i, item in enumerate(data)]
    raise InputError(f"{path}: expected an object of {what} keyed by task id, or a list")


def parse_task_file(path: Path) -> tuple[list[TaskJob], dict[str, int]]:
    """Jobs from a file of task definitions (`{taskId: definition}`, or listTaskGroup's
    `{"tasks": [{"task": …, "status": …}]}`); tasks Treeherder would not show are counted.
    A malformed entry refuses the whole file, naming the entry and the field."""
    jobs: list[TaskJob] = []
    skipped: dict[str, int] = {}
    for key, entry in _entries(path, read_json(path), "task definitions"):
        if not isinstance(entry, Mapping):
            raise InputError(f"{path}: entry {key[:40]}: expected a task definition object")
        task, runs, task_id = entry, None, key
        try:
            if "task" in entry and "status" in entry:
                status = check_status(entry["status"])
                task, runs, task_id = entry["task"], status.get("runs"), status["taskId"]
            jobs.extend(jobs_of_task(task_id, task, runs))
        except NotATreeherderJob as exc:
            skipped[str(exc)] = skipped.get(str(exc), 0) + 1
        except TaskShapeError as exc:
            raise InputError(f"{path}: task {task_id[:40]}: {exc}") from exc
    return jobs, skipped


def parse_pulse_file(path: Path) -> list[RunUpdate]:
    """Run updates from Pulse messages (the `exchange/taskcluster-queue/v1/task-*` ones)."""
    updates: list[RunUpdate] = []
    for key, message in _entries(path, read_json(path), "Pulse messages"):
        try:
            checked = check_pulse_message(message, PULSE_EXCHANGE_STATES)
        except TaskShapeError as exc:
            raise InputError(
                f"{path}: message {key[:40]}: not a Taskcluster queue message: {exc}"
            ) from exc
        update = run_update(checked)
        if update is not None:
            updates.append(update)
    return updates


def ingest_tasks(engine: Engine, path: Path) -> LoadStats:
    jobs, skipped = parse_task_file(path)
    with engine.begin() as conn:
        stats = load_jobs(conn, jobs)
    for reason, count in skipped.items():
        stats.skipped[reason] = stats.skipped.get(reason, 0) + count
    return stats


def ingest_pulse(engine: Engine, path: Path) -> LoadStats:
    updates = parse_pulse_file(path)
    with engine.begin() as conn:
        return apply_run_updates(conn, updates)


def _checked(check: Callable[[Any], dict[str, list[str]]], path: Path) -> dict[str, list[str]]:
    try:
        return check(read_json(path))
    except TaskShapeError as exc:
        raise InputError(f"{path}: {exc}") from exc


def ingest_manifests(
    engine: Engine,
    repo: str,
    revision: str,
    manifests_by_task: Path,
    tests_by_manifest: Path | None,
) -> dict[str, int]:
    """Load a push's `manifests-by-task.json` and `tests-by-manifest.json` (plain or .gz)."""
    by_label = _checked(check_manifests_by_task, manifests_by_task)
    tests: dict[str, list[str]] = {}
    if tests_by_manifest is not None:
        tests = _checked(check_tests_by_manifest, tests_by_manifest)
    with engine.begin() as conn:
        push_id = conn.execute(
            sa.select(push.c.id)
            .join(repository, repository.c.id == push.c.repository_id)
            .where(repository.c.name == repo, push.c.revision == revision)
        ).scalar()
        if push_id is None:
            raise InputError(
                f"push {repo}/{revision} is not stored: ingest its tasks before its manifests"
            )
        return load_push_manifests(conn, push_id, by_label, tests)
