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


def test_a_job_is_listed_from_pending_on_and_parses_once_completed(tiny: Any) -> None:
    """taskcluster_pulse/handler.py: every Pulse message of a run updates its job; while the
    run is pending or running the job's result is `unknown` and it has no logs."""
    with SimServer(tiny) as sim, httpx.Client(base_url=sim.root_url) as client:
        sim.advance(6)
        task = next(t for t in sim.world.tasks.values() if t.kind == "test")
        assert jobs_of(client, task.task_id) == []  # Treeherder learns of it a minute later
        sim.advance(2.5)  # ingest delay is 1-2 minutes
        (pending,) = jobs_of(client, task.task_id)
        assert pending["state"] in ("pending", "running") and pending["result"] == "unknown"
        logs = client.get("/api/project/autoland/job-log-url/", params={"job_id": pending["id"]})
        assert logs.json() == []
        while task.runs[-1].resolved is None:
            sim.advance(1)
        sim.advance(2)
        job = next(j for j in jobs_of(client, task.task_id) if j["retry_id"] == 0)
        assert job["id"] == pending["id"]  # one job per run, moved forward
        assert job["task_id"] == task.task_id and job["state"] == "completed"
        assert job["job_type_name"] == task.label and job["result"] != "unknown"
        assert job["push_revision"] == task.push.revision and job["duration"] >= 1
        logs = client.get("/api/project/autoland/job-log-url/", params={"job_id": job["id"]}).json()
        if task.runs[0].state == "exception":
            assert logs == []  # handle_task_exception: exception runs get no log
            return
        assert {log["parse_status"] for log in logs} == {"pending"}
        sim.advance(3)  # parse delay is 2-3 minutes
        logs = client.get("/api/project/autoland/job-log-url/", params={"job_id": job["id"]}).json()
        assert {log["parse_status"] for log in logs} == {"parsed"}
        by_push = client.get(
            "/api/project/autoland/jobs/", params={"push_id": job["push_id"]}
        ).json()
        assert job["id"] in [j["id"] for j in by_push["results"]]


def test_exception_runs_have_no_logs(sim: SimServer) -> None:
    world = sim.world
    excepted = [
        j
        for j in world.jobs.values()
        if j.state == "completed" and j.task.runs[j.run_id].state == "exception"
    ]
    assert excepted
    with httpx.Client(base_url=sim.root_url) as client:
        ids = [j.job_id for j in excepted]
        assert client.get("/api/project/autoland/job-log-url/", params={"job_id": ids}).json() == []
        rows = [jobs_of(client, j.task.task_id) for j in excepted]
        results = {r["result"] for found in rows for r in found if r["id"] in ids}
        assert results <= {"exception", "retry", "usercancel"}


def test_bug_suggestions_carry_the_failure_lines(sim: SimServer) -> None:
    world = sim.world
    failing = [
        j
        for j in world.jobs.values()
        if j.task.kind == "test"
        and j.task.runs[j.run_id].outcome.failures
        and j.parsed is not None
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
                if s["path_end"] in world.catalog.known_bug and "CRASH" not in s["search"]:
                    ids = [b["id"] for b in s["bugs"]["open_recent"]]
                    assert world.catalog.known_bug[s["path_end"]] in ids
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


def test_a_person_classifies_some_failures_later(tiny: Any) -> None:
    """Classified failures (classified_fraction) are 1 or 6 when first listed, and a
    person's 2 or 4 (with a note) some time after the log is parsed."""
    from sheriff.sim.truth import case_truth

    with SimServer(tiny) as sim, httpx.Client(base_url=sim.root_url) as client:
        seen_unclassified: set[int] = set()
        for _ in range(40):
            sim.advance(5)
            for job in sim.world.jobs.values():
                if job.task.classified and job.classification in (1, 6, 7, 8):
                    seen_unclassified.add(job.job_id)
        classified = [
            j
            for j in sim.world.jobs.values()
            if j.task.classified and j.task.runs[j.run_id].state == "failed"
        ]
        assert classified
        for job in classified:
            expected = {"regression": 2, "infra": 5}.get(case_truth(job.task), 4)
            found = client.get(f"/api/project/autoland/jobs/{job.job_id}/").json()
            assert found["failure_classification_id"] == expected
            assert job.job_id in seen_unclassified  # not a person's decision at first
            (note,) = client.get(
                "/api/project/autoland/note/", params={"job_id": job.job_id}
            ).json()
            assert note["failure_classification_id"] == expected and note["who"].endswith(".com")
        others = [j for j in sim.world.jobs.values() if not j.task.classified]
        assert {j.classification for j in others} <= {1, 6, 7, 8}


def test_counter_and_new_in_rev_follow_treeherders_line_cache(sim: SimServer) -> None:
    from sheriff.sim import treeherder as th

    world = sim.world
    parsed = sorted(
        (j for j in world.jobs.values() if j.line_history is not None),
        key=lambda j: j.parsed or 0.0,
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


def test_at_most_40_error_lines_per_log() -> None:
    """treeherder/log_parser/parsers.py stops at settings.MAX_ERROR_LINES (40)."""
    from sheriff.sim.artifacts import failure_lines
    from sheriff.sim.scenario import parse_scenario
    from tests.sim.conftest import tiny_data

    data = tiny_data(
        pushes=2,
        regressions=[{"push": 0, "tests": 60, "platforms": "all", "fail_rate": 1.0}],
    )
    data["suites"] = [
        {
            "name": "xpcshell",
            "group_symbol": "X",
            "group_name": "Xpcshell tests",
            "symbol": "X",
            "chunks": 1,
            "manifests": 2,
            "tests_per_manifest": 30,
            "duration_minutes": [10, 15],
        }
    ]
    with SimServer(parse_scenario(data)) as sim, httpx.Client(base_url=sim.root_url) as client:
        sim.advance(60)
        job = next(
            j
            for j in sim.world.jobs.values()
            if j.task.kind == "test" and j.line_history is not None
        )
        assert len(failure_lines(sim.world, job.task, job.task.runs[job.run_id])) > 40
        answer = client.get(f"/api/project/autoland/jobs/{job.job_id}/bug_suggestions/").json()
        assert len(answer) == 40


def test_treeherder_marks_new_failures_6_and_intermittents_8() -> None:
    """etl/artifact.py: a parsed failure with a line never seen is 6; intermittents.py: a
    failed job whose failing groups passed in at least half their runs on its push and
    the ones before is 8, and back to 6 (or 1) when later runs contradict it."""
    from sheriff.sim.etl import job_family
    from sheriff.sim.scenario import load_scenario

    with SimServer(load_scenario("small")) as sim:
        world = sim.world
        marked: dict[int, list[int]] = {}
        for _ in range(60):
            sim.advance(10)
            for job in world.jobs.values():
                history = marked.setdefault(job.job_id, [])
                if not history or history[-1] != job.classification:
                    history.append(job.classification)
        failed = [
            j
            for j in world.jobs.values()
            if j.task.kind == "test" and j.task.runs[j.run_id].state == "failed" and j.groups
        ]
        assert failed
        for job in failed:
            # A new line moved it off 1 (to 6, then maybe 8 and back); no new line, no 6.
            assert (job.classification != 1) if job.new_failure else (job.classification != 6)
        eights = [j for j in failed if 8 in marked[j.job_id]]
        assert eights
        flaky = [
            j
            for j in eights
            if all(f.regression is None for f in j.task.runs[j.run_id].outcome.failures)
        ]
        assert flaky
        for job in flaky:
            # Every failing group passed in at least half of the family's runs of it nearby.
            family = job_family(job.task.label)
            runs = [
                other
                for push, jobs in world.th.family[family].items()
                if abs(push - job.task.push.index) <= 20
                for other in jobs
            ]
            for group in job.error_groups:
                ran = [o for o in runs if group in o.groups]
                assert sum(group not in o.error_groups for o in ran) / len(ran) >= 0.5
        # Some 8s went back when later runs failed the same groups (a regression's).
        assert any(history[-1] != 8 and 8 in history for history in marked.values())


def test_bug_search_finds_more_than_the_tests_intermittent_bug(sim: SimServer) -> None:
    """Bugscache.search is a substring search of bug summaries: meta bugs, permanent-failure
    bugs, a regression's own bug and internal issues (id null) come with the real ones."""
    from sheriff.sim import treeherder as th
    from sheriff.sim.scenario import load_scenario

    with SimServer(load_scenario("small")) as small:
        small.advance(8 * 60)
        kinds: set[str] = set()
        every = [(w, j) for w in (small.world, sim.world) for j in w.jobs.values()]
        for world, job in every:
            for suggestion in th.bug_suggestions(world, job):
                for bug in suggestion["bugs"]["open_recent"]:
                    assert set(bug) == {
                        "id",
                        "internal_id",
                        "status",
                        "resolution",
                        "summary",
                        "dupe_of",
                        "crash_signature",
                        "keywords",
                        "whiteboard",
                        "occurrences",
                    }
                    assert suggestion["search_terms"][0] in bug["summary"] or bug["crash_signature"]
                    summary = bug["summary"]
                    if bug["id"] is None:
                        kinds.add("internal")
                        assert isinstance(bug["internal_id"], int) and bug["occurrences"] >= 1
                    elif summary.startswith("[meta]"):
                        kinds.add("meta")
                    elif summary.startswith("Perma"):
                        kinds.add("perma")
                    elif "fails after bug" in summary:
                        kinds.add("regression")
                    elif summary.endswith("single tracking bug"):
                        kinds.add("tracking")
                    elif summary.startswith("Crash in [@"):
                        kinds.add("crash")
        assert kinds == {"crash", "internal", "meta", "perma", "regression", "tracking"}


def test_jobs_of_several_pushes_at_once(sim: SimServer) -> None:
    """`/api/jobs/?push_id__in=a,b` (Treeherder's job view follows its pushes so): the jobs
    of both; a value that is not a push id is a 400."""
    sim.advance(90)
    first, second = sim.world.pushes[0], sim.world.pushes[1]
    with httpx.Client(base_url=sim.root_url) as client:
        ids = f"{first.push_id},{second.push_id}"
        body = client.get("/api/jobs/", params={"push_id__in": ids, "count": 2000}).json()
        rows = [dict(zip(body["job_property_names"], r, strict=True)) for r in body["results"]]
        assert {r["push_id"] for r in rows} == {first.push_id, second.push_id}
        assert sorted(r["id"] for r in rows) == sorted(j.job_id for j in first.jobs + second.jobs)
        assert client.get("/api/jobs/", params={"push_id__in": "1,x"}).status_code == 400
