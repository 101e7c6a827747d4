"""`sheriff sim run`: play a scenario against sheriff and print the metrics as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sheriff.cli.sim import sim_app


@sim_app.command("run")
def run(
    scenario: Path = typer.Option(..., "--scenario", help="Scenario file (YAML or JSON)."),
    policy: str = typer.Option(None, "--policy", help="Verdict policy (default: setting)."),
    backfill: str = typer.Option(
        None,
        "--backfill",
        help="Backfill strategy: linear|bisect|flake-aware|off (default: setting).",
    ),
    json_out: Path = typer.Option(None, "--json", help="Also write the metrics to this file."),
    database: str = typer.Option(
        None,
        "--database",
        help="Keep sheriff's store at this database URL for a look afterwards "
        "(default: a throwaway SQLite file).",
    ),
) -> None:
    """Play SCENARIO end to end (simulator over HTTP + sheriff) and print its metrics."""
    from sheriff.cli._progress import scenario_progress
    from sheriff.config import settings
    from sheriff.errors import InputError
    from sheriff.sim.scenario import load_scenario
    from sheriff.triage.engine import backfill_settings_of, policy_named
    from sheriff.triage.simrun import play, require_empty_store

    # Bad input fails here, in one line, before any progress bar or file.
    load_scenario(scenario)
    policy_named(policy or settings().policy, settings())
    backfill_settings_of(settings(), backfill)
    if database is not None:
        require_empty_store(database).dispose()
    if json_out is not None and (json_out.is_dir() or not json_out.parent.is_dir()):
        # Found only after the play, the metrics of minutes of play would be lost.
        raise InputError(f"{json_out}: --json needs a file in an existing folder")
    chosen = policy or settings().policy
    with scenario_progress(f"playing {scenario.name} ({chosen})") as update:
        metrics = play(
            scenario, policy=chosen, backfill=backfill, database_url=database, progress=update
        )
    text = json.dumps(metrics, indent=2)
    typer.echo(text)  # first: a file that cannot be written still leaves them shown
    if json_out is not None:
        json_out.write_text(text + "\n")
