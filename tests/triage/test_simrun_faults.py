"""`sim run` on a scenario with faults: played twice, compared, and counted from both sides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sheriff.triage.simrun import play
from tests.triage.conftest import TINY


def test_a_faulty_play_is_compared_with_the_clean_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # While the Treeherder outage lasts the virtual clock stands still in a pass: each
    # read would retry for the whole 30 s budget of wall time. A short budget gives up as
    # surely, sooner.
    monkeypatch.setenv("SHERIFF_HTTP_RETRY_BUDGET_SECONDS", "3")
    data = yaml.safe_load(TINY.read_text())
    # Lost answers to writes are the fault that can send an action twice: reconcile must
    # find the action task that was created and adopt it instead.
    data["faults"] = {
        "services": {"hooks": {"lost_write": 0.5}, "treeherder": {"error": 0.1, "slow": 0.1}},
        "slow_seconds": [0.05, 0.2],
        "treeherder_outages": [{"start_minutes": 40, "minutes": 20}],
    }
    path = tmp_path / "tiny-faults.yaml"
    path.write_text(yaml.safe_dump(data))
    metrics = play(path, policy="seed", backfill="off")
    faults = metrics["faults"]
    assert faults["played"]["outage"] > 0 and faults["played"]["error"] > 0
    assert faults["played"].get("lost_write", 0) > 0
    assert faults["cases_lost"] == 0 and faults["cases_left_open"] == 0
    assert faults["actions_sent_twice"] == 0 and metrics["excess_retriggers"] == 0
    assert faults["tracebacks"] == 0
    assert faults["verdicts_changed"] == len(faults["changed"]) == 0, faults["changed"]
