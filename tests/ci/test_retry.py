"""Retries of reads, over real HTTP on loopback: Retry-After honoured, a budget per call,
full jitter, writes sent once, and one clear line when sheriff gives up."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from sheriff.ci.retry import RetryPolicy, policy_from_settings, retry_after_seconds
from sheriff.ci.taskcluster import TaskclusterUnavailable, taskcluster_clients
from sheriff.ci.treeherder import Treeherder, TreeherderUnavailable
from sheriff.config import load_settings
from tests.loopback import ScriptedServer, scripted_server

FAST = RetryPolicy(retries=8, budget_seconds=10, backoff_seconds=0.01, timeout_seconds=2)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server() as fake:
        yield fake


def test_retry_after_in_seconds_is_waited_for(server: ScriptedServer) -> None:
    server.script = [(429, {}, {"Retry-After": "1"}), (200, {"taskId": "abc"})]
    clients = taskcluster_clients(server.url, transport=FAST)
    assert clients.queue.task("abc") == {"taskId": "abc"}
    assert len(server.times) == 2
    assert server.times[1] - server.times[0] >= 1.0


def test_retry_after_as_an_http_date_is_waited_for(server: ScriptedServer) -> None:
    # HTTP dates have whole seconds: three seconds ahead is more than two seconds from now,
    # at least one second of wait even when the first answer comes a second late (a busy
    # machine).
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=3), usegmt=True)
    server.script = [(503, {}, {"Retry-After": when}), (200, [])]
    with Treeherder(server.url, policy=FAST) as treeherder:
        assert treeherder.bug_suggestions("autoland", 1) == []
    assert server.times[1] - server.times[0] >= 1.0


def test_the_budget_caps_the_whole_call(server: ScriptedServer) -> None:
    server.script = [(503, {"message": "down"}, {"Retry-After": "1"})] * 20
    policy = RetryPolicy(retries=20, budget_seconds=2.5, backoff_seconds=0.01)
    started = time.monotonic()
    with pytest.raises(TaskclusterUnavailable) as info:
        taskcluster_clients(server.url, transport=policy).queue.task("abc")
    took = time.monotonic() - started
    # Attempts at 0, 1 and 2 s; a third wait would end past 2.5 s, so none is started.
    assert len(server.seen) == 3
    assert 2.0 <= took < 2.5
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"GET {server.url}/api/queue/v1/task/abc: HTTP 503: down (")
    assert "gave up after 3 attempts in 2." in message
    assert "past the retry budget of 2.5 s" in message


def test_a_retry_after_beyond_the_budget_gives_up_at_once(server: ScriptedServer) -> None:
    server.script = [(429, {}, {"Retry-After": "120"})]
    started = time.monotonic()
    with pytest.raises(TaskclusterUnavailable, match="asked to retry after 120 s, past the retry"):
        taskcluster_clients(server.url, transport=FAST).index.findTask("some.path")
    assert time.monotonic() - started < 1.0
    assert len(server.seen) == 1


def test_the_retries_still_bound_the_attempts(server: ScriptedServer) -> None:
    server.script = [(502, {})] * 5
    policy = RetryPolicy(retries=2, budget_seconds=30, backoff_seconds=0.01)
    with pytest.raises(TaskclusterUnavailable, match=r"gave up after 3 attempts in [0-9.]+ s\)$"):
        taskcluster_clients(server.url, transport=policy).queue.task("abc")
    assert len(server.seen) == 3


def test_a_timeout_is_cut_to_what_is_left_of_the_budget() -> None:
    timeouts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        timeouts.append(request.extensions["timeout"]["read"])
        return httpx.Response(503)

    policy = RetryPolicy(retries=3, budget_seconds=4, backoff_seconds=1, timeout_seconds=30)
    client = Treeherder("http://th.invalid", policy=policy, transport=httpx.MockTransport(handler))
    with pytest.raises(TreeherderUnavailable):
        client.bug_suggestions("autoland", 1)
    assert timeouts[0] == pytest.approx(4, abs=0.1)
    assert all(t <= 4 for t in timeouts)


def test_writes_are_sent_once_reads_posted_are_retried(server: ScriptedServer) -> None:
    clients = taskcluster_clients(server.url, transport=FAST)
    server.script = [(503, {})]
    with pytest.raises(TaskclusterUnavailable):
        clients.queue.cancelTask("abc")
    assert [m for m, _, _ in server.seen] == ["POST"]
    server.script = [(503, {})]
    with pytest.raises(TaskclusterUnavailable):
        clients.hooks.triggerHook("project-gecko", "in-tree-action-3-generic/x", {})
    assert len(server.seen) == 2
    # expandScopes is a POST that only reads: retried like a GET.
    server.script = [(503, {}), (200, {"scopes": ["a"]})]
    assert clients.auth.expandScopes({"scopes": ["assume:x"]}) == {"scopes": ["a"]}
    assert len(server.seen) == 4


def test_connection_errors_are_retried_then_one_line() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused")

    policy = RetryPolicy(retries=3, backoff_seconds=0)
    client = Treeherder("http://th.invalid", policy=policy, transport=httpx.MockTransport(handler))
    with pytest.raises(TreeherderUnavailable, match=r"\(ConnectError\) \(gave up after 4") as info:
        client.log_urls("autoland", 1)
    assert "\n" not in str(info.value)
    assert len(calls) == 4


def test_waits_are_full_jitter_below_a_doubling_cap() -> None:
    policy = RetryPolicy(backoff_seconds=0.5, max_backoff_seconds=10)
    for retry, ceiling in ((1, 0.5), (2, 1.0), (3, 2.0), (6, 10.0), (9, 10.0)):
        draws = [policy.backoff(retry) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in draws)
        assert max(draws) > ceiling / 2 > min(draws)  # spread over the range, not fixed


def test_retry_after_values() -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("5") == 5.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds("Wed, 01 May 2024 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Wed, 01 May 2024 11:00:00 GMT", now=now) == 0.0
    for unreadable in (None, "", "-1", "1.5", "soon", "Wed, 99 Foo 2024"):
        assert retry_after_seconds(unreadable, now=now) is None


def test_the_budget_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHERIFF_HTTP_RETRY_BUDGET_SECONDS", "12.5")
    monkeypatch.setenv("SHERIFF_HTTP_RETRIES", "3")
    monkeypatch.setenv("SHERIFF_HTTP_TIMEOUT_SECONDS", "7")
    policy = policy_from_settings(load_settings())
    assert (policy.budget_seconds, policy.retries, policy.timeout_seconds) == (12.5, 3, 7)
    assert load_settings().http_retry_budget_seconds == 12.5
