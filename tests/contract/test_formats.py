"""The simulator answers in the real formats: one contract per format, read from the real
reference files (tests/data/treeherder) and checked against the simulator's answer for the
same endpoint, field by field and type by type, so that the two cannot drift apart.

A field of the real file must be in the simulator's answer with a value of the same JSON
type (a real `null` says the field may be empty, so any value will do); the simulator may
say more. Where a format has a rule (Treeherder's job fields from a task, its parsed error
lines from a log), the rule is checked on the real files and then on the simulator's.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsone
import pytest
import taskcluster

from sheriff.model.actions import select_action
from sheriff.model.job import job_from_task
from sheriff.sim.scenario import parse_scenario
from sheriff.sim.server import SimServer
from tests.sim.conftest import ACCESS_TOKEN, CLIENT_ID, tiny_data

# Objects whose keys are data, not fields (environment, caches, collections…): only the
# object's type is compared.
OPEN_OBJECTS = frozenset(
    {"env", "cache", "artifacts", "capabilities", "features", "collection", "parameters", "input"}
)
JSON_TYPES = {bool: "boolean", int: "number", float: "number", str: "string", list: "array"}


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    return JSON_TYPES.get(type(value), "null" if value is None else type(value).__name__)


def same_shape(
    real: Any, ours: Any, where: str = "$", nullable: frozenset[str] = frozenset()
) -> None:
    """Every field of `real` is in `ours`, with a value of the same JSON type, recursively;
    fields named in `nullable` may be null in `ours` (the format allows it)."""
    if real is None or (ours is None and where.rsplit(".", 1)[-1] in nullable):
        return
    assert _json_type(real) == _json_type(ours), f"{where}: {real!r} vs {ours!r}"
    if isinstance(real, dict):
        missing = sorted(set(real) - set(ours))
        assert not missing, f"{where}: the simulator lacks {missing}"
        for key, value in real.items():
            if key not in OPEN_OBJECTS:
                same_shape(value, ours[key], f"{where}.{key}", nullable)
    elif isinstance(real, list) and real and ours:
        same_shape(real[0], ours[0], f"{where}[0]", nullable)


def _reference(reference: Path, name: str) -> Any:
    return json.loads((reference / "treeherder" / name).read_text())


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(parse_scenario(tiny_data())) as server:
        server.advance(90)
        yield server


@pytest.fixture(scope="module")
def queue(sim: SimServer) -> Any:
    options = {"rootUrl": sim.root_url}
    return taskcluster.Queue(options)


@pytest.fixture(scope="module")
def th(sim: SimServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.root_url, follow_redirects=True) as client:
        yield client


def _tasks_of_kind(tasks: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [t for t in tasks.values() if t["tags"].get("kind") == kind]


def _action_task(sim: SimServer) -> str:
    """Trigger a retrigger the way Treeherder does; the action task's id."""
    world = sim.world
    push = world.pushes[2]
    target = next(t for t in world.groups[push.decision_task_id] if t.kind == "test")
    options = {
        "rootUrl": sim.root_url,
        "credentials": {"clientId": CLIENT_ID, "accessToken": ACCESS_TOKEN},
    }
    queue = taskcluster.Queue(options)
    actions = httpx.get(
        queue.getLatestArtifact(push.decision_task_id, "public/actions.json")["url"]
    ).json()
    action = select_action(actions["actions"], "retrigger", queue.task(target.task_id)["tags"])
    assert action is not None
    context = {"taskGroupId": push.decision_task_id, "taskId": target.task_id, "input": {}}
    payload = jsone.render(action["hookPayload"], context)
    hooks = taskcluster.Hooks(options)
    return hooks.triggerHook(action["hookGroupId"], action["hookId"], payload)["taskId"]


# -- Taskcluster ------------------------------------------------------------------------


def test_test_task_definitions(reference: Path, sim: SimServer, queue: Any) -> None:
    ours = queue.task(next(t.task_id for t in sim.world.tasks.values() if t.kind == "test"))
    real_tasks = _tasks_of_kind(_reference(reference, "pulse/taskcluster_tasks.json"), "test")
    assert real_tasks
    for real in real_tasks:
        # The payload differs by worker implementation; sheriff reads its environment.
        same_shape({k: v for k, v in real.items() if k != "payload"}, ours)
        same_shape({"env": real["payload"]["env"]}, ours["payload"])
    env = ours["payload"]["env"]
    by_suite = json.loads(env["MOZHARNESS_TEST_PATHS"])  # Gecko's {suite: [manifests]}
    assert list(by_suite) == [ours["extra"]["suite"]] and isinstance(
        by_suite[ours["extra"]["suite"]], list
    )
    assert ours["taskQueueId"] == f"{ours['provisionerId']}/{ours['workerType']}"


def test_action_task_definitions(reference: Path, sim: SimServer, queue: Any) -> None:
    ours = queue.task(_action_task(sim))
    real_tasks = _tasks_of_kind(
        _reference(reference, "pulse/taskcluster_tasks.json"), "action-callback"
    )
    assert real_tasks
    for real in real_tasks:
        same_shape({k: v for k, v in real.items() if k != "payload"}, ours)
        actions_env = {k: v for k, v in real["payload"]["env"].items() if k.startswith("ACTION_")}
        same_shape(actions_env, ours["payload"]["env"])
        # Gecko's .taskcluster.yml: the kind and who it is for, no tags.action.
        assert set(real["tags"]) == set(ours["tags"]) == {"createdForUser", "kind"}
        for key in ("ACTION_TASK_ID", "ACTION_INPUT", "ACTION_PARAMETERS"):
            json.loads(real["payload"]["env"][key])
            json.loads(ours["payload"]["env"][key])  # JSON-encoded in both


def test_list_task_group(sim: SimServer, queue: Any) -> None:
    """Shape per the Queue's list-task-group-response schema (services/queue/schemas)."""
    page = queue.listTaskGroup(sim.world.pushes[1].decision_task_id)
    assert set(page) <= {
        "taskGroupId",
        "schedulerId",
        "expires",
        "sealed",
        "tasks",
        "continuationToken",
    }
    assert {"taskGroupId", "schedulerId", "expires", "tasks"} <= set(page)
    for entry in page["tasks"]:
        assert set(entry) == {"status", "task"}


def test_pulse_messages(reference: Path, sim: SimServer) -> None:
    from sheriff.sim.pulse import message

    real_messages = _reference(reference, "pulse/taskcluster_pulse_messages.json")
    world = sim.world
    task = next(t for t in world.tasks.values() if t.kind == "test" and t.state == "completed")
    run = task.runs[-1]
    for real in real_messages.values():
        exchange = real["exchange"].rsplit("/", 1)[-1]
        payload, routes = message(world, exchange, task, run)
        real_payload = dict(real["payload"])
        real_status = real_payload.pop("status")
        same_shape({k: v for k, v in real_status.items() if k != "runs"}, payload["status"])
        same_shape(real_status["runs"][-1], payload["status"]["runs"][-1])
        same_shape(real_payload, payload)
        # primary.<taskId>.<runId>.<workerGroup>.<workerId>.<provisioner>.<workerType>.
        # <schedulerId>.<taskGroupId>._
        assert len(routes[0].split(".")) == len(real["routes"].split("."))


# -- Treeherder -------------------------------------------------------------------------


# Treeherder's job fields (taskcluster_transformed_jobs.json) and the /api/jobs/ names.
_JOB_FIELDS = {
    "job_symbol": "job_type_symbol",
    "group_symbol": "job_group_symbol",
    "group_name": "job_group_name",
    "name": "job_type_name",
    "tier": "tier",
    "state": "state",
    "result": "result",
    "reason": "reason",
    "who": "who",
    "submit_timestamp": "submit_timestamp",
    "job_guid": "job_guid",
    "taskcluster_task_id": "task_id",
    "taskcluster_retry_id": "retry_id",
}


def test_treeherder_jobs(reference: Path, sim: SimServer, queue: Any, th: httpx.Client) -> None:
    """The simulator's jobs are what Treeherder makes of its tasks: sheriff's derivation,
    which reproduces all 91 reference jobs (tests/model/test_job.py), gives the same fields."""
    transformed = _reference(reference, "pulse/taskcluster_transformed_jobs.json")
    real_fields = next(iter(transformed.values()))["job"]
    push = sim.world.pushes[1]
    answer = th.get("/api/project/autoland/jobs/", params={"push_id": push.push_id, "count": 2000})
    jobs = answer.json()["results"]
    assert jobs
    for ours in jobs:
        same_shape({_JOB_FIELDS[k]: real_fields[k] for k in _JOB_FIELDS}, ours)
        assert ours["platform"] == ours["build_platform"] and ours["platform_option"]
        task = queue.task(ours["task_id"])
        runs = queue.status(ours["task_id"])["status"]["runs"]
        derived = job_from_task(ours["task_id"], task, ours["retry_id"], runs[ours["retry_id"]])
        assert ours["job_type_symbol"] == derived.job_symbol
        assert (ours["job_group_symbol"], ours["job_group_name"]) == (
            derived.group_symbol,
            derived.group_name,
        )
        assert (ours["job_type_name"], ours["tier"]) == (derived.label, derived.tier)
        assert ours["platform"] == derived.machine_platform.platform
        assert ours["platform_option"] == derived.option_collection
        if ours["state"] == "completed":
            retried = derived.result == "exception" and ours["retry_id"] < len(runs) - 1
            assert ours["result"] == ("retry" if retried else derived.result)
        else:  # pending and running jobs: result unknown (taskcluster_pulse/handler.py)
            assert ours["result"] == "unknown"


def test_pushes(reference: Path, th: httpx.Client) -> None:
    ours = th.get("/api/project/autoland/push/", params={"count": 5}).json()["results"]
    assert ours
    for real in _reference(reference, "push_data.json"):
        # The sample is ingestion input (`comment`); the API's CommitSerializer answers
        # the same field as `comments`, which is what sheriff reads.
        for revision in real["revisions"]:
            revision["comments"] = revision.pop("comment")
        for push in ours:
            same_shape(real, push)


def test_bug_suggestions(reference: Path, sim: SimServer, th: httpx.Client) -> None:
    real_answer = _reference(reference, "bug_suggestions.json")
    real = next(s for s in real_answer if s["bugs"]["open_recent"])
    world = sim.world
    with_bugs = []
    for job in world.jobs.values():
        answer = th.get(f"/api/project/autoland/jobs/{job.job_id}/bug_suggestions/").json()
        with_bugs.extend(s for s in answer if s["bugs"]["open_recent"])
    assert with_bugs
    # Bugscache.serialize: an internal issue has no Bugzilla id, only its internal_id.
    nullable = frozenset({"id", "occurrences", "dupe_of"})
    for ours in with_bugs:
        same_shape(real, ours, nullable=nullable)
        for bug in ours["bugs"]["open_recent"]:
            same_shape(real["bugs"]["open_recent"][0], bug, nullable=nullable)


# -- artifacts --------------------------------------------------------------------------


def test_actions_json(reference: Path, sim: SimServer, queue: Any) -> None:
    real = _reference(reference, "actions/initialActions.json")
    decision = sim.world.pushes[1].decision_task_id
    ours = httpx.get(queue.getLatestArtifact(decision, "public/actions.json")["url"]).json()
    same_shape({k: v for k, v in real.items() if k != "actions"}, ours)
    by_name = {a["name"]: a for a in reversed(ours["actions"])}
    # backfill-task came to Gecko after the reference file was taken.
    assert set(by_name) - {a["name"] for a in real["actions"]} == {"backfill-task"}
    for action in (a for a in real["actions"] if a["name"] in by_name):
        mine = by_name[action["name"]]
        same_shape({k: v for k, v in action.items() if k not in ("schema", "context")}, mine)
        assert all(isinstance(v, str) for tags in mine["context"] for v in tags.values())

    def retrigger_contexts(actions: list[dict[str, Any]]) -> list[list[dict[str, str]]]:
        return [a["context"] for a in actions if a["name"] == "retrigger"]

    # The three retrigger actions in Gecko's order: decision, action and cron tasks (and,
    # since, backfilled ones) first, then retriggerable tasks, then the disabled one.
    real_contexts, our_contexts = (
        retrigger_contexts(real["actions"]),
        retrigger_contexts(ours["actions"]),
    )
    assert our_contexts[1:] == real_contexts[1:] == [[{"retrigger": "true"}], [{}]]
    assert all(tag_set in our_contexts[0] for tag_set in real_contexts[0])


def _errorsummary_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_errorsummary(reference: Path, sim: SimServer, queue: Any) -> None:
    real = _errorsummary_lines(
        (reference / "treeherder/logs/mochitest-browser-chrome_errorsummary.log").read_text()
    )
    task = next(
        t
        for t in sim.world.tasks.values()
        if t.kind == "test"
        and t.state == "failed"
        and t.runs[-1].outcome.failures
        and t.runs[-1].outcome.infra is None
    )
    from sheriff.sim.artifacts import errorsummary_name

    url = queue.getArtifact(
        task.task_id, str(len(task.runs) - 1), errorsummary_name(sim.world, task)
    )
    ours = _errorsummary_lines(httpx.get(url["url"]).text)
    for action in ("test_groups", "test_result", "group_result"):
        mine = next(r for r in ours if r["action"] == action)
        for record in (r for r in real if r["action"] == action):
            # mozlog: a test's own result has no subtest (null), a subtest's has its name.
            same_shape(record, mine, action, nullable=frozenset({"subtest"}))


# -- logs and the error lines Treeherder parses from them ----------------------------------

# What Treeherder's parser keeps of a log line in its `search` (error_summary.py
# get_cleaned_line, after run-task's `[task …]` prefix: parsers.py).
_TASK_PREFIX = re.compile(r"^\[task [^\]]*\]\s")
_MOZHARNESS_PREFIX = re.compile(r"^\d{2}:\d{2}:\d{2}\s+(?:INFO|WARNING|ERROR|CRITICAL)\s+-\s+")
MAX_ERROR_LINES = 40  # treeherder settings.MAX_ERROR_LINES


def _log_names(reference: Path) -> list[str]:
    # wpt-multiple's sample lines were edited by hand in Treeherder's repository.
    return sorted(
        p.name.removesuffix(".logview.json")
        for p in (reference / "treeherder/logs").glob("*.logview.json")
        if not p.name.startswith("wpt-multiple")
    )


def test_logview_lines_follow_the_parsers_rule(reference: Path) -> None:
    """In the real logs: an error line's `linenumber` is its 0-based index in the log, its
    `line` the log line without run-task's prefix; at most 40 lines are kept."""
    capped = 0
    for name in _log_names(reference):
        lines = gzip.decompress((reference / f"treeherder/logs/{name}.log.gz").read_bytes())
        text = lines.decode("utf-8", "replace").splitlines()
        errors = json.loads((reference / f"treeherder/logs/{name}.logview.json").read_text())
        assert len(errors["errors"]) <= MAX_ERROR_LINES
        capped += len(errors["errors"]) == MAX_ERROR_LINES
        for error in errors["errors"]:
            assert _TASK_PREFIX.sub("", text[error["linenumber"]]).rstrip() == error["line"]
    assert capped  # xpcshell-crash: more error lines than Treeherder keeps


def test_the_simulators_logs_and_bug_suggestions_follow_it(
    sim: SimServer, queue: Any, th: httpx.Client
) -> None:
    world = sim.world
    checked = 0
    for job in world.jobs.values():
        answer = th.get(f"/api/project/autoland/jobs/{job.job_id}/bug_suggestions/").json()
        if not answer:
            continue
        url = queue.getArtifact(job.task.task_id, str(job.run_id), "public/logs/live_backing.log")
        text = httpx.get(url["url"]).text.splitlines()
        assert len(answer) <= MAX_ERROR_LINES
        for suggestion in answer:
            line = _TASK_PREFIX.sub("", text[suggestion["line_number"]])
            assert _MOZHARNESS_PREFIX.sub("", line) == suggestion["search"]
            checked += 1
    assert checked
