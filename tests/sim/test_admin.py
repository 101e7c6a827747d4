"""Ground truth, request counters and `sheriff sim serve`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import taskcluster

from sheriff.sim.server import SimServer
from sheriff.sim.world import World
from tests.sim.conftest import tiny_data


def test_truth_names_every_failed_original_run_and_each_culprit(sim: SimServer) -> None:
    truth = httpx.get(f"{sim.root_url}/__sim__/truth").json()
    world = sim.world
    failed = {
        t.task_id
        for t in world.tasks.values()
        if t.kind == "test" and t.action is None and t.state in ("failed", "exception")
    }
    assert set(truth["cases"]) == failed
    verdicts = {case["truth"] for case in truth["cases"].values()}
    assert "regression" in verdicts and "intermittent" in verdicts
    for task_id, case in truth["cases"].items():
        task = world.tasks[task_id]
        if case["truth"] == "regression":
            assert any(f["cause"] == "regression" for f in case["failures"])
            assert 2 <= task.push.index < 5  # regression at push 2, fixed at push 5
        if case["truth"] == "infra":
            assert case["infra"] in ("exception", "no-summary")
    (regression,) = truth["regressions"]
    assert regression["culprit_revision"] == world.pushes[2].revision
    assert len(regression["tests"]) == 2


def test_stats_count_requests_per_service(sim: SimServer) -> None:
    queue = taskcluster.Queue({"rootUrl": sim.root_url})
    queue.task(sim.world.pushes[0].decision_task_id)
    queue.status(sim.world.pushes[0].decision_task_id)
    httpx.get(f"{sim.root_url}/api/project/autoland/push/")
    stats = httpx.get(f"{sim.root_url}/__sim__/stats").json()
    assert stats["requests"]["queue"] == 2 and stats["taskcluster"] == 2
    assert stats["treeherder"] == 1
    assert sim.stats()["requests"]["admin"] == 1


def test_world_plays_without_http() -> None:
    from sheriff.sim.scenario import parse_scenario

    world = World(parse_scenario(tiny_data()))
    assert not world.finished
    world.advance(24 * 60)
    assert world.finished and len(world.pushes) == 6
    assert all(t.state in ("completed", "failed", "exception") for t in world.tasks.values())


def test_sim_serve_answers_until_stopped(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.json"
    scenario.write_text(json.dumps(tiny_data()))
    command = [
        sys.executable,
        "-c",
        "from sheriff.cli import main; main()",
        "sim",
        "serve",
        "--scenario",
        str(scenario),
        "--port",
        "0",
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as process:
        try:
            assert process.stdout is not None
            root = process.stdout.readline().strip()
            assert root.startswith("http://127.0.0.1:")
            assert (
                httpx.post(f"{root}/__sim__/advance", params={"minutes": 30}).json()["finished"]
                is False
            )
            pushes = httpx.get(f"{root}/api/project/autoland/push/").json()["results"]
            assert len(pushes) == 4
        finally:
            process.terminate()
            process.wait(timeout=20)
