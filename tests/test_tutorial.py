"""docs/tutorial.md, run as written: its shell blocks, in order, reach the simulator's culprits."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sheriff.sim.scenario import load_scenario
from sheriff.sim.world import World
from tests.conftest import ROOT
from tests.web.conftest import free_port

TUTORIAL = ROOT / "docs" / "tutorial.md"


def _shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, re.M | re.S)


# 31 `sheriff triage` processes in a row (and as many `sheriff sim advance`): about 80 s
# of CPU, more than 100 s of wall time when the machine is shared.
@pytest.mark.timeout(900)
def test_the_tutorial_reaches_the_culprits_sim_run_finds(tmp_path: Path) -> None:
    blocks = _shell_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 5 and any("sheriff triage --live --now" in b for b in blocks)
    # Another port than the tutorial's 8010, which a person may be using right now.
    script = "set -euo pipefail\n" + "\n".join(blocks).replace("8010", str(free_port()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHERIFF_", "TASKCLUSTER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    run = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        start_new_session=True,  # the simulator it starts goes with it if the test fails
    )
    assert run.returncode == 0, (
        run.stdout[-3000:]
        + run.stderr[-3000:]
        + ((tmp_path / "sim.log").read_text()[-2000:] if (tmp_path / "sim.log").exists() else "")
    )
    assert run.stdout.splitlines()[0] == "2026-11-02T08:00:00.000Z"  # as the tutorial says
    passes = [line for line in run.stdout.splitlines() if line.endswith("cases open")]
    assert len(passes) == 31 and all("(sent: " in line for line in passes)
    assert passes[-1].endswith(" 0 cases open")

    truth = World(load_scenario("small")).truth()["regressions"]
    expected = {r["culprit_revision"] for r in truth}
    with sqlite3.connect(tmp_path / "tutorial.db") as db:
        named = {
            revision
            for (revision,) in db.execute(
                "SELECT DISTINCT p.revision FROM backfill_report r "
                "JOIN push p ON p.id = r.culprit_push_id WHERE r.status = 'culprit'"
            )
        }
        still_open = db.execute(
            "SELECT count(*) FROM triage_case WHERE state IN ('new', 'planned', 'waiting')"
        ).fetchone()[0]
    assert named == expected  # every regression's culprit, and no wrong push
    assert still_open == 0
    for revision in expected:  # `sheriff backfill status` shows them to the person
        assert revision[:12] in run.stdout
