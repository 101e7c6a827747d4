"""`sheriff backfill`: backfill reports, their status, and manual backfill requests.

`sheriff backfill TASK_ID …` is short for `sheriff backfill request TASK_ID …`: a first
argument that is not a subcommand is taken as a task id.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import typer

from sheriff.cli._times import parse_time
from sheriff.cli.app import Alphabetical, app


class _TaskIdIsRequest(Alphabetical):
    """Routes `backfill TASK_ID` to `backfill request TASK_ID`."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["request", *args]
        return super().resolve_command(ctx, args)


backfill_app = typer.Typer(
    cls=_TaskIdIsRequest,
    help="Backfills: find the push that caused a regression. "
    "`sheriff backfill TASK_ID` requests one by hand.",
    no_args_is_help=True,
)
app.add_typer(backfill_app, name="backfill")

LIVE_HELP = "Really send (needs TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN)."
NOW_HELP = "The current time (ISO 8601), when CI's clock is not the wall clock (a simulator)."


def _engine() -> Any:
    from sheriff.config import settings
    from sheriff.store.db import open_database

    return open_database(settings().database_url)


def _settings() -> Any:
    from sheriff.backfill.settings import from_settings
    from sheriff.config import settings

    return from_settings(settings())


@backfill_app.command("status")
def status(
    repo: str | None = typer.Option(None, "--repo", help="Only this repository."),
    state: str | None = typer.Option(
        None, "--status", help="Only reports in this status: open, culprit or failed."
    ),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many reports."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Backfill reports, newest first: what regressed, the search so far, the culprit."""
    from rich.table import Table

    from sheriff.backfill.status import reports
    from sheriff.cli._progress import table_console
    from sheriff.errors import InputError

    if state is not None and state not in ("open", "culprit", "failed"):
        raise InputError(f"unknown report status {state!r}; known: open, culprit, failed")
    engine = _engine()
    try:
        with engine.connect() as conn:
            found = reports(conn, repository_name=repo, status=state, limit=limit)
    finally:
        engine.dispose()
    if as_json:
        typer.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    table = Table(title=f"backfill reports ({len(found)})")
    for column in ("id", "push", "label", "strategy", "status"):
        table.add_column(column, overflow="fold")
    table.add_column("culprit", no_wrap=True, min_width=12)
    for column in ("runs", "record"):
        table.add_column(column, overflow="fold")
    for report in found:
        records = report["records"]
        runs = sum(r["runs_failed"] + r["runs_successful"] for r in records)
        record = records[0] if records else {}
        table.add_row(
            str(report["id"]),
            f"{report['repository']} {report['revision'][:12]}",
            report["label"],
            report["strategy"] + ("" if report["same_manifests"] else " (by label)"),
            report["status"],
            (report["culprit_revision"] or "")[:12] or (report["reason"] or ""),
            str(runs),
            f"{record.get('status', '')} · {record.get('iterations', 0)} rounds"
            + (f" · {record['reason']}" if record.get("reason") else ""),
        )
    table_console().print(table)


@backfill_app.command("request")
def request(
    task_id: str = typer.Argument(..., help="Task id of the failed run to backfill."),
    depth: int = typer.Option(
        None, "--depth", min=1, max=25, help="How many earlier pushes (default: setting, 19)."
    ),
    same_manifests: bool = typer.Option(
        None,
        "--same-manifests/--by-label",
        help="Backfilled runs run the task's own manifests (`backfill-task` with "
        "test_manifests), so dynamic chunking cannot hide the failure; or, --by-label, "
        "whatever the label runs on each push (default: setting, same manifests).",
        show_default=False,
    ),
    strategy: str = typer.Option(
        None, "--strategy", help="linear, bisect or flake-aware (default: setting, bisect)."
    ),
    live: bool = typer.Option(False, "--live", help=LIVE_HELP),
    now_: str = typer.Option(None, "--now", help=NOW_HELP),
) -> None:
    """Backfill a task by hand: open a manual report and send its first backfill.

    A task sheriff has ingested gets a report that follows it to its culprit; any other
    task is handed to the actions' own backfill request.
    """
    from sheriff.backfill import advance_record, request_backfill
    from sheriff.backfill.engine import BackfillSummary
    from sheriff.backfill.settings import STRATEGIES
    from sheriff.errors import InputError
    from sheriff.store.schema import backfill_record, job
    from sheriff.store.schema.base import is_slugid

    if not is_slugid(task_id):
        raise InputError(
            f"{task_id!r} is not a task id (a slugid: 22 URL-safe base64 characters) "
            "nor a subcommand"
        )
    settings = _settings()  # the documented defaults: SHERIFF_BACKFILL_*
    strategy = strategy or settings.strategy
    same_manifests = settings.same_manifests if same_manifests is None else same_manifests
    depth = depth or settings.depth
    if strategy not in STRATEGIES:
        known = ", ".join(sorted(STRATEGIES))
        raise InputError(f"unknown backfill strategy {strategy!r}; known: {known}")
    import sqlalchemy as sa

    engine = _engine()
    try:
        with engine.connect() as conn:
            known = conn.execute(sa.select(job.c.id).where(job.c.task_id == task_id)).first()
        if known is None:
            _actions_request(task_id, depth=depth, same_manifests=same_manifests, live=live)
            return
        now = parse_time(now_) if now_ else datetime.now(UTC)
        with engine.begin() as conn:
            report_id = request_backfill(
                conn,
                task_id,
                now,
                strategy=strategy,
                depth=depth,
                same_manifests=same_manifests,
                settings=settings,
            )
            record_id = conn.execute(
                sa.select(backfill_record.c.id).where(backfill_record.c.report_id == report_id)
            ).scalar_one()
        from sheriff.actions.log import enqueue
        from sheriff.cli.actions import _protocol

        summary = BackfillSummary()
        state = advance_record(
            engine,
            record_id,
            now=now,
            enqueue=enqueue,
            observe=None,
            settings=settings,
            summary=summary,
            task_definition=_protocol(live).task,
        )
        sent = _dispatch(engine, record_id, live=live, now=now)
    finally:
        engine.dispose()
    typer.echo(
        f"backfill report {report_id}: record {record_id} {state}; "
        f"{summary.requests} request(s) queued, {sent}"
    )


def _dispatch(engine: Any, record_id: int, *, live: bool, now: datetime) -> str:
    """Send (or, without --live, dry-run) this record's queued requests."""
    import sqlalchemy as sa

    from sheriff.actions import log
    from sheriff.store.schema import action_request

    with engine.connect() as conn:
        keys = list(
            conn.execute(
                sa.select(action_request.c.idempotency_key).where(
                    action_request.c.idempotency_key.like(f"backfill:{record_id}:%"),
                    action_request.c.state == log.REQUESTED,
                )
            ).scalars()
        )
    if not keys:
        return "nothing to send"
    from sheriff.cli.actions import _protocol
    from sheriff.config import settings

    lease = log.lease_of(settings())
    results = log.dispatch(
        engine, _protocol(live), dry_run=not live, keys=keys, lease=lease, now=now
    )
    states = sorted({row.state for row in results})
    verb = "sent" if live else "dry run (add --live to send)"
    return f"{verb}: {len(results)} request(s) now {', '.join(states) or 'unchanged'}"


def _actions_request(task_id: str, *, depth: int, same_manifests: bool, live: bool) -> None:
    """A task sheriff has not ingested: the actions' own backfill request, nothing tracked."""
    from sheriff.cli.actions import backfill_request

    backfill_request(
        task_id=task_id, depth=depth, times=1, same_manifests=same_manifests, live=live, key=None
    )


@backfill_app.command("advance")
def advance(
    live: bool = typer.Option(False, "--live", help=LIVE_HELP),
    now_: str = typer.Option(None, "--now", help=NOW_HELP),
) -> None:
    """Move every open backfill one step and send what it asks for (a triage pass does this)."""
    from sheriff.backfill import advance_backfills
    from sheriff.cli.actions import _protocol

    now = parse_time(now_) if now_ else datetime.now(UTC)
    settings = _settings()
    engine = _engine()
    try:
        summary = advance_backfills(
            engine, now=now, settings=settings, task_definition=_protocol(live).task
        )
        record_ids = _open_record_ids(engine)
        sent = [_dispatch(engine, record_id, live=live, now=now) for record_id in record_ids]
    finally:
        engine.dispose()
    typer.echo(json.dumps({**summary.as_dict(), "dispatch": sent}, indent=2))


def _open_record_ids(engine: Any) -> list[int]:
    import sqlalchemy as sa

    from sheriff.store.schema import backfill_record

    with engine.connect() as conn:
        return list(conn.execute(sa.select(backfill_record.c.id)).scalars())
