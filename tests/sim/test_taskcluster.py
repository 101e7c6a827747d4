"""The official taskcluster client and httpx against a running simulator."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest
import taskcluster

from sheriff.sim.server import SimServer


def _decision(sim: SimServer, tc_options: dict[str, Any], push: int = 1) -> str:
    index = taskcluster.Index(tc_options)
    revision = sim.world.pushes[push].revision
    found = index.findTask(f"gecko.v2.autoland.revision.{revision}.taskgraph.decision")
    pushlog = sim.world.pushes[push].pushlog_id
    assert (
        index.findTask(f"gecko.v2.autoland.pushlog-id.{pushlog}.decision")["taskId"]
        == found["taskId"]
    )
    return found["taskId"]


def test_index_queue_and_artifacts_with_the_official_client(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    queue = taskcluster.Queue(tc_options)
    decision_id = _decision(sim, tc_options)
    decision = queue.task(decision_id)
    assert decision["metadata"]["name"] == "Gecko Decision Task"
    assert decision["tags"]["kind"] == "decision-task"
    assert decision["extra"]["treeherder"]["jobKind"] == "other"
    assert queue.status(decision_id)["status"]["state"] == "completed"

    tasks, token = [], None
    while True:
        page = queue.listTaskGroup(
            decision_id, query={"limit": 4, **({"continuationToken": token} if token else {})}
        )
        assert len(page["tasks"]) <= 4
        tasks += page["tasks"]
        token = page.get("continuationToken")
        if not token:
            break
    push = sim.world.pushes[1]
    assert len(tasks) == 1 + len(push.scheduled)
    test = next(t for t in tasks if t["task"]["tags"]["kind"] == "test")
    definition, status = test["task"], test["status"]
    assert definition["taskGroupId"] == decision_id == definition["extra"]["parent"]
    assert definition["metadata"]["name"] == definition["tags"]["label"]
    assert definition["tags"]["retrigger"] == "true"
    assert f"tc-treeherder.v2.autoland.{push.revision}.{push.pushlog_id}" in definition["routes"]
    assert definition["payload"]["env"]["GECKO_HEAD_REV"] == push.revision
    manifests = json.loads(definition["payload"]["env"]["MOZHARNESS_TEST_PATHS"])
    assert list(manifests) == [definition["extra"]["suite"]]
    assert definition["extra"]["treeherder"]["jobKind"] == "test"
    assert status["state"] in ("completed", "failed", "exception")
    assert {
        "runId",
        "state",
        "reasonCreated",
        "scheduled",
        "started",
        "resolved",
        "workerId",
    } <= set(status["runs"][0])

    names = [a["name"] for a in queue.listLatestArtifacts(decision_id)["artifacts"]]
    for name in (
        "public/actions.json",
        "public/manifests-by-task.json.gz",
        "public/tests-by-manifest.json.gz",
        "public/label-to-taskid.json",
    ):
        assert name in names
    redirect = queue.getLatestArtifact(decision_id, "public/actions.json")
    actions = httpx.get(redirect["url"]).json()
    assert actions["version"] == 1
    by_label = json.loads(
        gzip.decompress(
            httpx.get(
                queue.getLatestArtifact(decision_id, "public/manifests-by-task.json.gz")["url"]
            ).content
        )
    )
    assert by_label[definition["metadata"]["name"]] == manifests[definition["extra"]["suite"]]
    label_to_taskid = httpx.get(
        queue.getLatestArtifact(decision_id, "public/label-to-taskid.json")["url"]
    ).json()
    assert label_to_taskid[definition["metadata"]["name"]] == status["taskId"]


def test_httpx_follows_the_artifact_redirect_to_an_errorsummary(sim: SimServer) -> None:
    failed = next(
        t
        for t in sim.world.tasks.values()
        if t.kind == "test" and t.state == "failed" and t.runs[-1].outcome.failures
    )
    with httpx.Client(base_url=sim.root_url, follow_redirects=False) as client:
        listed = client.get(f"/api/queue/v1/task/{failed.task_id}/artifacts").json()["artifacts"]
        summary = next(a["name"] for a in listed if a["name"].endswith("_errorsummary.log"))
        assert summary.startswith("public/test_info/")
        response = client.get(f"/api/queue/v1/task/{failed.task_id}/artifacts/{summary}")
        assert response.status_code == 303
        lines = [
            json.loads(line) for line in client.get(response.headers["location"]).text.splitlines()
        ]
    actions = [line["action"] for line in lines]
    assert actions[0] == "test_groups" and "group_result" in actions
    results = [line for line in lines if line["action"] == "test_result"]
    assert {r["test"] for r in results} == {f.test for f in failed.runs[-1].outcome.failures}
    assert all(r["expected"] == "PASS" and r["status"] != "PASS" and r["group"] for r in results)
    with httpx.Client(base_url=sim.root_url, follow_redirects=True) as client:
        log = client.get(
            f"/api/queue/v1/task/{failed.task_id}/artifacts/public/logs/live_backing.log"
        ).text
    assert "TEST-UNEXPECTED-" in log


def test_errors_have_taskclusters_shape(sim: SimServer, tc_options: dict[str, Any]) -> None:
    queue = taskcluster.Queue(tc_options)
    with pytest.raises(taskcluster.TaskclusterRestFailure) as info:
        queue.task("AAAAAAAAAAAAAAAAAAAAAA")
    assert info.value.status_code == 404
    assert set(info.value.body) == {"code", "message", "requestInfo"}
    with pytest.raises(taskcluster.TaskclusterRestFailure):
        taskcluster.Index(tc_options).findTask("gecko.v2.autoland.revision.nope.taskgraph.decision")
    response = httpx.get(
        f"{sim.root_url}/api/queue/v1/task-group/{sim.world.pushes[0].decision_task_id}/list",
        params={"continuationToken": "garbage!"},
    )
    assert response.status_code == 400


def test_cancel_task_needs_a_signature_and_resolves_exception(tiny: Any) -> None:
    with SimServer(tiny) as sim:
        sim.advance(6)  # push 0's tests exist and are pending or running
        task = next(t for t in sim.world.tasks.values() if t.kind == "test")
        anonymous = taskcluster.Queue({"rootUrl": sim.root_url})
        with pytest.raises(taskcluster.TaskclusterRestFailure) as info:
            anonymous.cancelTask(task.task_id)
        assert info.value.status_code == 403 and info.value.body["code"] == "InsufficientScopes"
        options = {
            "rootUrl": sim.root_url,
            "credentials": {"clientId": "sheriff-dev", "accessToken": "sheriff-dev-token"},
        }
        status = taskcluster.Queue(options).cancelTask(task.task_id)["status"]
        assert status["state"] == "exception"
        assert status["runs"][-1]["reasonResolved"] == "canceled"


def test_the_clock_moves_only_when_told(tiny: Any) -> None:
    with SimServer(tiny) as sim:
        before = sim.now
        assert len(sim.world.pushes) == 1
        assert httpx.get(f"{sim.root_url}/__sim__/clock").json()["minutes"] == 0
        response = httpx.post(f"{sim.root_url}/__sim__/advance", params={"minutes": 21})
        assert response.status_code == 200
        assert (sim.now - before).total_seconds() == 21 * 60
        assert len(sim.world.pushes) == 3  # pushes every 10 minutes: at 0, 10, 20
        decision = sim.world.tasks[sim.world.pushes[2].decision_task_id]
        assert decision.state in ("pending", "running")


def test_the_async_client_works_too(sim: SimServer, tc_options: dict[str, Any]) -> None:
    import asyncio

    import taskcluster.aio

    async def scenario() -> tuple[int, list[str]]:
        queue = taskcluster.aio.Queue(tc_options)
        group = await queue.listTaskGroup(sim.world.pushes[0].decision_task_id)
        scopes = await taskcluster.aio.Auth(tc_options).currentScopes()
        return len(group["tasks"]), scopes["scopes"]

    count, scopes = asyncio.run(scenario())
    assert count == len(sim.world.groups[sim.world.pushes[0].decision_task_id])
    assert "queue:cancel-task:gecko-level-3/*" in scopes


def test_list_task_group_carries_the_groups_own_fields(
    sim: SimServer, tc_options: dict[str, Any]
) -> None:
    """queue api.js listTaskGroup: taskGroupId, schedulerId, expires (the latest of its
    tasks'); `sealed` only for a sealed group, which Gecko's never are."""
    decision = sim.world.pushes[1].decision_task_id
    page = taskcluster.Queue(tc_options).listTaskGroup(decision, query={"limit": 5})
    assert page["taskGroupId"] == decision and page["schedulerId"] == "gecko-level-3"
    expiries = [t["task"]["expires"] for t in page["tasks"]]
    assert page["expires"] >= max(expiries)
    assert "sealed" not in page and "continuationToken" in page


def test_list_artifacts_pages_and_an_error_artifact_answers_424(tc_options: dict[str, Any]) -> None:
    from sheriff.sim.artifacts import errorsummary_name
    from sheriff.sim.entities import INFRA_NO_SUMMARY
    from sheriff.sim.scenario import parse_scenario
    from tests.sim.conftest import tiny_data

    with SimServer(parse_scenario(tiny_data(infra_failure_rate=0.6))) as sim:
        sim.advance(120)
        options = {**tc_options, "rootUrl": sim.root_url}
        queue = taskcluster.Queue(options)
        decision = sim.world.pushes[1].decision_task_id
        first = queue.listArtifacts(decision, "0", query={"limit": 2})
        assert len(first["artifacts"]) == 2 and "continuationToken" in first
        rest = queue.listArtifacts(
            decision, "0", query={"continuationToken": first["continuationToken"]}
        )
        names = [a["name"] for a in first["artifacts"] + rest["artifacts"]]
        assert names == [a["name"] for a in queue.listArtifacts(decision, "0")["artifacts"]]
        assert "public/actions.json" in names
        for task in sim.world.tasks.values():
            if task.kind != "test" or task.runs[0].outcome.infra != INFRA_NO_SUMMARY:
                continue
            if task.runs[0].resolved is None:
                continue
            listed = queue.listArtifacts(task.task_id, "0")["artifacts"]
            name = errorsummary_name(sim.world, task)
            errors = [a for a in listed if a["name"] == name]
            if not errors:
                continue
            assert errors[0]["storageType"] == "error"
            answer = httpx.get(
                f"{sim.root_url}/api/queue/v1/task/{task.task_id}/runs/0/artifacts/{name}"
            )
            assert answer.status_code == 424
            assert answer.json() == {
                "reason": "file-missing-on-worker",
                "message": f"Artifact not found: {name}",
            }
            return
        raise AssertionError("no run left an error artifact")
