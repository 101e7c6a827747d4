"""Read answers kept while the database is unchanged: identical to a fresh answer, never
stale after a write by anyone, 304 for a client that holds them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.engine import Engine

from sheriff.store.schema import job
from sheriff.web.answer_cache import database_version
from tests.web.conftest import REPO

JOBS = f"/api/project/{REPO}/jobs/?count=500&include=manifests&include=test_paths"


def _asked_twice_unchanged(client: Any, engine: Engine, tries: int = 100) -> tuple[Any, Any]:
    """Two answers to JOBS with the database's change counter the same before the first
    and after the second: the second must then come from memory. PostgreSQL's counter is
    the cluster's WAL position, which the other pytest-xdist workers' tests move as they
    write their own databases; a miss then is the cache being right, and the pair is
    asked again."""
    version = database_version(engine)
    assert version is not None
    for _ in range(tries):
        before = version()
        first, again = client.get(JOBS), client.get(JOBS)
        if version() == before:
            return first, again
    pytest.fail(f"the database changed during each of {tries} pairs of requests")


def test_a_page_asked_again_is_the_same_answer_from_memory(world, serve, engine) -> None:
    client = serve()
    assert client.get(JOBS).headers["x-sheriff-cache"] == "miss"  # a new server knows nothing
    first, again = _asked_twice_unchanged(client, engine)
    assert first.status_code == again.status_code == 200
    assert again.headers["x-sheriff-cache"] == "hit"
    assert again.content == first.content and again.json()["results"]
    assert again.headers["etag"] == first.headers["etag"]
    assert again.headers["content-type"].startswith("application/json")
    assert "server-timing" in again.headers  # timed afresh, not a kept header


def test_a_write_by_another_connection_is_seen_at_once(world, serve, engine) -> None:
    client = serve()
    held = _asked_twice_unchanged(client, engine)[1]
    assert held.headers["x-sheriff-cache"] == "hit"
    before = held.json()["results"]
    target = before[0]["id"]
    # Another process's write (a pass of sheriff triage): its own connection.
    with engine.begin() as conn:
        conn.execute(job.update().where(job.c.id == target).values(classification_id=4))
    after = client.get(JOBS)
    assert after.headers["x-sheriff-cache"] == "miss"
    assert {j["id"]: j["classification_id"] for j in after.json()["results"]}[target] == 4
    assert _asked_twice_unchanged(client, engine)[1].headers["x-sheriff-cache"] == "hit"


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
