"""Artifacts, rendered on request from the run's drawn outcome (nothing is stored)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sheriff.sim import draws
from sheriff.sim.catalog import FailureMode, render_message
from sheriff.sim.entities import INFRA_NO_SUMMARY, INFRA_STORM, Failure, Run, Task
from sheriff.sim.world import World

LIVE_LOG = "public/logs/live_backing.log"


@dataclass(frozen=True, slots=True)
class Artifact:
    name: str
    content_type: str
    storage_type: str = "s3"  # or "error": the worker could not upload it (answers 424)
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class FailureLine:
    """One error line of a run's log, as Treeherder's parser would extract it."""

    line_number: int  # 0-based, as Treeherder's log parser counts
    text: str  # without the log's prefixes: what bug_suggestions calls `search`
    test: str | None


def errorsummary_name(world: World, task: Task) -> str:
    assert task.spec is not None
    return f"public/test_info/{world.scenario.suites[task.spec.suite].name}_errorsummary.log"


def artifacts(world: World, task: Task, run: Run) -> list[Artifact]:
    """The artifacts a run has uploaded (only once it resolved, as workers upload at the end)."""
    if run.resolved is None:
        return []
    if run.reason_resolved == "canceled":
        return [Artifact(LIVE_LOG, "text/plain; charset=utf-8")]
    found = [Artifact(LIVE_LOG, "text/plain; charset=utf-8")]
    if task.kind == "decision-task":
        found += [
            Artifact("public/actions.json", "application/json"),
            Artifact("public/label-to-taskid.json", "application/json"),
            Artifact("public/manifests-by-task.json.gz", "application/gzip"),
            Artifact("public/parameters.yml", "text/yaml"),
            Artifact("public/tests-by-manifest.json.gz", "application/gzip"),
        ]
    elif task.kind == "test" and run.outcome.infra in (None, INFRA_STORM):
        found.append(Artifact(errorsummary_name(world, task), "text/plain; charset=utf-8"))
    elif task.kind == "test" and _error_artifact(world, task, run):
        # The worker recorded the missing file as an `error` artifact (half the time).
        name = errorsummary_name(world, task)
        found.append(
            Artifact(
                name,
                "application/json",
                storage_type="error",
                reason="file-missing-on-worker",
                message=f"Artifact not found: {name}",
            )
        )
    return sorted(found, key=lambda a: a.name)


def _error_artifact(world: World, task: Task, run: Run) -> bool:
    if run.outcome.infra != INFRA_NO_SUMMARY:
        return False
    return draws.unit(world.seed, "error-artifact", task.task_id, run.run_id) < 0.5


def errorsummary_listed(world: World, task: Task, run: Run) -> bool:
    """Whether the run uploaded its errorsummary (Treeherder then lists `errorsummary_json`)."""
    if task.kind != "test":
        return False
    name = errorsummary_name(world, task)
    return any(a.name == name and a.storage_type == "s3" for a in artifacts(world, task, run))


def render(world: World, task: Task, run: Run, name: str) -> bytes | None:
    """The bytes of one artifact, or None when the run has no such uploaded artifact."""
    if not any(a.name == name and a.storage_type == "s3" for a in artifacts(world, task, run)):
        return None
    if name == LIVE_LOG:
        return live_log(world, task, run).encode()
    if name.endswith("_errorsummary.log"):
        return errorsummary(world, task, run).encode()
    from sheriff.sim import decision

    return decision.artifact(world, task, name)


def failure_lines(world: World, task: Task, run: Run) -> list[FailureLine]:
    """The error lines of a run's log, with their line numbers in `live_backing.log`."""
    return _log(world, task, run)[1]


def _message(world: World, task: Task, run: Run, failure: Failure) -> str:
    mode = world.catalog.failure_of(failure.test, failure.regression)
    return render_message(mode, world.seed, task.task_id, run.run_id, failure.test)


def _log(world: World, task: Task, run: Run) -> tuple[list[str], list[FailureLine]]:
    """The run's live_backing.log: taskcluster's own lines, then run-task's `[task <time>]`
    prefix before mozharness's `HH:MM:SS  LEVEL - ` lines, as real test logs have."""
    started = world.time_of(run.started if run.started is not None else run.scheduled)
    clock = started.strftime("%Y-%m-%d %H:%M:%S.000Z")
    header = [
        f"[taskcluster {clock}] Task ID: {task.task_id}",
        f"[taskcluster {clock}] Worker Group: {run.worker_group}",
        f"[taskcluster {clock}] Worker ID: {run.worker_id}",
        f"[taskcluster {clock}] === Task Starting ===",
    ]
    lines = list(header)
    errors: list[FailureLine] = []
    rng = draws.rng(world.seed, "log", task.task_id, run.run_id)
    elapsed = 0.0

    def emit(level: str, text: str) -> int:
        nonlocal elapsed
        elapsed += rng.random() * 20
        moment = started + timedelta(seconds=elapsed)
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        lines.append(f"[task {stamp}] {moment.strftime('%H:%M:%S')} {level:>8} - {text}")
        return len(lines) - 1

    if task.kind == "test":
        for manifest in task.manifests:
            emit("INFO", f"TEST-START | {manifest}")
        for failure in run.outcome.failures:
            mode = world.catalog.failure_of(failure.test, failure.regression)
            if mode.anonymous:
                errors.append(_anonymous_line(world, task, run, mode, emit))
                continue
            text = f"TEST-UNEXPECTED-{mode.status} | {failure.test} | "
            text += _message(world, task, run, failure)
            errors.append(FailureLine(emit("INFO", text), text, failure.test))
            if mode.crash_signature:
                offset = rng.getrandbits(20)
                crash = f"PROCESS-CRASH | application crashed [@ {mode.crash_signature} + "
                crash += f"0x{offset:x}] | {failure.test}"
                errors.append(FailureLine(emit("WARNING", crash), crash, failure.test))
        if run.outcome.infra is not None:
            text = "Automation Error: mozprocess timed out after 1800 seconds running the harness"
            errors.append(FailureLine(emit("ERROR", text), text, None))
    code = {"completed": 0, "failed": 1}.get(run.state, -1)
    ended = (started + timedelta(seconds=elapsed)).strftime("%Y-%m-%d %H:%M:%S.000Z")
    lines.append(f"[taskcluster {ended}] === Task Finished === exit code {code}")
    return lines, errors


def _anonymous_line(
    world: World, task: Task, run: Run, mode: FailureMode, emit: Callable[[str, str], int]
) -> FailureLine:
    """A crash between tests or a harness timeout: the line names no test (mozlog's tbpl
    formatter puts the process id where the test would be)."""
    if mode.crash_signature:
        offset = draws.rng(world.seed, "crash-offset", task.task_id, run.run_id).getrandbits(20)
        pid = 1000 + int(draws.unit(world.seed, "pid", task.task_id, run.run_id) * 60000)
        text = f"PROCESS-CRASH | application crashed [@ {mode.crash_signature} + 0x{offset:x}]"
        text += f" | pid: {pid}"
        return FailureLine(emit("WARNING", text), text, None)
    text = f"TEST-UNEXPECTED-{mode.status} | Last test finished | {mode.template}"
    return FailureLine(emit("ERROR", text), text, None)


def live_log(world: World, task: Task, run: Run) -> str:
    return "\n".join(_log(world, task, run)[0]) + "\n"


def errorsummary(world: World, task: Task, run: Run) -> str:
    """A mozlog errorsummary: test_groups, test_result per failure, crash, group_result."""
    assert task.spec is not None
    rng = draws.rng(world.seed, "errorsummary", task.task_id, run.run_id)
    records: list[dict[str, Any]] = [
        {"action": "test_groups", "line": 2, "groups": list(task.manifests)}
    ]
    failed_groups: set[str] = set()
    line = 10
    test_manifest = world.catalog.test_manifest
    if run.outcome.infra is not None:  # a storm: every group ended ERROR, no test named
        failed_groups.update(task.manifests)
    for failure in run.outcome.failures:
        mode = world.catalog.failure_of(failure.test, failure.regression)
        group = test_manifest[failure.test]
        failed_groups.add(group)
        line += rng.randrange(20, 400)
        if mode.anonymous:
            records.append(_anonymous_record(world, task, run, mode, group, line))
            continue
        records.append(
            {
                "action": "test_result",
                "test": failure.test,
                "subtest": None,
                "group": group,
                "status": mode.status,
                "expected": "PASS",
                "message": _message(world, task, run, failure),
                "stack": None,
                "modifiers": "",
                "known_intermittent": [],
                "duration": rng.randrange(200, 90_000),
                "line": line,
            }
        )
        if mode.crash_signature:
            records.append(
                {
                    "action": "crash",
                    "test": failure.test,
                    "signature": mode.crash_signature,
                    "minidump_path": f"/tmp/tmp{rng.getrandbits(32):08x}/minidumps/"
                    f"{draws.slug(world.seed, 'dump', task.task_id, run.run_id)}.dmp",
                    "group": group,
                    "line": line + 1,
                }
            )
    line += 50
    for manifest in task.manifests:
        records.append(
            {
                "action": "group_result",
                "group": manifest,
                "status": "ERROR" if manifest in failed_groups else "OK",
                "duration": rng.randrange(5_000, 600_000),
                "line": line,
            }
        )
    return "".join(json.dumps(r) + "\n" for r in records)


def _anonymous_record(
    world: World, task: Task, run: Run, mode: FailureMode, group: str, line: int
) -> dict[str, Any]:
    """The errorsummary record of a line that names no test: mozlog's `crash` without a
    test, or the harness's `log` at ERROR for a timeout."""
    if mode.crash_signature:
        return {
            "action": "crash",
            "test": None,
            "signature": mode.crash_signature,
            "minidump_path": f"/tmp/{draws.slug(world.seed, 'dump', task.task_id, run.run_id)}.dmp",
            "group": group,
            "line": line,
        }
    message = f"TEST-UNEXPECTED-{mode.status} | Last test finished | {mode.template}"
    return {"action": "log", "level": "ERROR", "message": message, "line": line}


def gz_json(value: Any) -> bytes:
    """Gzipped JSON with a fixed mtime, so the bytes are the same on every request."""
    return gzip.compress(json.dumps(value, sort_keys=True).encode(), mtime=0)
