"""`sheriff db`: the database schema."""

import typer

from sheriff.cli.app import Alphabetical, app

db_app = typer.Typer(
    cls=Alphabetical, help="Create or upgrade the database schema.", no_args_is_help=True
)
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def upgrade(revision: str = typer.Argument("head", help="Alembic revision to upgrade to.")) -> None:
    """Apply migrations (also done automatically on first use of an empty database)."""
    from sheriff.config import settings
    from sheriff.store import db

    engine = db.open_database(settings().database_url, migrate=False)
    db.upgrade(engine, revision)
    where = engine.url.render_as_string(hide_password=True)
    typer.echo(f"{where}: at {db.current_revision(engine)}")


@db_app.command("current")
def current() -> None:
    """Print the database's schema revision and the newest one available."""
    from sheriff.config import settings
    from sheriff.store import db

    engine = db.open_database(settings().database_url, migrate=False)
    typer.echo(f"current: {db.current_revision(engine) or 'empty'}; head: {db.head_revision()}")
