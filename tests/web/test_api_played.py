"""Every endpoint answers with the data of a played scenario (small.yaml), consistently."""

from __future__ import annotations

from collections import Counter

import pytest

from sheriff.store.db import open_database
from tests.web.conftest import LiveServer, offline_settings


@pytest.fixture(scope="module")
def api(played_database: str):
    import httpx

    from sheriff.web import create_app

    engine = open_database(played_database)
    app = create_app(engine, offline_settings(), protocol_factory=None)
    with LiveServer(app) as server, httpx.Client(base_url=server.url + "/api") as client:
        yield client
    engine.dispose()


def _ok(answer):
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_pushes_and_verdicts_agree(api) -> None:
    pushes = _ok(api.get("/project/autoland/push/", params={"count": 100}))["results"]
    assert len(pushes) == 30
    verdicts = _ok(api.get("/verdicts", params={"repo": "autoland", "count": 500}))["results"]
    assert verdicts
    per_push = Counter((v["revision"], v["verdict"]) for v in verdicts)
    for p in pushes:
        for name, n in p["verdicts"].items():
            assert per_push[(p["revision"], name)] == n
        one = _ok(api.get(f"/project/autoland/push/{p['revision']}/"))
        assert one["failed_jobs"] == p["failed_jobs"]
    regressions = _ok(api.get("/verdicts", params={"verdict": "regression"}))["results"]
    assert regressions and all(v["verdict"] == "regression" for v in regressions)


def test_jobs_detail_similar_and_test_paths(api) -> None:
    (case,) = _ok(api.get("/verdicts", params={"verdict": "regression", "count": 1}))["results"]
    push = _ok(api.get(f"/project/autoland/push/{case['revision']}/"))
    jobs = _ok(
        api.get(
            "/project/autoland/jobs/",
            params={"push_id": push["id"], "include": ["manifests", "test_paths"], "count": 500},
        )
    )["results"]
    assert len(jobs) == push["jobs"]
    assert any(j["manifests"] for j in jobs)
    assert all(isinstance(j["test_paths"], list) for j in jobs)

    detail = _ok(api.get(f"/project/autoland/jobs/{case['job_id']}/"))
    assert detail["case"]["id"] == case["id"]
    assert len(detail["runs"]) >= 2 and detail["runs"][0]["failure_lines"]
    manifests = detail["job"]["manifests"]
    assert manifests

    similar = _ok(api.get(f"/project/autoland/jobs/{case['job_id']}/similar/"))
    assert case["job_id"] in [j["id"] for j in similar["results"]]
    every = _ok(api.get(f"/project/autoland/jobs/{case['job_id']}/similar/?match=all"))
    assert {j["id"] for j in every["results"]} <= {j["id"] for j in similar["results"]}

    by_manifest = _ok(api.get("/project/autoland/jobs/", params={"manifest": manifests[0]}))
    assert by_manifest["results"]

    tasks = _ok(api.get(f"/project/autoland/push/{case['revision']}/task-to-test-paths"))
    assert tasks["revision"] == case["revision"]
    assert set(tasks["tasks"]) <= {j["label"] for j in jobs}


def test_played_pushes_have_test_paths(api) -> None:
    (case,) = _ok(api.get("/verdicts", params={"verdict": "regression", "count": 1}))["results"]
    tasks = _ok(api.get(f"/project/autoland/push/{case['revision']}/task-to-test-paths"))
    assert tasks["tasks"][case["label"]]


def test_backfills(api) -> None:
    reports = _ok(api.get("/backfills", params={"repo": "autoland"}))["results"]
    assert reports
    found = [r for r in reports if r["culprit_revision"]]
    assert found
    report = _ok(api.get(f"/backfills/{found[0]['id']}"))
    culprits = [p for rec in report["records"] for p in rec["window"] if p["culprit"]]
    assert [p["revision"] for p in culprits][:1] == [report["culprit_revision"]]


def test_regressions_are_one_row_per_breakage_with_their_culprits(api) -> None:
    """small.yaml has 2 true regressions and ~44 regression cases: 2 records, not 44."""
    found = _ok(api.get("/regressions"))["results"]
    assert len(found) == 2
    cases = _ok(api.get("/verdicts", params={"verdict": "regression", "count": 500}))["results"]
    assert sum(len(r["cases"]) for r in found) == len(cases)
    for r in found:
        assert r["culprit"] is not None and len(r["culprit"]["revision"]) == 40
        assert r["culprit"]["author"]
        assert _ok(api.get(f"/regressions/{r['id']}")) == r
    still = _ok(api.get("/regressions", params={"open": "true"}))["results"]
    assert all(r["status"] != "stopped" for r in still)
    assert api.get("/regressions/999999").status_code == 404
