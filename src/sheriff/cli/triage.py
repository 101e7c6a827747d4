"""`sheriff triage`: the cron-like pass over a window of pushes (SPEC §3)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import typer

from sheriff.cli._times import parse_duration, parse_time
from sheriff.cli.app import app
from sheriff.errors import ConfigError, InputError, ServiceError


@app.command("triage")
def triage(
    repo: str = typer.Option(None, "--repo", help="Repository (default: the first configured)."),
    since: str = typer.Option("6h", "--since", help="Window: pushes of the last DURATION."),
    from_: str = typer.Option(None, "--from", help="Window start (ISO 8601), with --to."),
    to: str = typer.Option(None, "--to", help="Window end (ISO 8601), with --from."),
    live: bool = typer.Option(
        False,
        "--live",
        help="Send retriggers (needs Taskcluster credentials); write back to Treeherder "
        "with SHERIFF_TREEHERDER_TOKEN, and send alerts on the configured channels.",
    ),
    once: bool = typer.Option(
        False, "--once", help="One pass, then exit (what happens without --every)."
    ),
    every: str = typer.Option(None, "--every", help="Repeat a pass every DURATION."),
    policy: str = typer.Option(None, "--policy", help="Verdict policy (default: setting)."),
    now_: str = typer.Option(
        None,
        "--now",
        help="The current time (ISO 8601) for this pass: CI's clock when it is not the "
        "wall clock, e.g. the simulator's virtual time. Every comparison uses it.",
    ),
) -> None:
    """Advance every open case: ingest what changed, retrigger what is needed, decide."""
    from sheriff.ci.retry import policy_from_settings
    from sheriff.ci.taskcluster import clients_from_settings
    from sheriff.ci.treeherder import Treeherder
    from sheriff.config import settings
    from sheriff.store.db import open_database
    from sheriff.triage.engine import Triage, policy_named

    config = settings()
    policy_named(policy or config.policy, config)  # refused before anything is created
    if (from_ is None) != (to is None):
        raise InputError("--from and --to go together")
    if once and every:
        raise InputError("--once and --every exclude each other")
    if now_ is not None and every:
        raise InputError("--now and --every exclude each other (a fixed clock does not move)")
    fixed_now = parse_time(now_) if now_ is not None else None
    if live and not config.has_taskcluster_credentials:
        raise ConfigError(
            "--live needs TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN; "
            "without them triage runs dry"
        )
    window = parse_duration(since)
    start, end = (parse_time(from_), parse_time(to)) if from_ else (None, None)
    interval = parse_duration(every) if every else None
    engine = open_database(config.database_url)
    clients = clients_from_settings(config)
    treeherder = Treeherder(config.treeherder_url, policy=policy_from_settings(config))
    runner = Triage(
        engine,
        config,
        clients,
        treeherder,
        repo=repo or config.repositories[0],
        live=live,
        policy=policy,
    )
    from rich.console import Console

    console = Console(stderr=True)
    while True:
        now = fixed_now or datetime.now(UTC)
        try:
            with console.status("triage pass…") as status:
                summary = runner.run_pass(
                    since=start or now - window,
                    until=end or now,
                    now=now,
                    progress=lambda message: status.update(f"triage: {message}"),
                )
        except ServiceError as exc:
            if interval is None:
                raise
            # Repeating: an outage costs this pass only; the next one picks up from the store.
            typer.echo(f"sheriff: error: {exc} (next pass in {every})", err=True)
            time.sleep(interval.total_seconds())
            continue
        decided = ", ".join(f"{n} {v}" for v, n in sorted(summary.decided.items())) or "none"
        typer.echo(
            f"{now:%Y-%m-%d %H:%M:%S}Z {runner.repo}: {summary.pushes} pushes, "
            f"{summary.groups_listed} task groups listed, {summary.cases_opened} cases opened, "
            f"decided: {decided}; {summary.retriggers_asked} retriggers asked "
            f"({'sent' if live else 'dry run'}: "
            f"{summary.requests_sent if live else summary.requests_dry_run} requests); "
            f"{summary.classifications_sent} classifications and {summary.alerts_sent} alerts "
            f"sent; {summary.open_cases} cases open"
            + (
                f"; {summary.budget_limited} cases held to a budget"
                if summary.budget_limited
                else ""
            )
        )
        for deferred in summary.deferred:
            typer.echo(f"sheriff: warning: not read, asked again next pass: {deferred}", err=True)
        if interval is None:
            return
        time.sleep(interval.total_seconds())
