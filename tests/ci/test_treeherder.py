"""The Treeherder client: retries, one-line errors, the shapes it unpacks."""

from __future__ import annotations

import httpx
import pytest

from sheriff.ci.retry import RetryPolicy
from sheriff.ci.treeherder import Treeherder, TreeherderError, TreeherderUnavailable, parse_status


def _client(handler) -> Treeherder:
    return Treeherder(
        "https://treeherder.example",
        transport=httpx.MockTransport(handler),
        policy=RetryPolicy(backoff_seconds=0),
    )


def test_retries_5xx_and_429_then_answers() -> None:
    answers = iter([503, 429, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(answers)
        return httpx.Response(status, json=[{"search": "x"}] if status == 200 else {})

    client = _client(handler)
    assert client.bug_suggestions("autoland", 7) == [{"search": "x"}]
    assert client.requests == 3


def test_gives_up_with_one_line_after_the_retries() -> None:
    client = _client(lambda request: httpx.Response(502))
    with pytest.raises(
        TreeherderUnavailable, match=r"HTTP 502 \(gave up after 9 attempts in [0-9.]+ s\)$"
    ) as info:
        client.log_urls("autoland", 1)
    assert "\n" not in str(info.value)


def test_a_404_is_not_retried() -> None:
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(404, text="Not found")

    with pytest.raises(TreeherderError, match="HTTP 404"):
        _client(handler).bug_suggestions("autoland", 1)
    assert len(calls) == 1


def test_jobs_of_a_task_are_zipped_with_the_property_names() -> None:
    def handler(request):
        assert request.url.params["task_id"] == "abc"
        return httpx.Response(
            200,
            json={
                "results": [[4, 123, 0]],
                "job_property_names": ["failure_classification_id", "id", "retry_id"],
            },
        )

    assert _client(handler).jobs_of_task("abc") == [
        {"failure_classification_id": 4, "id": 123, "retry_id": 0}
    ]


def test_jobs_of_many_pushes_come_in_few_calls_by_push() -> None:
    """`push_id__in`, PUSHES_PER_CALL pushes a call, every page followed, grouped by push;
    a push with no job is still a key (it was read: nothing ingested yet)."""
    from sheriff.ci.treeherder import PUSHES_PER_CALL

    asked = []

    def handler(request):
        ids = [int(i) for i in request.url.params["push_id__in"].split(",")]
        page = int(request.url.params["page"])
        asked.append((ids, page))
        rows = [[p, 1000 * p + k] for p in ids if p % 7 for k in range(3)]
        chunk = rows[(page - 1) * 2000 : page * 2000] if len(ids) < 5 else rows[page - 1 :: 2]
        more = len(ids) >= 5 and page == 1
        return httpx.Response(
            200,
            json={
                "results": chunk,
                "job_property_names": ["push_id", "id"],
                "next": "more" if more else None,
            },
        )

    pushes = range(1, PUSHES_PER_CALL + 3)
    found = _client(handler).jobs_of_pushes(pushes)
    assert sorted(found) == list(pushes)
    assert found[7] == [] and found[14] == []
    assert sorted(j["id"] for j in found[3]) == [3000, 3001, 3002]
    assert all(j["push_id"] == p for p, jobs in found.items() for j in jobs)
    # Two calls of PUSHES_PER_CALL and 2 pushes; the first has a second page.
    assert [(len(ids), page) for ids, page in asked] == [
        (PUSHES_PER_CALL, 1),
        (PUSHES_PER_CALL, 2),
        (2, 1),
    ]


def test_pushes_page_backwards_through_the_window() -> None:
    pages = {None: [{"id": i} for i in range(200, 100, -1)], "101": [{"id": 100}]}

    def handler(request):
        return httpx.Response(200, json={"results": pages[request.url.params.get("id__lt")]})

    assert [p["id"] for p in _client(handler).pushes("autoland", since=0, until=1)] == list(
        range(200, 99, -1)
    )


def test_parse_status_reads_the_main_log() -> None:
    urls = [
        {"name": "errorsummary_json", "parse_status": "parsed"},
        {"name": "live_backing_log", "parse_status": "pending"},
    ]
    assert parse_status(urls) == "pending"
    assert parse_status([]) is None
