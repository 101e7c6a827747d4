"""`sheriff ingest`: load files in Taskcluster's and the decision task's formats."""

from pathlib import Path

import typer

from sheriff.cli.app import Alphabetical, app

ingest_app = typer.Typer(
    cls=Alphabetical,
    help="Load task definitions, Pulse messages and manifest artifacts from files.",
    no_args_is_help=True,
)
app.add_typer(ingest_app, name="ingest")

FILE = typer.Argument(
    ..., exists=True, dir_okay=False, readable=True, help="JSON file (plain or .gz)."
)


def _engine():  # type: ignore[no-untyped-def]
    from sheriff.config import settings
    from sheriff.store.db import open_database

    return open_database(settings().database_url)


def _report(path: Path, stats) -> None:  # type: ignore[no-untyped-def]
    line = (
        f"{path.name}: {stats.jobs_inserted} jobs added, {stats.jobs_updated} updated, "
        f"{stats.jobs_unchanged} unchanged"
    )
    if stats.skipped:
        line += "; skipped " + ", ".join(f"{n} ({why})" for why, n in stats.skipped.items())
    typer.echo(line)


@ingest_app.command("tasks")
def tasks(files: list[Path] = FILE) -> None:
    """Load task definitions keyed by taskId (or a listTaskGroup response); each file is
    all-or-nothing."""
    from sheriff.ingest.files import ingest_tasks

    engine = _engine()
    for path in files:
        _report(path, ingest_tasks(engine, path))


@ingest_app.command("pulse")
def pulse(files: list[Path] = FILE) -> None:
    """Replay Taskcluster queue Pulse messages: update the runs' states and results."""
    from sheriff.ingest.files import ingest_pulse

    engine = _engine()
    for path in files:
        _report(path, ingest_pulse(engine, path))


@ingest_app.command("manifests")
def manifests(
    manifests_by_task: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="manifests-by-task.json(.gz)"
    ),
    tests_by_manifest: Path | None = typer.Argument(
        None, exists=True, dir_okay=False, help="tests-by-manifest.json(.gz)"
    ),
    repo: str = typer.Option(..., "--repo", help="Repository of the push, e.g. autoland."),
    revision: str = typer.Option(..., "--revision", help="The push's revision."),
) -> None:
    """Load a push's decision-task manifest artifacts (what each label runs, each
    manifest's tests)."""
    from sheriff.ingest.files import ingest_manifests

    counts = ingest_manifests(_engine(), repo, revision, manifests_by_task, tests_by_manifest)
    typer.echo(
        f"{repo}/{revision}: {counts['labels']} labels, {counts['manifests']} manifests, "
        f"{counts['tests']} test paths; {counts['jobs_updated']} jobs given manifests"
    )
