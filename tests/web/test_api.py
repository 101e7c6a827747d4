"""The REST API over HTTP, on SQLite and PostgreSQL, with the data of `build_world`."""

from __future__ import annotations

from tests.web.conftest import FAILURE, LINUX, REPO, TESTS, A, B, C, revision


def _ids(results):
    return [r["id"] for r in results]


def test_pushes_newest_first_with_counts(world, serve) -> None:
    api = serve()
    answer = api.get(f"/api/project/{REPO}/push/")
    assert answer.status_code == 200
    pushes = answer.json()["results"]
    assert [p["revision"] for p in pushes] == [revision(i) for i in (3, 2, 1, 0)]
    newest = pushes[0]
    assert newest["jobs"] == 6
    assert newest["failed_jobs"] == 4  # original, 2 failed retriggers, windows
    assert newest["verdicts"] == {"regression": 1, "not-eligible": 1}
    assert pushes[1]["verdicts"] == {} and pushes[1]["failed_jobs"] == 0

    page = api.get(f"/api/project/{REPO}/push/", params={"count": 2, "offset": 2}).json()
    assert [p["revision"] for p in page["results"]] == [revision(1), revision(0)]
    assert page["meta"] == {"offset": 2, "count": 2, "next_offset": 4}
    last = api.get(f"/api/project/{REPO}/push/", params={"count": 2, "offset": 3}).json()
    assert last["meta"]["next_offset"] is None


def test_jobs_filters_and_manifests(world, serve) -> None:
    api = serve()
    url = f"/api/project/{REPO}/jobs/"
    on_push = api.get(url, params={"push_id": world.push_ids[3]}).json()["results"]
    assert len(on_push) == 6
    assert "manifests" not in on_push[0] or on_push[0]["manifests"] is None

    linux_failed = api.get(
        url,
        params={"push_id": world.push_ids[3], "platform": LINUX, "result": "testfailed"},
    ).json()["results"]
    assert set(_ids(linux_failed)) == {world.jobs[n] for n in ("p3-bc", "p3-bc-r1", "p3-bc-r2")}
    assert {j["verdict"] for j in linux_failed} == {"regression"}

    with_c = api.get(url, params={"manifest": C, "include": "manifests"}).json()["results"]
    assert set(_ids(with_c)) == {world.jobs[n] for n in ("p1-bc", "p2-bc", "p3-bc2")}
    assert all(C in j["manifests"] for j in with_c)

    both = api.get(url, params=[("manifest", A), ("manifest", C)]).json()["results"]
    assert _ids(both) == [world.jobs["p1-bc"]]

    by_test = api.get(
        url, params={"test_path": TESTS[B][0], "include": ["manifests", "test_paths"]}
    ).json()["results"]
    assert world.jobs["p0-bc"] in _ids(by_test) and world.jobs["p1-bc"] not in _ids(by_test)
    first = next(j for j in by_test if j["id"] == world.jobs["p0-bc"])
    assert first["manifests"] == [A, B]
    assert first["test_paths"] == sorted(TESTS[A] + TESTS[B])


def test_job_detail_has_runs_failure_lines_and_verdict(world, serve) -> None:
    api = serve()
    answer = api.get(f"/api/project/{REPO}/jobs/{world.jobs['p3-bc-r1']}/")
    assert answer.status_code == 200
    detail = answer.json()
    assert detail["job"]["manifests"] == [A, B]
    runs = detail["runs"]
    assert [r["id"] for r in runs] == [
        world.jobs[n] for n in ("p3-bc", "p3-bc-r1", "p3-bc-r2", "p3-bc-r3")
    ]
    assert [r["action"] for r in runs] == [None, "retrigger", "retrigger", "retrigger"]
    assert [r["failure_lines"] for r in runs] == [[FAILURE], [FAILURE], [FAILURE], []]
    case = detail["case"]
    assert case["verdict"] == "regression" and case["policy"] == "seed"
    assert case["evidence"] == {"lines": {FAILURE: 2}}
    task_id = world.task_ids["p3-bc-r1"]
    assert detail["taskcluster_url"] == f"http://127.0.0.1:9/tasks/{task_id}"
    assert detail["treeherder_url"] == (
        f"https://treeherder.example/jobs?repo={REPO}&revision={revision(3)}"
        f"&selectedTaskRun={task_id}.0"
    )


def test_similar_jobs_are_what_a_backfill_schedules(world, serve) -> None:
    api = serve()
    url = f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/similar/"
    any_ = api.get(url).json()
    assert any_["manifests"] == [A, B]
    # Same platform, any of A/B; the Windows run and the C-only runs are not similar.
    expected = {world.jobs[n] for n in ("p0-bc", "p1-bc", "p3-bc", "p3-bc-r1", "p3-bc-r2")}
    assert set(_ids(any_["results"])) == expected | {world.jobs["p3-bc-r3"]}
    all_ = api.get(url, params={"match": "all"}).json()
    assert world.jobs["p1-bc"] not in _ids(all_["results"])
    assert world.jobs["p0-bc"] in _ids(all_["results"])
    near = api.get(url, params={"pushes": 2}).json()
    assert world.jobs["p0-bc"] not in _ids(near["results"])


def test_task_to_test_paths(world, serve) -> None:
    api = serve()
    answer = api.get(f"/api/project/{REPO}/push/{revision(3)}/task-to-test-paths").json()
    assert answer["revision"] == revision(3)
    tasks = answer["tasks"]
    assert tasks["test-linux1804-64-qr/opt-mochitest-browser-chrome-2"] == TESTS[C]
    assert tasks["test-linux1804-64-qr/opt-mochitest-browser-chrome-1"] == sorted(
        TESTS[A] + TESTS[B]
    )


def test_verdicts_with_filters(world, serve) -> None:
    api = serve()
    everything = api.get("/api/verdicts").json()["results"]
    assert {v["verdict"] for v in everything} == {"regression", "not-eligible"}
    regressions = api.get("/api/verdicts", params={"verdict": "regression", "repo": REPO})
    (only,) = regressions.json()["results"]
    assert only["job_id"] == world.jobs["p3-bc"] and only["p_regression"] == 0.97
    assert only["revision"] == revision(3)
    on_push = api.get("/api/verdicts", params={"repo": REPO, "revision": revision(2)})
    assert on_push.json()["results"] == []
    later = api.get("/api/verdicts", params={"since": "2030-01-01T00:00:00Z"})
    assert later.json()["results"] == []
    earlier = api.get("/api/verdicts", params={"since": "2026-01-01T00:00:00+01:00"})
    assert len(earlier.json()["results"]) == 2
    # A revision alone (the schema does not ask for repo with it) names its pushes anywhere.
    alone = api.get("/api/verdicts", params={"revision": revision(3)})
    assert alone.status_code == 200 and [v["job_id"] for v in alone.json()["results"]] == [
        v["job_id"] for v in everything if v["revision"] == revision(3)
    ]


def test_bad_input_is_a_json_error_never_a_500(world, serve) -> None:
    api = serve()
    cases = {
        "/api/project/nosuchrepo/push/": 404,
        f"/api/project/{REPO}/push/{'f' * 40}/task-to-test-paths": 404,
        f"/api/project/{REPO}/jobs/999999/": 404,
        f"/api/project/{REPO}/jobs/999999/similar/": 404,
        f"/api/project/{REPO}/jobs/abc/": 422,
        f"/api/project/{REPO}/jobs/?push_id=-1": 422,
        f"/api/project/{REPO}/jobs/?push_id=99999999999999999999": 422,
        f"/api/project/{REPO}/jobs/?count=0": 422,
        f"/api/project/{REPO}/jobs/?platform=%00": 422,
        f"/api/project/{REPO}/jobs/?include=everything": 422,
        f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/similar/?match=some": 422,
        f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/similar/?pushes=0": 422,
        "/api/verdicts?verdict=maybe": 422,
        "/api/verdicts?since=yesterday": 422,
        "/api/verdicts?since=0.5": 422,  # not seconds since 1970: the schema says date-time
        "/api/verdicts?since=1700000000": 422,
        "/api/verdicts?repo=nosuchrepo": 404,
        "/api/verdicts?revision=abc": 404,  # a revision alone is a filter; this one is unknown
        "/api/backfills?revision=abc": 404,
    }
    for path, status in cases.items():
        answer = api.get(path)
        assert answer.status_code == status, path
        assert answer.headers["content-type"] == "application/json", path
        assert "detail" in answer.json(), path


def test_openapi_describes_every_endpoint(serve) -> None:
    api = serve()
    paths = api.get("/openapi.json").json()["paths"]
    for path in (
        "/api/project/{repo}/push/",
        "/api/project/{repo}/jobs/",
        "/api/project/{repo}/jobs/{job_id}/",
        "/api/project/{repo}/jobs/{job_id}/similar/",
        "/api/project/{repo}/push/{revision}/task-to-test-paths",
        "/api/verdicts",
        "/api/project/{repo}/jobs/{job_id}/retrigger/",
    ):
        assert path in paths


def test_backfills_with_window_and_culprit(world, serve) -> None:
    api = serve()
    answer = api.get("/api/backfills", params={"repo": REPO, "status": "culprit"})
    assert answer.status_code == 200, answer.text
    (report,) = answer.json()["results"]
    assert report["culprit_revision"] == revision(2)
    assert report["runs_requested"] == 3
    (record,) = report["records"]
    assert record["manifests"] == [A, B]
    strip = [(p["revision"], p["outcome"], p["culprit"]) for p in record["window"]]
    assert strip == [
        (revision(0), "clean", False),
        (revision(1), "clean", False),
        (revision(2), "failing", True),
        (revision(3), "failing", False),
    ]
    one = api.get(f"/api/backfills/{world.report_id}").json()
    assert one["id"] == world.report_id and one["records"][0]["runs_requested"] == 3
    assert api.get("/api/backfills", params={"status": "open"}).json()["results"] == []
    assert api.get("/api/backfills/999999").status_code == 404
    assert api.get("/api/backfills", params={"repo": "nope"}).status_code == 404
    alone = api.get("/api/backfills", params={"revision": revision(3)})
    assert alone.status_code == 200 and [r["id"] for r in alone.json()["results"]] == [
        world.report_id
    ]
