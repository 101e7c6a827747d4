"""Read answers kept while the database is unchanged: identical to a fresh answer, never
stale after a write by anyone, 304 for a client that holds them."""

from __future__ import annotations

from sheriff.store.schema import job
from tests.web.conftest import REPO

JOBS = f"/api/project/{REPO}/jobs/?count=500&include=manifests&include=test_paths"


def test_a_page_asked_again_is_the_same_answer_from_memory(world, serve) -> None:
    client = serve()
    first = client.get(JOBS)
    again = client.get(JOBS)
    assert first.status_code == again.status_code == 200
    assert first.headers["x-sheriff-cache"] == "miss"
    assert again.headers["x-sheriff-cache"] == "hit"
    assert again.content == first.content and again.json()["results"]
    assert again.headers["etag"] == first.headers["etag"]
    assert again.headers["content-type"].startswith("application/json")
    assert "server-timing" in again.headers  # timed afresh, not a kept header


def test_a_write_by_another_connection_is_seen_at_once(world, serve, engine) -> None:
    client = serve()
    before = client.get(JOBS).json()["results"]
    assert client.get(JOBS).headers["x-sheriff-cache"] == "hit"
    target = before[0]["id"]
    # Another process's write (a pass of sheriff triage): its own connection.
    with engine.begin() as conn:
        conn.execute(job.update().where(job.c.id == target).values(classification_id=4))
    after = client.get(JOBS)
    assert after.headers["x-sheriff-cache"] == "miss"
    assert {j["id"]: j["classification_id"] for j in after.json()["results"]}[target] == 4
    assert client.get(JOBS).headers["x-sheriff-cache"] == "hit"


def test_a_client_holding_the_answer_gets_304(world, serve) -> None:
    client = serve()
    etag = client.get(JOBS).headers["etag"]
    held = client.get(JOBS, headers={"If-None-Match": etag})
    assert held.status_code == 304 and held.content == b""
    other = client.get(JOBS, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.content


def test_errors_and_pages_outside_the_api_are_not_kept(world, serve) -> None:
    client = serve()
    missing = f"/api/project/{REPO}/jobs/999999999/"
    assert client.get(missing).status_code == 404
    assert client.get(missing).status_code == 404
    assert "x-sheriff-cache" not in client.get(missing).headers
    assert "x-sheriff-cache" not in client.get(f"/{REPO}/").headers  # the dashboard


def test_the_cache_can_be_turned_off(world, serve) -> None:
    client = serve(api_cache_mb=0)
    client.get(JOBS)
    answer = client.get(JOBS)
    assert answer.status_code == 200
    assert "x-sheriff-cache" not in answer.headers and "etag" not in answer.headers
