"""Treeherder's view of the simulated CI: pushes, jobs, log URLs and bug suggestions."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from sheriff.sim.artifacts import LIVE_LOG, errorsummary_listed, errorsummary_name, failure_lines
from sheriff.sim.bugs import open_bugs
from sheriff.sim.entities import Job, Push
from sheriff.sim.etl import MAX_ERROR_LINES, has_logs
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
    {"id": 8, "name": "intermittent needs bugid"},  # its name in Treeherder's fixture
]


# Treeherder counts error lines after only this light cleaning (its cache_clean_error_line):
# most run-to-run numbers survive it, so a varying line looks new to Treeherder.
_LINE_CLEANING = (
    (re.compile(r" [0-9]+\.[0-9]+ "), " X "),
    (re.compile(r" leaked [0-9]+ window\(s\)"), " leaked X window(s)"),
    (re.compile(r" [0-9]+ bytes leaked"), " X bytes leaked"),
    (re.compile(r" value=[0-9]+"), " value=*"),
    (re.compile(r"ot [0-9]+, expected [0-9]+"), "ot X, expected Y"),
    (re.compile(r" http://localhost:[0-9]+/"), " http://localhost:X/"),
    (re.compile(r" finished in \d+ms"), " finished"),
)


def cache_clean_line(line: str) -> str:
    """The key under which Treeherder counts an error line across jobs."""
    for pattern, replacement in _LINE_CLEANING:
        line = pattern.sub(replacement, line)
    return line


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
                "comments": comment,  # CommitSerializer's name (the API's)
            }
        ],
        "branch": None,
        "revision_count": 1,
        "push_timestamp": int(world.time_of(push.time).timestamp()),
        "repository_id": REPOSITORY_ID,
    }


def _result(job: Job) -> str:
    task = job.task
    run = task.runs[job.run_id]
    if job.state != "completed":
        return "unknown"  # pending and running jobs (taskcluster_pulse/handler.py)
    if run.state == "completed":
        return "success"
    if run.state == "failed":
        return "testfailed" if task.kind == "test" else "busted"
    if run.reason_resolved == "canceled":
        return "usercancel"
    return "retry" if job.run_id + 1 < len(task.runs) else "exception"


def _small_id(text: str) -> int:
    """A stable small id for a reference-data row (job type, job group, platform)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=3).digest(), "big")


def _treeherder_time(world: World, minutes: float) -> str:
    # Django REST framework's rendering of a naive datetime: milliseconds, no zone.
    return world.time_of(minutes).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def job_dict(world: World, job: Job) -> dict[str, Any]:
    """A job as `/api/project/<repo>/jobs/` lists it (Treeherder's property mapping)."""
    task = job.task
    run = task.runs[job.run_id]
    th = treeherder_extra(world, task)
    platform = th["machine"]["platform"]
    option = next(iter(th["collection"]))
    group_name = th.get("groupName", "unknown")
    group_symbol = th.get("groupSymbol", "?")
    epoch = world.start.timestamp()
    started = run.started if run.started is not None and job.state != "pending" else None
    ended = run.resolved if job.state == "completed" else None
    return {
        "build_architecture": "x86_64",
        "build_os": platform_os(platform),
        "build_platform": platform,
        "build_platform_id": _small_id("build:" + platform),
        "build_system_type": "taskcluster",
        "end_timestamp": int(epoch + ended * 60) if ended is not None else 0,
        "failure_classification_id": job.classification,
        "id": job.job_id,
        "job_group_description": "",
        "job_group_id": _small_id(f"group:{group_symbol}:{group_name}"),
        "job_group_name": group_name,
        "job_group_symbol": group_symbol,
        "job_guid": job_guid(task.task_id, job.run_id),
        "job_type_description": "",
        "job_type_id": _small_id("type:" + task.label),
        "job_type_name": task.label,
        "job_type_symbol": th["symbol"],
        "last_modified": _treeherder_time(world, job.last_modified),
        "machine_name": run.worker_id or "unknown",
        "machine_platform_architecture": "x86_64",
        "machine_platform_os": platform_os(platform),
        "option_collection_hash": hashlib.sha1(option.encode()).hexdigest(),
        "platform": platform,
        "push_id": task.push.push_id,
        "reason": "scheduled",
        "ref_data_name": task.label,
        "result": _result(job),
        "result_set_id": task.push.push_id,
        "signature": hashlib.sha1(f"{platform}{option}{task.label}".encode()).hexdigest(),
        "start_timestamp": int(epoch + started * 60) if started is not None else 0,
        "state": job.state,
        "submit_timestamp": int(epoch + run.scheduled * 60),
        "tier": th.get("tier", 1),
        "who": task.push.author,
        "task_id": task.task_id,
        "retry_id": job.run_id,
        "platform_option": option,
    }


# `/api/jobs/` answers rows in this order, named by `job_property_names`.
JOB_PROPERTY_NAMES = [
    "failure_classification_id",
    "id",
    "job_group_name",
    "job_group_symbol",
    "job_type_name",
    "job_type_symbol",
    "last_modified",
    "platform",
    "push_id",
    "push_revision",
    "result",
    "signature",
    "state",
    "tier",
    "task_id",
    "retry_id",
    "duration",
    "platform_option",
]


def job_row(world: World, job: Job) -> list[Any]:
    """A job as `/api/jobs/` lists it: a list of values in `JOB_PROPERTY_NAMES` order."""
    full = job_dict(world, job)
    run = job.task.runs[job.run_id]
    # Treeherder's duration: end (or now) minus start (or submit), in whole minutes.
    started = run.started if job.state != "pending" and run.started is not None else run.scheduled
    ended = run.resolved if job.state == "completed" and run.resolved else world.minutes
    full["duration"] = max(round(ended - started), 1)
    full["push_revision"] = job.task.push.revision
    return [full[name] for name in JOB_PROPERTY_NAMES]


def parse_status(world: World, job: Job) -> str:
    if job.parsed is None or world.minutes < job.parsed:
        return "pending"
    return "failed" if job.parse_failed else "parsed"


def log_urls(world: World, root_url: str, job: Job) -> list[dict[str, Any]]:
    """`/api/project/<repo>/job-log-url/?job_id=`: the job's logs and their parse status;
    none before the run completed, and none for an exception run (handler.py)."""
    if not has_logs(job):
        return []
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
    if errorsummary_listed(world, task, task.runs[job.run_id]):
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
    """`/api/project/<repo>/jobs/<id>/bug_suggestions/` (empty until the log is parsed): one
    entry per error line the parser kept (at most 40), its bugs from Bugscache.search."""
    if parse_status(world, job) != "parsed":
        return []
    task = job.task
    run = task.runs[job.run_id]
    out = []
    lines = failure_lines(world, task, run)[:MAX_ERROR_LINES]
    history = job.line_history or [(0, False)] * len(lines)
    for line, (counter, new_in_rev) in zip(lines, history, strict=True):
        # As Treeherder's search terms: a test's file name, or a crash's signature.
        tokens = line.text.split(" | ")
        if line.text.startswith("PROCESS-CRASH") and len(tokens) >= 3:
            terms = [tokens[1]]
        else:
            terms = [line.test.rsplit("/", 1)[-1]] if line.test else [line.text[:100]]
        out.append(
            {
                "search": line.text,
                "path_end": line.test,
                "search_terms": terms,
                "bugs": {"open_recent": open_bugs(world, task, line), "all_others": []},
                "line_number": line.line_number,
                "counter": counter,
                "failure_new_in_rev": new_in_rev,
            }
        )
    return out
