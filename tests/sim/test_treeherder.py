"""Treeherder's endpoints: pushes, jobs after ingestion, log parsing, bug suggestions."""

from __future__ import annotations

from typing import Any

import httpx

from sheriff.sim.server import SimServer


def jobs_of(client: httpx.Client, task_id: str) -> list[dict[str, Any]]:
    """`/api/jobs/?task_id=` rows as dicts, named by `job_property_names` as Treeherder does."""
    body = client.get("/api/jobs/", params={"task_id": task_id}).json()
    assert set(body) == {"count", "next", "previous", "results", "job_property_names"}
    return [dict(zip(body["job_property_names"], row, strict=True)) for row in body["results"]]


def test_pushes_newest_first_and_by_revision(sim: SimServer) -> None:
    with httpx.Client(base_url=sim.root_url) as client:
        listed = client.get("/api/project/autoland/push/", params={"count": 3}).json()
        assert [p["revision"] for p in listed["results"]] == [
            p.revision for p in reversed(sim.world.pushes)
        ][:3]
        revision = sim.world.pushes[2].revision
        one = client.get("/api/project/autoland/push/", params={"revision": revision}).json()[
            "results"
        ]
        assert [p["id"] for p in one] == [sim.world.pushes[2].push_id]
        assert one[0]["revisions"][0]["revision"] == revision
        assert client.get("/api/project/nope/push/").status_code == 404
        classifications = client.get("/api/failureclassification/").json()
        assert {c["id"]: c["name"] for c in classifications}[4] == "intermittent"


def test_a_job_appears_only_after_ingestion_and_parses_later(tiny: Any) -> None:
    with SimServer(tiny) as sim, httpx.Client(base_url=sim.root_url) as client:
        sim.advance(6)
        task = next(t for t in sim.world.tasks.values() if t.kind == "test")
        assert jobs_of(client, task.task_id) == []
        while task.runs[-1].resolved is None:
            sim.advance(1)
        assert jobs_of(client, task.task_id) == []
        sim.advance(2)  # ingest delay is 1-2 minutes
        jobs = jobs_of(client, task.task_id)
        assert len(jobs) >= 1
        job = jobs[0]
        assert job["task_id"] == task.task_id and job["retry_id"] == 0
        assert job["job_type_name"] == task.label and job["state"] == "completed"
        assert job["push_revision"] == task.push.revision and job["duration"] >= 1
        logs = client.get("/api/project/autoland/job-log-url/", params={"job_id": job["id"]}).json()
        assert {log["parse_status"] for log in logs} == {"pending"}
        sim.advance(3)  # parse delay is 2-3 minutes
        logs = client.get("/api/project/autoland/job-log-url/", params={"job_id": job["id"]}).json()
        assert {log["parse_status"] for log in logs} == {"parsed"}
        by_push = client.get(
            "/api/project/autoland/jobs/", params={"push_id": job["push_id"]}
        ).json()
        assert job["id"] in [j["id"] for j in by_push["results"]]


def test_bug_suggestions_carry_the_failure_lines(sim: SimServer) -> None:
    world = sim.world
    failing = [
        j
        for j in world.jobs.values()
        if j.task.kind == "test"
        and j.task.runs[j.run_id].outcome.failures
        and world.minutes >= j.parsed
    ]
    assert failing
    with httpx.Client(base_url=sim.root_url) as client:
        for job in failing[:5]:
            suggestions = client.get(
                f"/api/project/autoland/jobs/{job.job_id}/bug_suggestions/"
            ).json()
            unexpected = [s for s in suggestions if s["search"].startswith("TEST-UNEXPECTED-")]
            tests = {f.test for f in job.task.runs[job.run_id].outcome.failures}
            assert {s["search"].split(" | ")[1] for s in unexpected} == tests
            for s in suggestions:
                assert set(s) == {
                    "search",
                    "path_end",
                    "search_terms",
                    "bugs",
                    "line_number",
                    "counter",
                    "failure_new_in_rev",
                }
                assert set(s["bugs"]) == {"open_recent", "all_others"}
                if s["path_end"] in world.catalog.known_bug:
                    assert (
                        s["bugs"]["open_recent"][0]["id"] == world.catalog.known_bug[s["path_end"]]
                    )
            job_json = jobs_of(client, job.task.task_id)
            assert job_json[0]["result"] in ("testfailed", "retry")


def test_same_failure_different_numbers_between_runs(sim: SimServer) -> None:
    """A test keeps its failure mode; the numbers in its message vary from run to run."""
    by_test: dict[str, set[str]] = {}
    from sheriff.sim.artifacts import failure_lines

    for task in sim.world.tasks.values():
        for run in task.runs:
            if run.resolved is not None and task.kind == "test":
                for line in failure_lines(sim.world, task, run):
                    if line.test and line.text.startswith("TEST-UNEXPECTED-"):
                        by_test.setdefault(line.test, set()).add(line.text)
    repeated = {t: lines for t, lines in by_test.items() if len(lines) > 1}
    assert repeated
    for lines in repeated.values():
        assert len({line.split(" | ")[0] for line in lines}) == 1  # one status per test


def test_classified_failures_show_classification_4(sim: SimServer) -> None:
    classified = [
        j
        for j in sim.world.jobs.values()
        if j.task.classified and j.task.runs[j.run_id].state == "failed"
    ]
    others = [j for j in sim.world.jobs.values() if not j.task.classified]
    with httpx.Client(base_url=sim.root_url) as client:
        for job in classified[:3]:
            found = jobs_of(client, job.task.task_id)
            assert next(j for j in found if j["id"] == job.job_id)["failure_classification_id"] == 4
        for job in others[:3]:
            found = client.get(f"/api/project/autoland/jobs/{job.job_id}/").json()
            assert found["failure_classification_id"] == 1


def test_counter_and_new_in_rev_follow_treeherders_line_cache(sim: SimServer) -> None:
    from sheriff.sim import treeherder as th

    world = sim.world
    parsed = sorted(
        (j for j in world.jobs.values() if j.line_history is not None), key=lambda j: j.parsed
    )
    seen: dict[str, int] = {}
    first_push: dict[str, int] = {}
    repeated = 0
    for job in parsed:
        for suggestion in th.bug_suggestions(world, job):
            key = th.cache_clean_line(suggestion["search"])
            assert suggestion["counter"] == seen.get(key, 0)
            first = first_push.setdefault(key, job.task.push.index)
            assert suggestion["failure_new_in_rev"] == (first == job.task.push.index)
            repeated += suggestion["counter"] > 0
            seen[key] = seen.get(key, 0) + 1
    assert repeated  # some lines (e.g. timeouts) repeat exactly
