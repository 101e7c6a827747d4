"""`sheriff demo`: the whole loop on the built-in simulator and a fresh SQLite file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import typer

from sheriff.cli.app import app

DEMO_DATABASE = "sheriff-demo.db"


def bundled_scenario() -> Path:
    return Path(str(resources.files("sheriff.sim") / "scenarios" / "small.yaml"))


@app.command("demo")
def demo(
    scenario: Path = typer.Option(None, "--scenario", help="Scenario (default: bundled small)."),
    policy: str = typer.Option(None, "--policy", help="Verdict policy (default: setting)."),
    database: Path = typer.Option(
        Path(DEMO_DATABASE), "--database", help="SQLite file to create afresh for the demo."
    ),
) -> None:
    """Play a small day of CI on the simulator with sheriff triaging it, then report."""
    from sheriff.cli._progress import scenario_progress
    from sheriff.config import settings
    from sheriff.sim.scenario import load_scenario
    from sheriff.triage.engine import policy_named
    from sheriff.triage.report import render_report
    from sheriff.triage.simrun import play

    path = scenario or bundled_scenario()
    # Bad input fails here, in one line, before the old demo database is removed.
    load_scenario(path)
    chosen = policy or settings().policy
    policy_named(chosen, settings())
    for stale in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        stale.unlink(missing_ok=True)
    url = f"sqlite:///{database.resolve()}"
    with scenario_progress(f"sheriff demo: {path.stem} ({chosen})") as update:
        metrics = play(path, policy=chosen, database_url=url, progress=update)
    typer.echo(render_report(metrics, database))
