"""`sheriff serve`: the REST API and the dashboard over HTTP."""

import typer

from sheriff.cli.app import app


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on."),
    workers: int = typer.Option(
        None, min=1, max=64, help="Worker processes (default: SHERIFF_SERVE_WORKERS, else CPUs)."
    ),
) -> None:
    """Serve the REST API (/api, /openapi.json) and the dashboard (/)."""
    import os

    import uvicorn

    from sheriff.config import settings
    from sheriff.store.db import open_database

    config = settings()
    # Migrate once here, before the workers start (they would only wait on each other).
    engine = open_database(config.database_url)
    where = engine.url.render_as_string()
    engine.dispose()
    # A page of 500 jobs is a few megabytes of JSON: one process serialises one answer at
    # a time (the GIL), so several processes are what lets concurrent readers scale.
    count = workers or config.serve_workers or os.cpu_count() or 1
    typer.echo(f"sheriff: serving {where} on http://{host}:{port}/ ({count} workers)")
    uvicorn.run(
        "sheriff.web.app:app_from_settings",
        factory=True,
        host=host,
        port=port,
        workers=count,
        log_level="info",
    )
