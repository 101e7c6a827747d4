"""`sheriff regressions`: the regression records, one row per breakage (not per case)."""

from __future__ import annotations

import json

import typer

from sheriff.cli.app import app


@app.command("regressions")
def regressions(
    open_only: bool = typer.Option(False, "--open", help="Only those still failing."),
    repo: str | None = typer.Option(None, "--repo", help="Only this repository."),
    limit: int = typer.Option(100, "--limit", min=1, help="At most this many."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Regressions, newest first: failing tests, configurations, culprit, where it stopped."""
    from rich.table import Table

    from sheriff.cli._progress import table_console
    from sheriff.config import settings
    from sheriff.store.db import open_database
    from sheriff.store.regressions import list_regressions

    engine = open_database(settings().database_url)
    try:
        with engine.connect() as conn:
            found = list_regressions(conn, open_only=open_only, repository_name=repo, count=limit)
    finally:
        engine.dispose()
    if as_json:
        typer.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    table = Table(title=f"regressions ({len(found)})")
    for column in ("id", "status", "tests", "configurations", "first failing"):
        table.add_column(column, overflow="fold")
    table.add_column("culprit", overflow="fold", min_width=12)
    for column in ("stopped at", "cases"):
        table.add_column(column, overflow="fold")
    for r in found:
        culprit = r["culprit"]
        table.add_row(
            str(r["id"]),
            r["status"],
            "\n".join(r["tests"]) or "\n".join(r["failure_lines"])[:200],
            ", ".join(r["configurations"]),
            (r["first_push"] or {}).get("revision", "")[:12],
            f"{culprit['revision'][:12]} {culprit['author'] or ''}" if culprit else "",
            (r["stopped_push"] or {}).get("revision", "")[:12],
            str(len(r["cases"])),
        )
    table_console().print(table)
