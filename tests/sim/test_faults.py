"""The simulator's own faults (scenario `faults:`): each kind as a client meets it."""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest
import taskcluster

from sheriff.errors import SheriffError
from sheriff.sim.scenario import parse_scenario
from sheriff.sim.server import SimServer
from sheriff.sim.world import World
from tests.sim.conftest import ACCESS_TOKEN, CLIENT_ID, tiny_data


def _played(**faults: Any) -> SimServer:
    server = SimServer(parse_scenario(tiny_data(faults=faults), "tiny")).start()
    server.advance(120)
    return server


def _a_test_task(sim: SimServer) -> str:
    return next(t.task_id for t in sim.world.tasks.values() if t.kind == "test")


def test_errors_come_with_the_services_own_body() -> None:
    sim = _played(services={"queue": {"error": 1.0}})
    try:
        answer = httpx.get(f"{sim.root_url}/api/queue/v1/task/{_a_test_task(sim)}")
        assert answer.status_code in (500, 502, 503)
        assert answer.json()["code"] == "InternalServerError"
        # Other services are not touched by a queue override.
        assert httpx.get(f"{sim.root_url}/api/project/autoland/push/").status_code == 200
        assert sim.stats()["faults"]["error"] == 1
        assert sim.stats()["requests"]["queue"] == 1  # a faulted request still counts
    finally:
        sim.stop()


def test_throttling_says_when_to_come_back() -> None:
    sim = _played(requests={"throttle": 1.0}, retry_after_seconds=[2, 4])
    try:
        answer = httpx.get(f"{sim.root_url}/api/project/autoland/push/")
        assert answer.status_code == 429
        assert 2 <= int(answer.headers["retry-after"]) <= 4
    finally:
        sim.stop()


def test_a_reset_drops_the_connection_mid_answer() -> None:
    sim = _played(requests={"reset": 1.0})
    try:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{sim.root_url}/api/project/autoland/push/")
        assert sim.stats()["faults"]["reset"] == 1
    finally:
        sim.stop()


def test_a_lost_write_happened_though_the_client_saw_it_fail() -> None:
    sim = _played(services={"hooks": {"lost_write": 1.0}})
    try:
        original = _a_test_task(sim)
        hooks = taskcluster.Hooks(
            {
                "rootUrl": sim.root_url,
                "credentials": {"clientId": CLIENT_ID, "accessToken": ACCESS_TOKEN},
                "maxRetries": 0,
            }
        )
        decision = sim.world.tasks[original].push.decision_task_id
        payload = _retrigger_payload(sim, decision, original)
        before = len(sim.world.tasks)
        with pytest.raises(taskcluster.exceptions.TaskclusterFailure):
            hooks.triggerHook(payload["hookGroupId"], payload["hookId"], payload["payload"])
        assert len(sim.world.tasks) == before + 1  # the action task exists all the same
    finally:
        sim.stop()


def _retrigger_payload(sim: SimServer, decision: str, task_id: str) -> dict[str, Any]:
    from sheriff.actions.protocol import ActionsProtocol
    from sheriff.ci.taskcluster import taskcluster_clients

    clients = taskcluster_clients(sim.root_url, client_id=CLIENT_ID, access_token=ACCESS_TOKEN)
    prepared = ActionsProtocol(clients).prepare(
        "retrigger", decision_task_id=decision, task_id=task_id, input={"times": 1}
    )
    return {
        "hookGroupId": prepared.hook_group_id,
        "hookId": prepared.hook_id,
        "payload": prepared.payload,
    }


def _manifests_url(sim: SimServer) -> str:
    decision = next(iter(sim.world.tasks.values())).push.decision_task_id
    return f"{sim.root_url}/api/queue/v1/task/{decision}/artifacts/public/manifests-by-task.json.gz"


def test_artifacts_come_back_corrupt_or_cut_short() -> None:
    clean = _played()
    corrupt = _played(corrupt_artifacts=1.0)
    cut = _played(truncated_artifacts=1.0)
    try:
        good = httpx.get(_manifests_url(clean), follow_redirects=True).content
        assert gzip.decompress(good)
        garbage = httpx.get(_manifests_url(corrupt), follow_redirects=True).content
        assert len(garbage) == len(good) and garbage != good
        # Cut short: half the bytes under the whole file's Content-Length, then the
        # connection drops, which a client sees as an incomplete answer.
        with (
            httpx.stream("GET", _manifests_url(cut), follow_redirects=True) as answer,
            pytest.raises(httpx.RemoteProtocolError, match=r"incomplete|complete message"),
        ):
            assert answer.headers["content-length"] == str(len(good))
            answer.read()
    finally:
        for sim in (clean, corrupt, cut):
            sim.stop()


def test_treeherder_outage_windows_follow_the_virtual_clock() -> None:
    sim = _played(treeherder_outages=[{"start_minutes": 130, "minutes": 30}])
    try:
        url = f"{sim.root_url}/api/project/autoland/push/"
        assert httpx.get(url).status_code == 200  # at minute 120
        sim.advance(15)
        assert httpx.get(url).status_code == 503
        assert httpx.get(f"{sim.root_url}/api/queue/v1/task/{_a_test_task(sim)}").is_success
        sim.advance(30)
        assert httpx.get(url).status_code == 200
    finally:
        sim.stop()


def test_faults_never_change_what_the_world_does() -> None:
    faulty = parse_scenario(tiny_data(faults={"requests": {"error": 0.5}}), "tiny")
    clean, noisy = World(parse_scenario(tiny_data(), "tiny")), World(faulty)
    clean.advance(200)
    noisy.advance(200)
    assert clean.truth() == noisy.truth()


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ({"requests": {"error": 0.7, "reset": 0.4}}, "add up to more than 1"),
        ({"services": {"github": {"error": 0.1}}}, "unknown service github"),
        ({"requests": {"eror": 0.1}}, "faults.requests.eror: unknown field"),
        ({"treeherder_outages": [{"start_minutes": 5}]}, "minutes"),
    ],
)
def test_bad_fault_sections_are_one_line(faults: dict[str, Any], message: str) -> None:
    with pytest.raises(SheriffError, match=message):
        parse_scenario(tiny_data(faults=faults), "tiny")
