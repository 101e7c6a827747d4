"""Several repositories at once: one world each behind one root URL, ids unique across them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx
import pytest

from sheriff.ci.treeherder import Treeherder
from sheriff.sim.multi import is_multi, load_multi
from sheriff.sim.scenario import ScenarioError
from sheriff.sim.server import SimServer
from sheriff.triage.simrun import play_with_outcomes, scenarios_of

TWO = Path(__file__).parent / "two-repositories.yaml"


def test_the_file_lists_repositories_each_with_its_own_seed() -> None:
    assert is_multi(TWO)
    name, scenarios = load_multi(TWO)
    assert name == "two-repositories"
    assert [s.repository for s in scenarios] == ["autoland", "mozilla-central"]
    assert scenarios[0].seed != scenarios[1].seed and scenarios[1].pushes == 4


def test_a_bad_entry_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nrepositories:\n  - {scenario: small, repository: a}\n"
        "  - {scenario: small, repository: a}\n"
    )
    with pytest.raises(ScenarioError, match="listed twice"):
        load_multi(bad)
    bad.write_text("name: x\nrepositories:\n  - {scenario: small, repository: a, pushes: -1}\n")
    with pytest.raises(ScenarioError, match="pushes"):
        load_multi(bad)


def test_every_request_is_answered_by_its_repositorys_world() -> None:
    with SimServer(TWO) as sim:
        sim.advance(120)
        treeherder = Treeherder(sim.root_url)
        client = httpx.Client(base_url=sim.root_url)
        push_ids: set[int] = set()
        job_ids: set[int] = set()
        for world in sim.worlds:
            repo = world.scenario.repository
            pushes = client.get(f"/api/project/{repo}/push/", params={"count": 100}).json()
            assert len(pushes["results"]) == len(world.pushes)
            # One call for all the repository's pushes (`push_id__in`), the same jobs as
            # one call per push.
            together = treeherder.jobs_of_pushes(p["id"] for p in pushes["results"])
            for push in pushes["results"]:
                push_ids.add(push["id"])
                jobs = treeherder.jobs_of_push(push["id"])
                assert all(j["task_id"] in world.tasks for j in jobs)
                assert sorted(j["id"] for j in together[push["id"]]) == sorted(
                    j["id"] for j in jobs
                )
                job_ids.update(j["id"] for j in jobs)
                index = f"gecko.v2.{repo}.revision.{push['revision']}.taskgraph.decision"
                decision = client.get(f"/api/index/v1/task/{index}").json()["taskId"]
                group = client.get(f"/api/queue/v1/task-group/{decision}/list").json()
                assert {t["status"]["taskId"] for t in group["tasks"]} <= set(world.tasks)
        assert len(push_ids) == sum(len(w.pushes) for w in sim.worlds)
        assert len(job_ids) == sum(len(w.jobs) for w in sim.worlds)
        truth = client.get("/__sim__/truth").json()
        assert len(truth["cases"]) == sum(len(w.truth()["cases"]) for w in sim.worlds)
        clock = client.post("/__sim__/advance", params={"minutes": 10}).json()
        assert {w.minutes for w in sim.worlds} == {130.0} and clock["minutes"] == 130.0


def test_sim_run_plays_every_repository() -> None:
    metrics, outcome = play_with_outcomes(TWO, scenarios_of(TWO))
    assert metrics["verdicts"]["pending"] == 0
    assert metrics["cases"] == len(outcome) > 0
    assert metrics["excess_retriggers"] == 0
    _, scenarios = load_multi(TWO)
    # Cases from both repositories: the second world's task ids are its own.
    with SimServer(TWO) as sim:
        sim.advance(600)
        owners = Counter(w.scenario.repository for w in sim.worlds for t in outcome if t in w.tasks)
    assert set(owners) == {s.repository for s in scenarios}
