"""Simulator fixtures: a small scenario served over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sheriff.sim.scenario import Scenario, parse_scenario
from sheriff.sim.server import SimServer

CLIENT_ID = "sheriff-dev"
ACCESS_TOKEN = "sheriff-dev-token"


def tiny_data(**overrides: Any) -> dict[str, Any]:
    """A scenario small enough to play in well under a second."""
    data: dict[str, Any] = {
        "name": "tiny",
        "seed": 11,
        "repository": "autoland",
        "start": "2026-11-02T08:00:00Z",
        "pushes": 6,
        "push_interval_minutes": 10,
        "platforms": [
            {
                "platform": "linux1804-64-qr",
                "collection": "opt",
                "task_queue_id": "gecko-t/t-linux-large-gcp",
            },
            {
                "platform": "windows11-64-24h2",
                "collection": "debug",
                "task_queue_id": "gecko-t/win11-64-24h2",
            },
        ],
        "suites": [
            {
                "name": "mochitest-browser-chrome",
                "group_symbol": "M",
                "group_name": "Mochitests",
                "symbol": "bc",
                "chunks": 3,
                "manifests": 9,
                "tests_per_manifest": 6,
                "duration_minutes": [20, 30],
            },
            {
                "name": "xpcshell",
                "group_symbol": "X",
                "group_name": "Xpcshell tests",
                "symbol": "X",
                "chunks": 2,
                "manifests": 6,
                "tests_per_manifest": 8,
                "duration_minutes": [10, 15],
            },
        ],
        "flakiness": {
            "fraction_flaky": 0.1,
            "rate": {"a": 2.0, "b": 4.0},
            "known_bug_fraction": 0.5,
        },
        "infra_failure_rate": 0.05,
        "classified_fraction": 0.2,
        "regressions": [
            {"push": 2, "tests": 2, "platforms": "all", "fail_rate": 1.0, "fixed_at": 5}
        ],
        "treeherder": {"ingest_delay_minutes": [1, 2], "parse_delay_minutes": [2, 3]},
    }
    data.update(overrides)
    return data


@pytest.fixture
def tiny() -> Scenario:
    return parse_scenario(tiny_data(), "tiny")


@pytest.fixture
def sim(tiny: Scenario) -> Iterator[SimServer]:
    """A running simulator on the tiny scenario, played until every push's tasks resolved."""
    with SimServer(tiny) as server:
        server.advance(6 * 10 + 60)
        yield server


@pytest.fixture
def tc_options(sim: SimServer) -> dict[str, Any]:
    return {
        "rootUrl": sim.root_url,
        "credentials": {"clientId": CLIENT_ID, "accessToken": ACCESS_TOKEN},
    }


@pytest.fixture
def small_path(scenarios_dir: Path) -> Path:
    return scenarios_dir / "small.yaml"
