"""Treeherder's view of the simulated CI: pushes, jobs, log URLs and bug suggestions."""

from __future__ import annotations

import hashlib
from typing import Any

from sheriff.sim.artifacts import LIVE_LOG, errorsummary_name, failure_lines
from sheriff.sim.entities import Job, Push
from sheriff.sim.tasks import job_guid, treeherder_extra
from sheriff.sim.world import World, platform_os

REPOSITORY_ID = 77

FAILURE_CLASSIFICATIONS = [
    {"id": 1, "name": "not classified"},
    {"id": 2, "name": "fixed by commit"},
    {"id": 3, "name": "expected fail"},
    {"id": 4, "name": "intermittent"},
    {"id": 5, "name": "infra"},
    {"id": 6, "name": "new failure not classified"},
    {"id": 7, "name": "autoclassified intermittent"},
    {"id": 8, "name": "intermittent needs bug"},
]


def push_dict(world: World, push: Push) -> dict[str, Any]:
    """A push as `/api/project/<repo>/push/` lists it."""
    comment = f"Bug {1_900_000 + push.index} - change {push.index} r=reviewer"
    return {
        "id": push.push_id,
        "revision": push.revision,
        "author": push.author,
        "revisions": [
            {
                "result_set_id": push.push_id,
                "repository_id": REPOSITORY_ID,
                "revision": push.revision,
                "author": f"{push.author.split('@')[0]} <{push.author}>",
                "comments": comment,
            }
        ],
        "revision_count": 1,
        "push_timestamp": int(world.time_of(push.time).timestamp()),
        "repository_id": REPOSITORY_ID,
    }


def _result(job: Job) -> str:
    task = job.task
    run = task.runs[job.run_id]
    if run.state == "completed":
        return "success"
    if run.state == "failed":
        return "testfailed" if task.kind == "test" else "busted"
    if run.reason_resolved == "canceled":
        return "usercancel"
    return "retry" if job.run_id + 1 < len(task.runs) else "exception"


def job_dict(world: World, job: Job) -> dict[str, Any]:
    """Treeherder's flat job dict (the fields of its jobs list endpoints)."""
    task = job.task
    run = task.runs[job.run_id]
    th = treeherder_extra(world, task)
    platform = th["machine"]["platform"]
    option = next(iter(th["collection"]))
    signature = hashlib.sha1(f"{platform}{option}{task.label}".encode()).hexdigest()
    epoch = world.start.timestamp()
    return {
        "id": job.job_id,
        "job_guid": job_guid(task.task_id, job.run_id),
        "task_id": task.task_id,
        "retry_id": job.run_id,
        "push_id": task.push.push_id,
        "result_set_id": task.push.push_id,
        "state": "completed",
        "result": _result(job),
        "failure_classification_id": job.classification,
        "job_type_name": task.label,
        "job_type_symbol": th["symbol"],
        "job_type_description": "",
        "job_group_name": th.get("groupName", "unknown"),
        "job_group_symbol": th.get("groupSymbol", "?"),
        "job_group_description": "",
        "platform": platform,
        "build_platform": platform,
        "build_os": platform_os(platform),
        "build_architecture": "x86_64",
        "machine_platform_os": platform_os(platform),
        "machine_platform_architecture": "x86_64",
        "machine_name": run.worker_id or "unknown",
        "platform_option": option,
        "option_collection_hash": hashlib.sha1(option.encode()).hexdigest(),
        "tier": th.get("tier", 1),
        "job_kind": th.get("jobKind", "other"),
        "reason": "scheduled",
        "who": task.push.author,
        "ref_data_name": task.label,
        "signature": signature,
        "build_system_type": "taskcluster",
        "submit_timestamp": int(epoch + run.scheduled * 60),
        "start_timestamp": int(
            epoch + (run.started if run.started is not None else run.scheduled) * 60
        ),
        "end_timestamp": int(epoch + (run.resolved or 0) * 60),
        "last_modified": world.time_of(job.ingested).strftime("%Y-%m-%dT%H:%M:%S.%f"),
    }


def parse_status(world: World, job: Job) -> str:
    if world.minutes < job.parsed:
        return "pending"
    return "failed" if job.parse_failed else "parsed"


def log_urls(world: World, root_url: str, job: Job) -> list[dict[str, Any]]:
    """`/api/project/<repo>/job-log-url/?job_id=`: the job's logs and their parse status."""
    task = job.task
    base = f"{root_url}/api/queue/v1/task/{task.task_id}/runs/{job.run_id}/artifacts/"
    status = parse_status(world, job)
    logs = [
        {
            "id": job.job_id * 10,
            "job_id": job.job_id,
            "name": "live_backing_log",
            "url": base + LIVE_LOG,
            "parse_status": status,
        }
    ]
    run = task.runs[job.run_id]
    if task.kind == "test" and run.outcome.infra is None and run.reason_resolved != "canceled":
        logs.append(
            {
                "id": job.job_id * 10 + 1,
                "job_id": job.job_id,
                "name": "errorsummary_json",
                "url": base + errorsummary_name(world, task),
                "parse_status": status,
            }
        )
    return logs


def bug_suggestions(world: World, job: Job) -> list[dict[str, Any]]:
    """`/api/project/<repo>/jobs/<id>/bug_suggestions/` (empty until the log is parsed)."""
    if parse_status(world, job) != "parsed":
        return []
    task = job.task
    run = task.runs[job.run_id]
    out = []
    for counter, line in enumerate(failure_lines(world, task, run)):
        open_recent = []
        bug = world.catalog.known_bug.get(line.test) if line.test else None
        if bug is not None:
            open_recent.append(
                {
                    "id": bug,
                    "status": "NEW",
                    "resolution": "",
                    "summary": f"Intermittent {line.test} | single tracking bug",
                    "crash_signature": "",
                    "keywords": "intermittent-failure,intermittent-testcase",
                    "whiteboard": "",
                    "dupe_of": None,
                    "internal_id": bug - 1_000_000,
                    "occurrences": None,
                }
            )
        terms = [line.test.rsplit("/", 1)[-1]] if line.test else []
        out.append(
            {
                "search": line.text,
                "path_end": line.test,
                "search_terms": terms,
                "bugs": {"open_recent": open_recent, "all_others": []},
                "line_number": line.line_number,
                "counter": counter,
                "failure_new_in_rev": False,
            }
        )
    return out
