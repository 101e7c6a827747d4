"""`sheriff cycle`: delete expired data."""

import typer

from sheriff.cli.app import app


@app.command("cycle")
def cycle(
    days: int = typer.Option(120, min=1, help="Delete jobs of pushes more than N days old."),
    chunk_size: int = typer.Option(
        5000, "--chunk-size", min=1, help="Rows deleted per transaction."
    ),
) -> None:
    """Delete jobs older than N days in chunks, then manifests and test paths no job uses."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from sheriff.config import settings
    from sheriff.store import cycle as store_cycle
    from sheriff.store.db import open_database

    engine = open_database(settings().database_url)
    expired = store_cycle.expired_job_count(engine, store_cycle.cutoff_for(days))
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), transient=True
    ) as bar:
        jobs = bar.add_task("expired jobs", total=expired)
        others = bar.add_task("unused rows", total=None)

        def advance(stage: str, rows: int) -> None:
            if stage == "job":
                bar.advance(jobs, rows)
            else:
                bar.update(others, description=f"unused {stage} rows", advance=rows)

        stats = store_cycle.cycle(engine, days=days, chunk_size=chunk_size, progress=advance)
    typer.echo(f"cutoff: {stats.cutoff.isoformat(timespec='seconds')}")
    if not stats.deleted:
        typer.echo("nothing to delete")
    for table, rows in sorted(stats.deleted.items()):
        typer.echo(f"{table}: {rows} deleted")
