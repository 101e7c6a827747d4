"""Scenario files: every field accepted, a bad one rejected with one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sheriff.errors import SheriffError
from sheriff.sim.scenario import BUNDLED, ScenarioError, load_scenario, parse_scenario
from sheriff.sim.world import World
from tests.sim.conftest import tiny_data


def test_example_scenarios_load(scenarios_dir: Path) -> None:
    small = load_scenario(scenarios_dir / "small.yaml")
    day = load_scenario(scenarios_dir / "autoland-day.yaml")
    assert small.pushes == 30 and small.flakiness.known_bug_fraction == 0.7
    assert day.dynamic_chunking and day.treeherder.parse_failure_rate == 0.01


def test_json_and_yaml_give_the_same_scenario(tmp_path: Path, small_path: Path) -> None:
    import yaml

    as_json = tmp_path / "small.json"
    as_json.write_text(json.dumps(yaml.safe_load(small_path.read_text())))
    assert load_scenario(as_json) == load_scenario(small_path)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"pushes": "many"}, "pushes: Input should be a valid integer"),
        ({"colour": "red"}, "colour: unknown field"),
        ({"regressions": [{"push": 99}]}, "regressions.0.push: 99 is not a push index"),
        ({"flakiness": {"rate": {"a": 1, "b": 2, "c": 2}}}, "flakiness.rate.c: unknown field"),
        ({"infra_failure_rate": 2}, "infra_failure_rate: Input should be less than or equal to 1"),
        ({"regressions": [{"push": 1, "platforms": ["vax"]}]}, "unknown platform vax"),
    ],
)
def test_a_bad_field_is_one_clear_line(change: dict, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(tiny_data(**change), "bad.yaml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("bad.yaml: ")
    assert expected in message


def test_a_missing_field_and_bad_suite_are_named() -> None:
    data = tiny_data()
    del data["seed"]
    with pytest.raises(ScenarioError, match="seed: Field required"):
        parse_scenario(data)
    data = tiny_data()
    data["suites"][0]["chunks"] = "x"
    with pytest.raises(ScenarioError, match=r"suites\.0\.chunks"):
        parse_scenario(data)


def test_regression_test_paths_must_exist() -> None:
    with pytest.raises(ScenarioError, match=r"^x: regressions\.0\.tests: no such test no/such"):
        parse_scenario(tiny_data(regressions=[{"push": 1, "tests": ["no/such/test.js"]}]), "x")
    tree = World(parse_scenario(tiny_data())).catalog
    chosen = sorted(tree.test_manifest)[:2]
    scenario = parse_scenario(tiny_data(regressions=[{"push": 1, "tests": chosen}]))
    regressed = World(scenario).catalog.regressed[0]
    assert sorted(t for tests in regressed.values() for t in tests) == chosen


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(SheriffError, match="not valid YAML/JSON"):
        load_scenario(broken)
    with pytest.raises(SheriffError, match="cannot read scenario"):
        load_scenario(tmp_path / "absent.yaml")
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n")
    with pytest.raises(SheriffError, match="must be a mapping"):
        load_scenario(listing)


def test_cli_rejects_a_bad_scenario_with_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(tiny_data(pushes=0)))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from sheriff.cli import main; main()",
            "sim",
            "serve",
            "--scenario",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"sheriff: error: {bad}: pushes: Input should be greater than or equal to 1"
    ]


def test_the_bundled_demo_scenario_loads() -> None:
    from importlib import resources

    bundled = resources.files("sheriff.sim") / "scenarios" / "small.yaml"
    scenario = load_scenario(str(bundled))
    assert scenario.pushes >= 10 and scenario.regressions


def test_bundled_scenarios_are_addressable_by_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing of that name here: the bundled file is meant
    assert load_scenario("autoland-day").name == load_scenario("autoland-day.yaml").name
    assert load_scenario("small").pushes == load_scenario(BUNDLED / "small.yaml").pushes
    (tmp_path / "small").write_text("name: mine\n")  # an existing path wins over a name
    with pytest.raises(SheriffError, match="small: seed: Field required"):
        load_scenario("small")
    with pytest.raises(SheriffError, match=r"cannot read scenario.*autoland-day, small"):
        load_scenario("nope")
