"""`sheriff triage`, `sheriff sim run` and `sheriff demo` as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from sheriff.sim.scenario import load_scenario
from sheriff.sim.server import SimServer
from tests.loopback import scripted_server
from tests.triage.conftest import TINY

SHERIFF = [sys.executable, "-m", "sheriff"]


def _run(args, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TASKCLUSTER_", "SHERIFF_"))
    }
    full_env.update({"SHERIFF_DATABASE_URL": f"sqlite:///{cwd / 'sheriff.db'}", **env})
    return subprocess.run(
        [*SHERIFF, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600
    )


def test_triage_dry_run_against_the_simulator(tmp_path: Path) -> None:
    with SimServer(load_scenario(TINY), port=0) as sim:
        sim.advance(minutes=90)
        env = {"TASKCLUSTER_ROOT_URL": sim.root_url, "SHERIFF_TREEHERDER_URL": sim.root_url}
        start = (sim.now.replace(hour=0)).isoformat()
        args = ["triage", "--repo", "autoland", "--from", start, "--to", sim.now.isoformat()]
        result = _run(args, tmp_path, **env)
        assert result.returncode == 0, result.stderr
        assert "autoland: 6 pushes" in result.stdout and "dry run" in result.stdout
        assert sim.world.action_counts() == []  # nothing was sent

        live = _run([*args, "--live"], tmp_path, **env)
        assert live.returncode == 1
        assert live.stderr.strip().count("\n") == 0 and "TASKCLUSTER_CLIENT_ID" in live.stderr


def test_triage_rejects_a_bad_window_in_one_line(tmp_path: Path) -> None:
    for args in (["triage", "--since", "soon"], ["triage", "--from", "2026-01-01"]):
        result = _run(args, tmp_path)
        assert result.returncode != 0
        assert result.stderr.startswith("sheriff: error: ") and "Traceback" not in result.stderr


def test_sim_run_prints_the_metrics_and_keeps_the_store_when_asked(tmp_path: Path) -> None:
    out, kept = tmp_path / "metrics.json", tmp_path / "kept.db"
    args = ["sim", "run", "--scenario", str(TINY), "--database", f"sqlite:///{kept}"]
    result = _run([*args, "--json", str(out)], tmp_path)
    assert result.returncode == 0, result.stderr
    metrics = json.loads(out.read_text())
    assert json.loads(result.stdout) == metrics
    assert metrics["scenario"] == "tiny" and metrics["verdicts"]["pending"] == 0
    assert metrics["excess_retriggers"] == 0
    # Every wrong verdict is listed, one row each, and the precision agrees with them.
    wrong = metrics["wrong_verdicts"]
    assert all((w["verdict"] == "regression") != (w["truth"] == "regression") for w in wrong)
    false_regressions = sum(w["verdict"] == "regression" for w in wrong)
    predicted = metrics["verdicts"]["regression"]
    assert false_regressions == round(predicted * (1 - metrics["precision"]))
    per_case = metrics["http_requests_per_eligible_case"]
    for service, count in metrics["http_requests"].items():
        assert count > 0 and per_case[service] == round(count / metrics["eligible"], 2)
    with sqlite3.connect(kept) as conn:
        decided = conn.execute("SELECT count(*) FROM triage_case WHERE state = 'decided'")
        assert decided.fetchone()[0] == metrics["cases"]
    # The regressions of the kept store, as a user lists them: tiny.yaml has one.
    listed = _run(["regressions", "--json"], tmp_path, SHERIFF_DATABASE_URL=f"sqlite:///{kept}")
    assert listed.returncode == 0, listed.stderr
    [regression] = json.loads(listed.stdout)
    assert regression["culprit"]["revision"] and regression["cases"]
    assert metrics["load"]["alerts"]["true_regressions_alerted"] == 1
    table = _run(["regressions", "--open"], tmp_path, SHERIFF_DATABASE_URL=f"sqlite:///{kept}")
    assert table.returncode == 0 and "regressions (" in table.stdout
    # A second play would mix two histories in one store: refused in one line.
    again = _run(args, tmp_path)
    assert again.returncode != 0 and "already holds pushes" in again.stderr
    assert again.stderr.strip().count("\n") == 0


def test_a_killed_sim_run_leaves_no_simulator_behind(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from sheriff.triage.simrun import SimProcess\n"
        "with SimProcess(Path(sys.argv[1])) as sim:\n"
        "    print(sim._process.pid, flush=True)\n"
        "    time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(TINY)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)  # no chance to clean up
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.2)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reaps it if it is our zombie
    except ChildProcessError:
        pass  # not our child (reparented): ask the kernel
    else:
        if waited:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_demo_prints_a_report_and_leaves_its_database(tmp_path: Path) -> None:
    result = _run(["demo", "--scenario", str(TINY)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Failed test runs (cases): " in result.stdout
    assert "precision" in result.stdout and "What to run next" in result.stdout
    assert "policy 'history'" in result.stdout  # the default
    assert "sheriff demo --policy seed" in result.stdout
    assert (tmp_path / "sheriff-demo.db").exists()


def test_a_bad_scenario_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.read_text().replace("pushes: 6", "pushes: many"))
    result = _run(["sim", "run", "--scenario", str(bad)], tmp_path)
    assert result.returncode != 0 and "pushes" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_an_outage_past_the_retry_budget_is_one_line(tmp_path: Path) -> None:
    with scripted_server() as treeherder:
        treeherder.script = [(503, {}, {"Retry-After": "1"})] * 10
        env = {
            "SHERIFF_TREEHERDER_URL": treeherder.url,
            "TASKCLUSTER_ROOT_URL": treeherder.url,
            "SHERIFF_HTTP_RETRY_BUDGET_SECONDS": "1.5",
        }
        started = time.monotonic()
        result = _run(["triage", "--repo", "autoland", "--since", "1h"], tmp_path, **env)
    assert time.monotonic() - started < 20
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith("sheriff: error: Treeherder /api/project/autoland/push/: HTTP 503")
    assert "gave up after 2 attempts" in line and "retry budget of 1.5 s" in line
