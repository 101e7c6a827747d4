"""The family of worlds (`sheriff sim worlds`) and the simulator behaviours it draws on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sheriff.model.failure_lines import normalise_failure_line
from sheriff.sim import artifacts
from sheriff.sim.catalog import render_message
from sheriff.sim.entities import INFRA_NO_SUMMARY, INFRA_STORM
from sheriff.sim.family import draw_family, draw_world
from sheriff.sim.scenario import ScenarioError, parse_scenario
from sheriff.sim.world import World
from tests.sim.conftest import tiny_data

SIM_WORLDS = [sys.executable, "-m", "sheriff", "sim", "worlds"]


def test_worlds_are_valid_deterministic_and_different() -> None:
    worlds = draw_family(5, 12)
    assert [w.model_dump() for w in worlds] == [w.model_dump() for w in draw_family(5, 12)]
    assert len({w.seed for w in worlds}) == 12
    assert draw_world(5, 0) != draw_world(6, 0)
    for world in worlds:
        assert 30 <= world.pushes <= 70
        assert 0.003 <= world.flakiness.fraction_flaky <= 0.05
        rate = world.flakiness.rate
        assert 0.02 <= rate.a / (rate.a + rate.b) <= 0.30
        assert 0.2 <= world.flakiness.known_bug_fraction <= 0.9
        assert 2 <= len(world.regressions) <= 6
        for r in world.regressions:
            assert 3 <= r.push <= world.pushes - 3 and 0.1 <= r.fail_rate <= 1.0
        # No larger than a third of autoland-day's ~38,600 test tasks.
        chunks = sum(s.chunks for s in world.suites)
        assert world.pushes * chunks * len(world.platforms) <= 38_600 / 3


def test_the_family_covers_every_kind_of_world() -> None:
    worlds = draw_family(7, 30)
    regressions = [r for w in worlds for r in w.regressions]
    assert {r.failure for r in regressions} == {"same", "new", "crash", "timeout"}
    assert any(w.storms and w.storms[0].errorsummary for w in worlds)
    assert any(w.storms and not w.storms[0].errorsummary for w in worlds)
    assert any(
        any(abs(a.push - b.push) == 1 for a in w.regressions for b in w.regressions) for w in worlds
    )
    assert any(isinstance(r.tests, list) for r in regressions)  # flaky tests that regress
    assert any(r.fixed_at is None for r in regressions) and any(r.fixed_at for r in regressions)


def test_cli_writes_scenario_files_sim_run_accepts(tmp_path: Path) -> None:
    out = tmp_path / "worlds"
    done = subprocess.run(
        [*SIM_WORLDS, "--count", "3", "--seed", "9", "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    paths = [Path(p) for p in done.stdout.split()]
    assert [p.name for p in paths] == [f"world-9-{i}.yaml" for i in range(3)]
    for i, path in enumerate(paths):
        assert parse_scenario(yaml.safe_load(path.read_text())) == draw_family(9, 3)[i]
    bad = tmp_path / "file"
    bad.write_text("")
    refused = subprocess.run(
        [*SIM_WORLDS, "--count", "1", "--seed", "1", "--out", str(bad)],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and refused.stderr.strip().count("\n") == 0
    assert "not a folder" in refused.stderr


def _storm_world(errorsummary: bool) -> World:
    data = tiny_data(
        infra_failure_rate=0.0,
        storms=[
            {
                "start_minutes": 0,
                "minutes": 30,
                "task_queue_id": "gecko-t/win11-64-24h2",
                "failure_rate": 1.0,
                "errorsummary": errorsummary,
            }
        ],
    )
    world = World(parse_scenario(data))
    world.advance(300)
    return world


@pytest.mark.parametrize("errorsummary", [True, False])
def test_a_storm_fails_its_pool_for_its_time_only(errorsummary: bool) -> None:
    world = _storm_world(errorsummary)
    truth = world.truth()
    assert truth["storms"][0]["errorsummary"] is errorsummary
    kind = INFRA_STORM if errorsummary else INFRA_NO_SUMMARY
    for task in world.tasks.values():
        if task.kind != "test":
            continue
        run = task.runs[0]
        stormy = task.label.startswith("test-windows") and run.scheduled < 30
        assert (run.outcome.infra == kind) is stormy, task.label
        if stormy:
            assert truth["cases"][task.task_id]["truth"] == "infra"
            listed = artifacts.errorsummary_listed(world, task, run)
            assert listed is errorsummary
            if errorsummary:
                records = [
                    json.loads(line)
                    for line in artifacts.errorsummary(world, task, run).splitlines()
                ]
                assert not [r for r in records if r["action"] == "test_result"]
                assert {r["status"] for r in records if r["action"] == "group_result"} == {"ERROR"}


def test_a_storm_on_a_pool_no_platform_uses_is_refused() -> None:
    storm = {"start_minutes": 0, "minutes": 30, "task_queue_id": "gecko-t/nowhere"}
    with pytest.raises(ScenarioError, match=r"storms\.0\.task_queue_id"):
        parse_scenario(tiny_data(storms=[storm]))


def _lines_of(world: World, regression: int) -> list[artifacts.FailureLine]:
    found = []
    for task in world.tasks.values():
        for run in task.runs:
            if run.resolved is None or task.kind != "test":
                continue
            if any(f.regression == regression for f in run.outcome.failures):
                found += artifacts.failure_lines(world, task, run)
    return found


def _regressed_world(failure: str, flaky_test: bool = False) -> tuple[World, str]:
    data = tiny_data(flakiness={"fraction_flaky": 0.3, "rate": {"a": 3, "b": 7}})
    world = World(parse_scenario(data))
    test = sorted(world.catalog.flaky_tests if flaky_test else world.catalog.test_manifest)[0]
    regression = {"push": 2, "tests": [test], "fail_rate": 1.0, "failure": failure}
    world = World(parse_scenario({**data, "regressions": [regression]}))
    world.advance(300)
    return world, test


def test_a_flaky_test_that_regresses_with_a_new_line_shows_another_line() -> None:
    world, test = _regressed_world("new", flaky_test=True)
    own, new = world.catalog.failure_mode(test), world.catalog.failure_of(test, 0)
    flake = render_message(own, world.seed, "any", 0, test)
    flake_line = normalise_failure_line(f"TEST-UNEXPECTED-{own.status} | {test} | {flake}")
    lines = [line.text for line in _lines_of(world, 0) if line.test == test]
    assert lines and new.template != own.template
    assert all(line.startswith(f"TEST-UNEXPECTED-{new.status} | {test} | ") for line in lines)
    assert all(normalise_failure_line(line) != flake_line for line in lines)
    assert world.truth()["regressions"][0]["flaky_tests"] == [test]
    # `same`: the test's own line, the one its flakes show.
    same, test = _regressed_world("same", flaky_test=True)
    own = same.catalog.failure_mode(test)
    flake = render_message(own, same.seed, "any", 0, test)
    flake_line = normalise_failure_line(f"TEST-UNEXPECTED-{own.status} | {test} | {flake}")
    lines = [line.text for line in _lines_of(same, 0) if line.test == test]
    assert lines and all(normalise_failure_line(line) == flake_line for line in lines)


def test_a_new_line_differs_from_the_tests_own_once_normalised() -> None:
    """`failure: new` is a line a sheriff can tell apart: not the test's own message with
    other numbers in it (which normalises to the very same line)."""
    world, _ = _regressed_world("new", flaky_test=True)
    tests = sorted(world.catalog.test_manifest)
    assert len(tests) >= 20

    def line(mode: Any, test: str) -> str:
        message = render_message(mode, world.seed, "any", 0, test)
        return normalise_failure_line(f"TEST-UNEXPECTED-{mode.status} | {test} | {message}")

    for test in tests:
        own, new = world.catalog.failure_mode(test), world.catalog.failure_of(test, 0)
        assert line(new, test) != line(own, test), test


@pytest.mark.parametrize(
    ("failure", "start"),
    [
        ("crash", "PROCESS-CRASH | application crashed [@ "),
        ("timeout", "TEST-UNEXPECTED-TIMEOUT | Last test finished |"),
    ],
)
def test_a_crash_or_timeout_regression_names_no_test(failure: str, start: str) -> None:
    world, test = _regressed_world(failure)
    lines = _lines_of(world, 0)
    anonymous = [line for line in lines if line.test is None]
    assert anonymous and all(line.text.startswith(start) for line in anonymous)
    assert all(test not in line.text for line in lines)
    cases = world.truth()["cases"].values()
    assert any(c["truth"] == "regression" for c in cases)
