"""End to end against the simulator over real HTTP: the actions create exactly what was asked.

One simulator serves the module; every test takes its own failed tasks and pushes from
it so that their counts never mix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from sheriff.actions import log
from sheriff.actions.protocol import ActionsProtocol
from sheriff.actions.strategies import strategy
from sheriff.ci.taskcluster import paginate, taskcluster_clients
from sheriff.store import db

sim_server = pytest.importorskip("sheriff.sim.server", reason="the simulator is not built yet")

CLIENT_ID, ACCESS_TOKEN = "sheriff-dev", "sheriff-dev-token"
ROOT = Path(__file__).resolve().parents[2]


class Sim:
    """The running simulator plus the bookkeeping that keeps tests apart."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.root_url = server.root_url
        self.repository = server.world.scenario.repository
        self.clients = taskcluster_clients(
            self.root_url, client_id=CLIENT_ID, access_token=ACCESS_TOKEN
        )
        self._used: set[str] = set()
        self._used_pushes: set[int] = set()

    def protocol(self) -> ActionsProtocol:
        return ActionsProtocol(self.clients)

    def group(self, decision_task_id: str) -> list[dict[str, Any]]:
        return list(paginate(self.clients.queue.listTaskGroup, decision_task_id, key="tasks"))

    def created_by(self, decision_task_id: str, action_task_id: str) -> list[dict[str, Any]]:
        """The tasks an action task created in the push's task group."""
        return [
            item["task"]
            for item in self.group(decision_task_id)
            if (item["task"].get("extra") or {}).get("parent") == action_task_id
            and item["status"]["taskId"] != action_task_id
        ]

    def action_task_state(self, decision_task_id: str, action_task_id: str) -> str:
        for item in self.group(decision_task_id):
            if item["status"]["taskId"] == action_task_id:
                return item["status"]["state"]
        raise AssertionError(f"action task {action_task_id} is not in {decision_task_id}")

    def action_tasks_for(self, decision_task_id: str, task_id: str | None) -> list[str]:
        return [
            t.task_id
            for t in self.protocol().action_tasks(decision_task_id)
            if t.signature.task_id == task_id
        ]

    def failed_task(self, *, min_push: int = 0) -> tuple[str, dict[str, Any]]:
        """A failed, retriggerable test task with manifests that no other test has taken."""
        for push in self.server.world.pushes:
            if push.index in self._used_pushes or push.index < min_push:
                continue
            for item in self.group(push.decision_task_id):
                task_id, task = item["status"]["taskId"], item["task"]
                tags = task.get("tags") or {}
                env = (task.get("payload") or {}).get("env") or {}
                if (
                    item["status"]["state"] == "failed"
                    and tags.get("kind") == "test"
                    and tags.get("retrigger") == "true"
                    and "action" not in tags
                    and "MOZHARNESS_TEST_PATHS" in env
                    and task_id not in self._used
                ):
                    self._used.add(task_id)
                    self._used_pushes.add(push.index)
                    return task_id, task
        raise AssertionError("the scenario has no failed test task left")

    def push_with_labels(self, count: int) -> tuple[Any, list[str]]:
        """An unused push and `count` test labels it ran."""
        for push in self.server.world.pushes:
            if push.index in self._used_pushes:
                continue
            labels = sorted(
                {
                    item["task"]["metadata"]["name"]
                    for item in self.group(push.decision_task_id)
                    if (item["task"].get("tags") or {}).get("kind") == "test"
                }
            )
            if len(labels) >= count:
                self._used_pushes.add(push.index)
                return push, labels[:count]
        raise AssertionError("no push with enough labels left")

    def settle(self) -> None:
        """Let action tasks run and create their tasks (virtual minutes)."""
        self.server.advance(15)


@pytest.fixture(scope="module")
def sim() -> Iterator[Sim]:
    with sim_server.SimServer("small", port=0) as s:
        s.advance(240)  # pushes and their first runs, failures included
        # A known client whose scopes do not include triggering hooks.
        s.auth.add_client("no-hooks", "no-hooks-token", ["queue:get-artifact:*"])
        yield Sim(s)


def _manifests(task: dict[str, Any]) -> list[str]:
    by_suite = json.loads(task["payload"]["env"]["MOZHARNESS_TEST_PATHS"])
    return sorted({m for paths in by_suite.values() for m in paths})


def test_retrigger_multiple_for_three_labels_creates_exactly_those(
    sim: Sim, sqlite_engine: Engine
) -> None:
    push, labels = sim.push_with_labels(3)
    with sqlite_engine.begin() as conn:
        log.enqueue(
            conn,
            "rm-3",
            "retrigger-multiple",
            repository=sim.repository,
            revision=push.revision,
            task_id=None,
            labels=labels,
            input={"requests": [{"tasks": labels, "times": 2}]},
        )
    [sent] = log.dispatch(sqlite_engine, sim.protocol())
    assert sent.state == log.SENT, sent.reason
    sim.settle()
    assert sim.action_task_state(push.decision_task_id, sent.action_task_id) == "completed"
    created = sim.created_by(push.decision_task_id, sent.action_task_id)
    assert sorted(t["metadata"]["name"] for t in created) == sorted(labels * 2)
    # gecko actions/retrigger.py tags the clones `retrigger-multiple-task`.
    assert {t["tags"]["action"] for t in created} == {"retrigger-multiple-task"}
    with sqlite_engine.connect() as conn:
        seen = [sent.action_task_id]
        assert log.runs_requested(conn, sim.repository, push.revision) == dict.fromkeys(labels, 2)
        assert (
            log.runs_requested(conn, sim.repository, push.revision, exclude_action_tasks=seen) == {}
        )


def test_backfill_task_with_manifests_runs_those_manifests(sim: Sim, sqlite_engine: Engine) -> None:
    task_id, task = sim.failed_task(min_push=2)
    protocol = sim.protocol()
    repository, revision = protocol.push_of_task(task_id)
    index = next(p.index for p in sim.server.world.pushes if p.revision == revision)
    earlier = sim.server.world.pushes[index - 2]
    wanted = _manifests(task)[:2]
    (suite,) = json.loads(task["payload"]["env"]["MOZHARNESS_TEST_PATHS"])
    with sqlite_engine.begin() as conn:
        log.enqueue(
            conn,
            "bk-1",
            "backfill-task",
            repository=repository,
            revision=earlier.revision,
            task_id=None,
            labels=[task["metadata"]["name"]],
            input=strategy("backfill-task").build_input(
                label=task["metadata"]["name"],
                revision=revision,
                test_manifests={suite: wanted},  # Gecko's MOZHARNESS_TEST_PATHS shape
                times=2,
            ),
        )
    [sent] = log.dispatch(sqlite_engine, protocol)
    assert sent.state == log.SENT, sent.reason
    assert sent.decision_task_id == earlier.decision_task_id
    sim.settle()
    created = sim.created_by(earlier.decision_task_id, sent.action_task_id)
    assert len(created) == 2
    for backfilled in created:
        assert backfilled["metadata"]["name"] == task["metadata"]["name"]
        assert _manifests(backfilled) == sorted(wanted)
        assert backfilled["tags"]["action"] == "backfill-task"


def _sheriff(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from sheriff.cli import main; main()", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _env(root_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKCLUSTER_", "SHERIFF_"))}
    env.update(
        TASKCLUSTER_ROOT_URL=root_url,
        SHERIFF_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}",
        SHERIFF_HTTP_RETRIES="1",
        SHERIFF_HTTP_TIMEOUT_SECONDS="10",
        **extra,
    )
    return env


def test_cli_retrigger_live_creates_five_then_none(sim: Sim, tmp_path: Path) -> None:
    task_id, task = sim.failed_task()
    decision_task_id = task["taskGroupId"]
    env = _env(sim.root_url, tmp_path, TASKCLUSTER_CLIENT_ID=CLIENT_ID,
               TASKCLUSTER_ACCESS_TOKEN=ACCESS_TOKEN)  # fmt: skip

    dry = _sheriff(env, tmp_path, "retrigger", task_id, "--times", "5")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("dry run: would trigger hook project-gecko/")
    assert sim.action_tasks_for(decision_task_id, task_id) == []

    live = _sheriff(env, tmp_path, "retrigger", task_id, "--times", "5", "--live")
    assert live.returncode == 0, live.stderr
    [action_task_id] = sim.action_tasks_for(decision_task_id, task_id)
    assert f"sent, action task {action_task_id}" in live.stdout
    sim.settle()
    created = sim.created_by(decision_task_id, action_task_id)
    assert len(created) == 5
    assert {t["metadata"]["name"] for t in created} == {task["metadata"]["name"]}

    again = _sheriff(env, tmp_path, "retrigger", task_id, "--times", "5", "--live")
    assert again.returncode == 0, again.stderr
    assert "already sent" in again.stdout
    sim.settle()
    assert sim.action_tasks_for(decision_task_id, task_id) == [action_task_id]
    assert len(sim.created_by(decision_task_id, action_task_id)) == 5


def test_cli_actions_lists_the_task_actions(sim: Sim, tmp_path: Path) -> None:
    task_id, _ = sim.failed_task()
    shown = _sheriff(_env(sim.root_url, tmp_path), tmp_path, "actions", task_id, "--json")
    assert shown.returncode == 0, shown.stderr
    names = [a["name"] for a in json.loads(shown.stdout)["actions"]]
    assert names == ["retrigger", "confirm-failures", "backfill"]


def test_cli_backfill_same_manifests_dry_run(sim: Sim, tmp_path: Path) -> None:
    task_id, task = sim.failed_task(min_push=2)
    out = _sheriff(_env(sim.root_url, tmp_path), tmp_path, "backfill", "request", task_id,
                   "--depth", "2", "--same-manifests")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2
    assert all("backfill-task" in line and "test_manifests" in line for line in lines)
    assert all(_manifests(task)[0] in line for line in lines)


@pytest.mark.parametrize(
    ("args", "extra_env", "message"),
    [
        (["retrigger", "{task}", "--times", "101"], {}, "101 is greater than the maximum of 100"),
        (["retrigger", "{task}", "--live"], {}, "--live needs Taskcluster credentials"),
        (["actions", "Quz_6cklT520K0_YuFUv2g"], {}, "task Quz_6cklT520K0_YuFUv2g does not exist"),
        (["actions", "notaslugid"], {}, "'notaslugid' is not a Taskcluster task id"),
        (
            ["retrigger", "{task}", "--live"],
            {"TASKCLUSTER_CLIENT_ID": "nobody", "TASKCLUSTER_ACCESS_TOKEN": "wrong"},
            "HTTP 401",
        ),
        (
            ["retrigger", "{task}", "--live"],
            {"TASKCLUSTER_CLIENT_ID": "no-hooks", "TASKCLUSTER_ACCESS_TOKEN": "no-hooks-token"},
            "refused: POST",
        ),
        (
            ["retrigger", "{task}"],
            {"TASKCLUSTER_ROOT_URL": "http://127.0.0.1:9"},
            "Taskcluster unreachable",
        ),
    ],
)
def test_cli_errors_are_one_line_and_non_zero(
    sim: Sim, tmp_path: Path, args: list[str], extra_env: dict[str, str], message: str
) -> None:
    task_id, _ = sim.failed_task()
    env = _env(sim.root_url, tmp_path)
    env.update(extra_env)
    out = _sheriff(env, tmp_path, *[a.replace("{task}", task_id) for a in args])
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    [line] = [line for line in out.stderr.splitlines() if line.startswith("sheriff: error:")]
    assert message in line
    assert sim.action_tasks_for(task_id=task_id, decision_task_id=_group_of(sim, task_id)) == []


def _group_of(sim: Sim, task_id: str) -> str:
    return sim.clients.queue.task(task_id)["taskGroupId"]


_CRASH_AFTER_TRIGGER = textwrap.dedent(
    """
    import os, sys
    from sheriff.actions import log
    from sheriff.actions.protocol import ActionsProtocol
    from sheriff.ci.taskcluster import taskcluster_clients
    from sheriff.store.db import open_database

    url, root_url, key = sys.argv[1:4]
    protocol = ActionsProtocol(
        taskcluster_clients(root_url, client_id="sheriff-dev", access_token="sheriff-dev-token")
    )
    real_trigger = protocol.trigger

    def trigger_then_die(*args, **kwargs):
        real_trigger(*args, **kwargs)
        os._exit(17)  # triggerHook has answered; the process dies before the commit

    protocol.trigger = trigger_then_die
    log.dispatch(open_database(url), protocol, keys=[key])
    """
)


def _send_then_die(
    sim: Sim, engine: Engine, url: str, key: str, task_id: str, task: dict, *, times: int
) -> None:
    """Enqueue a retrigger under `key`, then send it from a process that dies right after
    triggerHook answered: the row stays `sending`."""
    repository, revision = sim.protocol().push_of_task(task_id)
    with engine.begin() as conn:
        log.enqueue(
            conn,
            key,
            "retrigger",
            repository=repository,
            revision=revision,
            task_id=task_id,
            labels=[task["metadata"]["name"]],
            input={"times": times},
        )
    crashed = subprocess.run(
        [sys.executable, "-c", _CRASH_AFTER_TRIGGER, url, sim.root_url, key],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crashed.returncode == 17, crashed.stderr


def test_crash_between_trigger_hook_and_commit(
    sim: Sim, engine: Engine, db_url: str, tmp_path: Path
) -> None:
    task_id, task = sim.failed_task()
    decision_task_id = task["taskGroupId"]
    _send_then_die(sim, engine, db_url, "crash", task_id, task, times=3)
    with engine.connect() as conn:
        assert log.get(conn, "crash").state == log.SENDING
    [action_task_id] = sim.action_tasks_for(decision_task_id, task_id)

    from datetime import timedelta

    # The restarted process: reconciles first, then has nothing left to send.
    assert log.dispatch(engine, sim.protocol(), lease=timedelta(0)) == []
    with engine.connect() as conn:
        row = log.get(conn, "crash")
    assert row.state == log.SENT and row.action_task_id == action_task_id
    sim.settle()
    assert sim.action_tasks_for(decision_task_id, task_id) == [action_task_id]
    assert len(sim.created_by(decision_task_id, action_task_id)) == 3


def test_the_lease_setting_decides_when_a_stopped_send_is_reconciled(
    sim: Sim, tmp_path: Path
) -> None:
    task_id, task = sim.failed_task()
    env = _env(sim.root_url, tmp_path, TASKCLUSTER_CLIENT_ID=CLIENT_ID,
               TASKCLUSTER_ACCESS_TOKEN=ACCESS_TOKEN)  # fmt: skip
    url = env["SHERIFF_DATABASE_URL"]
    engine = db.open_database(url)
    _send_then_die(sim, engine, url, "stopped", task_id, task, times=2)
    engine.dispose()
    args = ("retrigger", task_id, "--times", "2", "--live", "--key", "stopped")

    # Within a 60-minute lease the stopped process may still be sending: left alone.
    held = _sheriff({**env, "SHERIFF_ACTIONS_LEASE_MINUTES": "60"}, tmp_path, *args)
    assert held.returncode != 0
    assert "being sent by another process" in held.stderr and "lease (60 min)" in held.stderr
    # With a lease of 0 the same command reconciles at once: sent, and sent once.
    settled = _sheriff({**env, "SHERIFF_ACTIONS_LEASE_MINUTES": "0"}, tmp_path, *args)
    assert settled.returncode == 0, settled.stderr
    [action_task_id] = sim.action_tasks_for(task["taskGroupId"], task_id)
    assert f"sent, action task {action_task_id}" in settled.stdout


_SEND_AT = textwrap.dedent(
    """
    import json, sys, time
    from sheriff.actions import log
    from sheriff.actions.protocol import ActionsProtocol
    from sheriff.ci.taskcluster import taskcluster_clients
    from sheriff.store.db import open_database

    url, root_url, key, start_at, task_id, repository, revision = sys.argv[1:8]
    engine = open_database(url)
    protocol = ActionsProtocol(
        taskcluster_clients(root_url, client_id="sheriff-dev", access_token="sheriff-dev-token")
    )
    protocol.prepare("retrigger", decision_task_id=protocol.decision_task(repository, revision),
                     task_id=task_id, input={"times": 2})  # warm caches: race on the send
    while time.time() < float(start_at):
        time.sleep(0.001)
    with engine.begin() as conn:
        log.enqueue(conn, key, "retrigger", repository=repository, revision=revision,
                    task_id=task_id, input={"times": 2})
    print(json.dumps([row.state for row in log.dispatch(engine, protocol, keys=[key])]))
    """
)


@pytest.mark.postgres
def test_two_processes_send_the_same_request_once(sim: Sim, postgres_server_url: str) -> None:
    task_id, task = sim.failed_task()
    repository, revision = sim.protocol().push_of_task(task_id)
    start_at = str(time.time() + 3)
    args = [postgres_server_url, sim.root_url, f"race-{task_id}", start_at, task_id,
            repository, revision]  # fmt: skip
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _SEND_AT, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), [err for _, err in outputs]
    states = sorted(json.loads(out) for out, _ in outputs)
    assert states == [[], ["sent"]]
    [action_task_id] = sim.action_tasks_for(task["taskGroupId"], task_id)
    sim.settle()
    assert len(sim.created_by(task["taskGroupId"], action_task_id)) == 2


def test_cli_retrigger_of_a_label_gecko_will_not_clone_needs_force(tmp_path: Path) -> None:
    """A task without `retrigger: "true"` matches Gecko's disabled retrigger, which refuses
    to clone unless `force`: sheriff says so instead of sending a request that fails."""
    from sheriff.sim.scenario import parse_scenario
    from tests.sim.conftest import tiny_data

    data = tiny_data()
    for suite in data["suites"]:
        suite["retriggerable"] = False
    with sim_server.SimServer(parse_scenario(data), port=0) as server:
        server.advance(90)
        task = next(t for t in server.world.tasks.values() if t.kind == "test")
        env = _env(server.root_url, tmp_path)
        refused = _sheriff(env, tmp_path, "retrigger", task.task_id)
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert "--force" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        forced = _sheriff(env, tmp_path, "retrigger", task.task_id, "--force")
        assert forced.returncode == 0, forced.stderr
        assert '"force": true' in forced.stdout and "dry run" in forced.stdout
