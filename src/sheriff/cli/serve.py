"""`sheriff serve`: the REST API and the dashboard over HTTP."""

from __future__ import annotations

import socket
from pathlib import Path

import typer

from sheriff.cli.app import app
from sheriff.cli.demo import DEMO_DATABASE
from sheriff.errors import InputError


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is said or opened: a port in use is
    one line, not uvicorn's traceback after a "serving" message."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def database_to_serve(url: str, chosen: bool, folder: Path) -> tuple[str, str]:
    """The database URL to serve and a note on why: after `sheriff demo`, with no database
    of sheriff's own here and none chosen, the demo's data is what a user wants to see."""
    default = folder / "sheriff.db"
    demo = folder / DEMO_DATABASE
    if not chosen and url == "sqlite:///sheriff.db" and not default.exists() and demo.exists():
        return f"sqlite:///{demo}", f" (the demo's data, {DEMO_DATABASE})"
    return url, ""


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on (0: any free)."),
    workers: int = typer.Option(
        None, min=1, max=64, help="Worker processes (default: SHERIFF_SERVE_WORKERS, else CPUs)."
    ),
) -> None:
    """Serve the REST API (/api, /openapi.json, /docs) and the dashboard (/)."""
    import os

    import uvicorn

    from sheriff.config import settings
    from sheriff.store.db import open_database, redacted

    config = settings()
    url, note = database_to_serve(
        config.database_url, "database_url" in config.model_fields_set, Path.cwd()
    )
    sock = _listen(host, port)
    # Migrate once here, before the workers start (they would only wait on each other).
    open_database(url).dispose()
    # A page of 500 jobs is a few megabytes of JSON: one process serialises one answer at
    # a time (the GIL), so several processes are what lets concurrent readers scale.
    count = workers or config.serve_workers or os.cpu_count() or 1
    os.environ["SHERIFF_DATABASE_URL"] = url  # what each worker opens: the one chosen here
    bound = sock.getsockname()[1]
    typer.echo(
        f"sheriff: serving {redacted(url)}{note} on http://{host}:{bound}/ ({count} workers)"
    )
    try:
        uvicorn.run(
            "sheriff.web.app:app_from_settings",
            factory=True,
            fd=sock.fileno(),
            workers=count,
            log_level="info",
        )
    finally:
        sock.close()
