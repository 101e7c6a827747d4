"""`sheriff serve`: the REST API and the dashboard over HTTP."""

import typer

from sheriff.cli.app import app


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on."),
) -> None:
    """Serve the REST API (/api, /openapi.json) and the dashboard (/)."""
    import uvicorn

    from sheriff.config import settings
    from sheriff.store.db import open_database
    from sheriff.web import create_app

    config = settings()
    engine = open_database(config.database_url)
    typer.echo(f"sheriff: serving {engine.url.render_as_string()} on http://{host}:{port}/")
    uvicorn.run(create_app(engine, config), host=host, port=port, log_level="info")
