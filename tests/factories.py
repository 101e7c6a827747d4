"""Task definitions in the shape of the real ones, for tests that need many of them."""

from __future__ import annotations

import copy
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import slugid

REAL_TASKS = Path(__file__).resolve().parent / "data/treeherder/pulse/taskcluster_tasks.json"


@cache
def _template() -> dict[str, Any]:
    tasks = json.loads(REAL_TASKS.read_text())
    return tasks["A35mWTRuQmyj88yMnIF0fA"]  # a real linux64-qr debug mochitest task


def make_task(
    *,
    revision: str,
    label: str,
    manifests: list[str] | None = None,
    platform: str = "linux1804-64-qr",
    collection: str = "opt",
    queue: str = "gecko-t/t-linux-large-gcp",
    group: tuple[str, str] = ("Mochitests", "M"),
    symbol: str = "bc1",
    created: str = "2026-11-02T08:00:00.000Z",
    task_group_id: str | None = None,
    repository: str = "autoland",
    pushlog_id: int = 1,
    action: str | None = None,
    suite: str = "mochitest-browser-chrome",
    parent: str | None = None,
) -> dict[str, Any]:
    """A task definition like the real ones, changed where the caller says; its parent is
    the decision task (its group) unless an action task `parent` is named."""
    task = copy.deepcopy(_template())
    task.pop("provisionerId", None)
    task.pop("workerType", None)
    task["taskQueueId"] = queue
    task["taskGroupId"] = task_group_id or named_task_id("decision task group")
    task["created"] = created
    task["extra"]["parent"] = parent or task["taskGroupId"]
    task["metadata"]["name"] = label
    task["routes"] = [f"tc-treeherder.v2.{repository}.{revision}.{pushlog_id}"]
    th = task["extra"]["treeherder"]
    th.update(
        {
            "machine": {"platform": platform},
            "collection": {collection: True},
            "groupName": group[0],
            "groupSymbol": group[1],
            "symbol": symbol,
        }
    )
    task["tags"]["label"] = label
    if action:
        task["tags"]["action"] = action
    env = task["payload"]["env"]
    env.pop("MOZHARNESS_TEST_PATHS", None)
    if manifests is not None:
        env["MOZHARNESS_TEST_PATHS"] = json.dumps({suite: manifests}, sort_keys=True)
    return task


def new_task_id() -> str:
    return slugid.nice()


def named_task_id(name: str) -> str:
    """A task id that is always the same for `name` (a real slugid, as Taskcluster makes)."""
    return slugid.encode(uuid.uuid5(uuid.NAMESPACE_URL, f"sheriff-tests:{name}"))


def task_on_push(
    push_index: int, label: str, platform: str, manifests: list[str] | None
) -> dict[str, Any]:
    """A task of push number `push_index` (one push an hour, each in its own group)."""
    return make_task(
        revision=f"rev{push_index:02d}",
        pushlog_id=push_index,
        label=label,
        platform=platform,
        manifests=manifests,
        created=f"2026-11-02T{8 + push_index:02d}:00:00.000Z",
        task_group_id=named_task_id(f"group {push_index}"),
    )


def case_row(job_id: int, push_id: int, label: str, at: Any, **values: Any) -> dict[str, Any]:
    """A `triage_case` row: decided a regression by `seed` at `at`, unless `values` say
    otherwise."""
    return {
        "job_id": job_id,
        "push_id": push_id,
        "label": label,
        "state": "decided",
        "verdict": "regression",
        "policy": "seed",
        "opened_at": at,
        "updated_at": at,
        **values,
    }


def report_row(push_id: int, job_id: int | None, at: Any, **values: Any) -> dict[str, Any]:
    """A `backfill_report` row of repository 1, opened (and matured) at `at`: an open
    search for a regression, unless `values` say otherwise."""
    return {
        "repository_id": 1,
        "push_id": push_id,
        "job_id": job_id,
        "source": "regression",
        "label": "bc1",
        "strategy": "flake-aware",
        "same_manifests": True,
        "tests": [],
        "failure_lines": [],
        "fail_rate": 1.0,
        "case_ids": [],
        "status": "open",
        "opened_at": at,
        "mature_at": at,
        "updated_at": at,
        **values,
    }
