"""Synthetic jobs in the shape of real Firefox CI test tasks, for the benchmarks.

Labels recur across pushes (platform, suite and chunk), each running about ten manifests
from a pool; a share of pushes deals manifests to chunks afresh, as dynamic chunking
does, so manifest sets both recur and change.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import slugid

from sheriff.model.job import Platform, PushRef, TaskJob

PLATFORMS = [
    ("linux1804-64-qr", "opt", "gecko-t/t-linux-large-gcp"),
    ("linux1804-64-qr", "debug", "gecko-t/t-linux-large-gcp"),
    ("linux1804-64-asan-qr", "asan", "gecko-t/t-linux-xlarge-gcp"),
    ("linux2404-64", "opt", "gecko-t/t-linux-2404-gcp"),
    ("windows11-64-24h2", "opt", "gecko-t/win11-64-24h2"),
    ("windows11-64-24h2", "debug", "gecko-t/win11-64-24h2"),
    ("macosx1470-64", "debug", "releng-hardware/gecko-t-osx-1400-r8"),
    ("android-em-14-x86_64", "opt", "gecko-t/t-linux-kvm-gcp"),
]
SUITES = [
    ("mochitest-browser-chrome", "M", "Mochitests", "bc"),
    ("mochitest-plain", "M", "Mochitests", ""),
    ("xpcshell", "X", "Xpcshell tests", "X"),
    ("web-platform-tests", "W", "Web platform tests", "wpt"),
    ("reftest", "R", "Reftests", "R"),
]


@dataclass
class Shape:
    jobs: int = 1_000_000
    manifests: int = 5_000
    manifests_per_job: int = 10
    tests_per_manifest: int = 20
    rechunk_probability: float = 0.2  # share of pushes that deal manifests afresh
    seed: int = 1


def manifest_path(suite: str, index: int) -> str:
    return f"testing/{suite}/area{index // 50:03d}/sub{index % 50:02d}/{suite}.toml"


def test_paths(manifest: str, count: int) -> list[str]:
    base = manifest.rsplit("/", 1)[0]
    return [f"{base}/test_{i:03d}.js" for i in range(count)]


class Generator:
    """Deterministic jobs; iterate `batches(size)`."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.rng = random.Random(shape.seed)
        per_suite = shape.manifests // len(SUITES)
        self.pool = {s[0]: [manifest_path(s[0], i) for i in range(per_suite)] for s in SUITES}
        self.chunks = {s[0]: max(1, per_suite // shape.manifests_per_job) for s in SUITES}
        self.labels_per_push = len(PLATFORMS) * sum(self.chunks.values())
        self._deal()

    def _deal(self) -> None:
        self.dealt: dict[str, list[list[str]]] = {}
        for suite, paths in self.pool.items():
            shuffled = paths[:]
            self.rng.shuffle(shuffled)
            n = self.chunks[suite]
            self.dealt[suite] = [sorted(shuffled[i::n]) for i in range(n)]

    def all_manifests(self) -> list[str]:
        return [m for paths in self.pool.values() for m in paths]

    def jobs(self) -> Iterator[TaskJob]:
        start = datetime(2026, 7, 1, tzinfo=UTC)
        made, push_index = 0, 0
        while made < self.shape.jobs:
            if push_index and self.rng.random() < self.shape.rechunk_probability:
                self._deal()
            when = start + timedelta(minutes=12 * push_index)
            push = PushRef("autoland", f"{push_index:040x}", push_index + 1)
            group = slugid.nice()
            for plat, collection, queue in PLATFORMS:
                platform = Platform("-", plat, "-")
                for suite, group_symbol, group_name, symbol in SUITES:
                    for chunk, manifests in enumerate(self.dealt[suite], start=1):
                        if made >= self.shape.jobs:
                            return
                        made += 1
                        yield TaskJob(
                            task_id=slugid.nice(),
                            run_id=0,
                            push=push,
                            task_group_id=group,
                            label=f"test-{plat}/{collection}-{suite}-{chunk}",
                            build_platform=platform,
                            machine_platform=platform,
                            group_name=group_name,
                            group_symbol=group_symbol,
                            job_symbol=f"{symbol}{chunk}",
                            option_collection=collection,
                            tier=1,
                            job_kind="test",
                            task_queue_id=queue,
                            state="completed",
                            result="testfailed" if self.rng.random() < 0.02 else "success",
                            reason="scheduled",
                            who="someone@mozilla.com",
                            product_name="unknown",
                            machine="unknown",
                            retriggerable=True,
                            action=None,
                            parent_task_id=group,
                            test_type=suite.split("-")[0],
                            manifests=tuple(manifests),
                            submit_time=when,
                            start_time=when + timedelta(minutes=5),
                            end_time=when + timedelta(minutes=40),
                        )
            push_index += 1

    def batches(self, size: int) -> Iterator[list[TaskJob]]:
        batch: list[TaskJob] = []
        for job in self.jobs():
            batch.append(job)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch


def _stamp(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z") if moment else None


def listing_entry(job: TaskJob) -> dict[str, Any]:
    """The job as `listTaskGroup` shows its task: definition and status, in the real shape
    (fields sheriff does not read included, as they cost parsing time)."""
    definition = {
        "provisionerId": job.task_queue_id.split("/")[0],
        "workerType": job.task_queue_id.split("/")[1],
        "taskQueueId": job.task_queue_id,
        "schedulerId": "gecko-level-3",
        "taskGroupId": job.task_group_id,
        "dependencies": [job.task_group_id],
        "requires": "all-completed",
        "routes": [
            f"tc-treeherder.v2.{job.push.repository}.{job.push.revision}.{job.push.pushlog_id}",
            f"index.gecko.v2.{job.push.repository}.revision.{job.push.revision}.t.{job.label}",
        ],
        "priority": "low",
        "retries": 5,
        "created": _stamp(job.submit_time),
        "deadline": _stamp(job.submit_time + timedelta(days=1)),
        "expires": _stamp(job.submit_time + timedelta(days=28)),
        "scopes": ["secrets:get:project/taskcluster/gecko/hgfingerprint"],
        "payload": {
            "command": ["/builds/worker/bin/run-task", "--", "test-linux.sh"],
            "env": {
                "MOZHARNESS_TEST_PATHS": json.dumps({"suite": list(job.manifests or ())}),
                "MOZ_AUTOMATION": "1",
                "GECKO_HEAD_REV": job.push.revision,
            },
            "maxRunTime": 5400,
            "artifacts": {"public/logs/": {"type": "directory", "path": "/builds/logs/"}},
        },
        "metadata": {
            "name": job.label,
            "owner": job.who,
            "source": "https://hg.mozilla.org/integration/autoland/file/tip/taskcluster",
            "description": f"{job.label} ([Treeherder push](https://treeherder.mozilla.org))",
        },
        "tags": {
            "kind": "test",
            "label": job.label,
            "retrigger": "true" if job.retriggerable else "false",
            "test-type": job.test_type or "",
        },
        "extra": {
            "parent": job.parent_task_id,
            "treeherder": {
                "machine": {"platform": job.machine_platform.platform},
                "collection": {job.option_collection: True},
                "groupName": job.group_name,
                "groupSymbol": job.group_symbol,
                "symbol": job.job_symbol,
                "tier": job.tier,
                "jobKind": job.job_kind,
            },
            "treeherder-platform": f"{job.machine_platform.platform}/{job.option_collection}",
        },
    }
    state = {"testfailed": "failed", "success": "completed"}.get(job.result, "exception")
    run = {
        "runId": 0,
        "state": state,
        "reasonCreated": "scheduled",
        "reasonResolved": state,
        "workerGroup": "us-central1-b",
        "workerId": "1234567890",
        "takenUntil": _stamp(job.end_time),
        "scheduled": _stamp(job.submit_time),
        "started": _stamp(job.start_time),
        "resolved": _stamp(job.end_time),
    }
    status = {
        "taskId": job.task_id,
        "provisionerId": definition["provisionerId"],
        "workerType": definition["workerType"],
        "taskQueueId": job.task_queue_id,
        "schedulerId": "gecko-level-3",
        "taskGroupId": job.task_group_id,
        "deadline": definition["deadline"],
        "expires": definition["expires"],
        "retriesLeft": 5,
        "state": state,
        "runs": [run],
    }
    return {"task": definition, "status": status}


def generate_jobs(n: int, batch_size: int = 10_000, **shape: object) -> Iterator[list[TaskJob]]:
    """Batches of `n` synthetic jobs (see `Shape` for the knobs)."""
    yield from Generator(Shape(jobs=n, **shape)).batches(batch_size)  # type: ignore[arg-type]
