"""`sheriff listen` and `sheriff worker`: the service (docs/service.md)."""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from sheriff.cli.app import app
from sheriff.errors import ConfigError

if TYPE_CHECKING:
    from sheriff.config import Settings


def _service_settings(live: bool = False) -> Settings:
    from sheriff.config import settings

    config = settings()
    if not config.database_url.startswith("postgresql"):
        raise ConfigError(
            "the service needs PostgreSQL: set SHERIFF_DATABASE_URL=postgresql://… "
            f"(not {config.database_url})"
        )
    if live and not config.has_taskcluster_credentials:
        raise ConfigError("--live needs TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN")
    if not config.watched_repositories:
        raise ConfigError("no repository to watch: every [repository.<name>] is disabled")
    for repo in config.watched_repositories:
        config.for_repository(repo)  # a bad per-repository value is refused before starting
    return config


@app.command("listen")
def listen(
    batch_seconds: float = typer.Option(
        0.5, "--batch-seconds", min=0.01, help="Hand Pulse messages to the workers this often."
    ),
) -> None:
    """Consume Taskcluster's Pulse task exchanges for the watched repositories; hand each
    batch to the workers (Celery), then acknowledge it. Runs until interrupted."""
    import logging

    from sheriff.service.listen import listen as run

    config = _service_settings()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s listen %(message)s")
    logging.getLogger("sheriff").setLevel(logging.INFO)
    typer.echo(
        f"listening on {config.pulse_queue} for {', '.join(config.watched_repositories)}",
        err=True,
    )
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # The batch at hand is handed over and acknowledged first; then the listener ends.
        signal.signal(signum, lambda *_: stopping.set())
    stats = run(config, batch_seconds=batch_seconds, stop=lambda _: stopping.is_set())
    typer.echo(
        f"stopped: {stats.messages} messages, {stats.handed} tasks handed over, "
        f"{stats.refused} refused",
        err=True,
    )


@app.command("worker")
def worker(
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Processes of this worker."),
    beat: bool = typer.Option(
        False, "--beat", help="Also schedule the catch-up passes (run one per deployment)."
    ),
    live: bool = typer.Option(False, "--live", help="Send actions (needs credentials)."),
    loglevel: str = typer.Option("WARNING", "--loglevel", help="Celery's log level."),
) -> None:
    """Run Celery tasks: store runs, open and advance cases, retrigger, observe Treeherder,
    advance backfills. Any number of workers on any number of machines share the work."""
    config = _service_settings(live)
    from sheriff.service import tasks

    tasks.LIVE["live"] = live
    argv = [
        "worker",
        f"--loglevel={loglevel}",
        "--queues",
        config.celery_queue,
        f"--concurrency={concurrency}",
        "--pool",
        "solo" if concurrency == 1 else "prefork",
        "--hostname",
        f"sheriff-{os.getpid()}@{socket.gethostname()}",
        "--without-gossip",
        "--without-mingle",
    ]
    if beat:
        schedule = Path(tempfile.gettempdir()) / f"sheriff-beat-{config.celery_queue}"
        argv += ["--beat", "--schedule", str(schedule)]
    tasks.app.worker_main(argv)
