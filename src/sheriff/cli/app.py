"""The root `sheriff` Typer application that every command module registers on.

Command modules import heavy dependencies (FastAPI, taskcluster, …) inside their
functions so that `sheriff --help` stays fast.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

import typer
from typer.core import TyperGroup


class Alphabetical(TyperGroup):
    """Lists commands and command groups together, by name (Typer puts groups last)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(super().list_commands(ctx))


app = typer.Typer(
    name="sheriff",
    cls=Alphabetical,
    help="An automated CI sheriff for Firefox-style CI (Taskcluster + Treeherder).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(show: bool) -> None:
    if show:
        try:
            number = version("sheriff")
        except PackageNotFoundError:  # running from a source tree that was never installed
            number = "unknown"
        typer.echo(f"sheriff {number}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """An automated CI sheriff for Firefox-style CI (Taskcluster + Treeherder)."""
