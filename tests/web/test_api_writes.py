"""Writes: refused without a configured token, recorded in the request log with one."""

from __future__ import annotations

import sqlalchemy as sa

from sheriff.actions import log
from sheriff.store.schema import action_request
from tests.web.conftest import REPO, A, B, revision

TOKEN = "s3cret-token"


def _requests(engine):
    with engine.connect() as conn:
        return log.requests(conn)


def test_writes_are_refused_without_a_configured_token(engine, world, serve) -> None:
    api = serve()  # no api_token
    url = f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/retrigger/"
    answer = api.post(url, json={"times": 2}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 403
    assert "api_token" in answer.json()["detail"]
    backfill = api.post(f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/backfill/", json={})
    assert backfill.status_code == 403
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(action_request)).scalar() == 0


def test_a_wrong_or_missing_token_is_401(engine, world, serve) -> None:
    api = serve(api_token=TOKEN)
    url = f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/retrigger/"
    assert api.post(url, json={}).status_code == 401
    wrong = api.post(url, json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert _requests(engine) == []


def test_retrigger_goes_through_the_request_log(engine, world, serve) -> None:
    api = serve(api_token=TOKEN)
    url = f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/retrigger/"
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "click-1"}
    answer = api.post(url, json={"times": 3}, headers=headers)
    assert answer.status_code == 202, answer.text
    (request,) = answer.json()["requests"]
    assert request["strategy"] == "retrigger"
    assert request["task_id"] == world.task_ids["p3-bc"]
    assert request["input"] == {"times": 3}
    # Taskcluster is unreachable in tests: the request waits for the next pass.
    assert request["state"] == "requested"
    assert "not sent yet" in request["reason"]
    again = api.post(url, json={"times": 3}, headers=headers)
    assert again.status_code == 202
    assert len(_requests(engine)) == 1
    clash = api.post(url, json={"times": 1}, headers=headers)
    assert clash.status_code == 422
    bad = api.post(url, json={"times": 0}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert bad.status_code == 422
    missing = api.post(
        f"/api/project/{REPO}/jobs/999999/retrigger/",
        json={},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert missing.status_code == 404


def test_backfill_runs_the_same_manifests_on_earlier_pushes(engine, world, serve) -> None:
    api = serve(api_token=TOKEN)
    answer = api.post(
        f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/backfill/",
        json={"depth": 2},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert answer.status_code == 202, answer.text
    requests = answer.json()["requests"]
    assert [r["strategy"] for r in requests] == ["backfill-task", "backfill-task"]
    assert {r["revision"] for r in requests} == {revision(2), revision(1)}
    for r in requests:
        # The original's MOZHARNESS_TEST_PATHS object, and the original's revision, as
        # Gecko's own backfill sends them (actions/backfill.py input_for_support_action).
        assert r["input"]["test_manifests"] == {"mochitest-browser-chrome": [A, B]}
        assert r["input"]["revision"] == revision(3)
        assert r["input"]["label"] == "test-linux1804-64-qr/opt-mochitest-browser-chrome-1"
    oldest = api.post(
        f"/api/project/{REPO}/jobs/{world.jobs['p0-bc']}/backfill/",
        json={},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert oldest.status_code == 422


def test_a_body_that_is_not_json_gets_a_documented_answer(engine, world, serve) -> None:
    api = serve(api_token=TOKEN)
    url = f"/api/project/{REPO}/jobs/{world.jobs['p3-bc']}/retrigger/"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    documented = api.get("/openapi.json").json()["paths"][
        "/api/project/{repo}/jobs/{job_id}/retrigger/"
    ]["post"]["responses"]
    for body in (b"\x82O\x9egbf", b"{not json", b"[1, 2"):
        answer = api.post(url, content=body, headers=headers)
        assert str(answer.status_code) in documented, (body, answer.status_code)
        assert answer.status_code in (400, 422) and "detail" in answer.json()
    assert _requests(engine) == []
