"""The root `sheriff` Typer application that every command module registers on.

Command modules import heavy dependencies (FastAPI, taskcluster, …) inside their
functions so that `sheriff --help` stays fast.
"""

import typer

app = typer.Typer(
    name="sheriff",
    help="An automated CI sheriff for Firefox-style CI (Taskcluster + Treeherder).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
