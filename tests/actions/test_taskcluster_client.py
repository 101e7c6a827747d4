"""The Taskcluster client factory over real HTTP on loopback: retries, timeouts, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from sheriff.ci.retry import RetryPolicy
from sheriff.ci.taskcluster import (
    TaskclusterAuthError,
    TaskclusterClients,
    TaskclusterError,
    TaskclusterNotFound,
    TaskclusterUnavailable,
    paginate,
    taskcluster_clients,
)
from tests.loopback import TOO_SLOW, ScriptedServer, scripted_server


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server() as fake:
        yield fake


def _clients(url: str, **credentials: str) -> TaskclusterClients:
    limits = RetryPolicy(timeout_seconds=0.3, retries=2, backoff_seconds=0.01)
    return taskcluster_clients(url, transport=limits, **credentials)


def test_5xx_and_429_are_retried_then_succeed(server: ScriptedServer) -> None:
    server.script = [(503, {}), (429, {}), (200, {"taskId": "abc"})]
    found = _clients(server.url).index.findTask("gecko.v2.autoland.revision.r.taskgraph.decision")
    assert found == {"taskId": "abc"}
    assert len(server.seen) == 3
    assert server.seen[0][1] == "/api/index/v1/task/gecko.v2.autoland.revision.r.taskgraph.decision"


def test_persistent_5xx_gives_one_line(server: ScriptedServer) -> None:
    server.script = [(500, {"message": "boom\nstack…"})] * 3
    with pytest.raises(
        TaskclusterUnavailable, match=r"HTTP 500: boom \(gave up after 3 attempts in [0-9.]+ s\)$"
    ):
        _clients(server.url).queue.task("abc")
    assert len(server.seen) == 3


def test_4xx_is_not_retried_and_is_typed(server: ScriptedServer) -> None:
    server.script = [(404, {"message": "Task not found"})]
    with pytest.raises(TaskclusterNotFound, match="HTTP 404: Task not found"):
        _clients(server.url).queue.task("abc")
    server.script = [(403, {"message": "insufficient scopes"})]
    with pytest.raises(TaskclusterAuthError, match="insufficient scopes"):
        _clients(server.url).queue.task("abc")
    server.script = [(400, {"message": "bad payload"})]
    with pytest.raises(TaskclusterError, match="bad payload"):
        _clients(server.url).queue.task("abc")
    assert len(server.seen) == 3


def test_a_slow_server_times_out(server: ScriptedServer) -> None:
    server.script = [(TOO_SLOW, {})] * 3
    with pytest.raises(TaskclusterUnavailable, match="ReadTimeout"):
        _clients(server.url).queue.task("abc")


def test_hooks_once_never_retries(server: ScriptedServer) -> None:
    server.script = [(503, {})]
    with pytest.raises(TaskclusterUnavailable):
        _clients(server.url).hooks_once.triggerHook("g", "h", {})
    assert len(server.seen) == 1


def test_credentials_sign_requests(server: ScriptedServer) -> None:
    server.script = [(200, {"status": {"taskId": "x"}})]
    clients = _clients(server.url, client_id="sheriff-dev", access_token="sheriff-dev-token")
    assert clients.has_credentials
    clients.hooks.triggerHook("project-gecko", "in-tree-action-3-generic/abc", {"user": {}})
    method, path, authorization = server.seen[0]
    assert method == "POST"
    assert path == "/api/hooks/v1/hooks/project-gecko/in-tree-action-3-generic%2Fabc/trigger"
    assert authorization.startswith("Hawk ") and 'id="sheriff-dev"' in authorization
    server.script = [(200, {})]
    _clients(server.url).queue.task("abc")
    assert server.seen[1][2] is None


def test_paginate_follows_continuation_tokens(server: ScriptedServer) -> None:
    server.script = [
        (200, {"tasks": [1, 2], "continuationToken": "t1"}),
        (200, {"tasks": [3]}),
    ]
    assert list(paginate(_clients(server.url).queue.listTaskGroup, "G", key="tasks")) == [1, 2, 3]
    assert "continuationToken=t1" in server.seen[1][1]


def test_latest_artifact_follows_the_redirect(server: ScriptedServer) -> None:
    server.script = [(200, {"version": 1})]
    clients = _clients(server.url)
    assert json.loads(clients.latest_artifact("D", "public/actions.json")) == {"version": 1}
    assert server.seen[0][1] == "/api/queue/v1/task/D/artifacts/public%2Factions.json"


def test_no_root_url() -> None:
    with pytest.raises(TaskclusterError, match="TASKCLUSTER_ROOT_URL"):
        taskcluster_clients("")
