"""Progress bars for long commands and tables (rich); progress on stderr, stdout stays parseable."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def scenario_progress(title: str) -> Iterator[Callable[[float, Any], None]]:
    """A bar from 0 to 1 of a scenario's virtual time, with the open cases beside it."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    with progress:
        task = progress.add_task(title, total=1.0, detail="")

        def update(share: float, summary: Any) -> None:
            detail = f"{summary.open_cases} open cases"
            progress.update(task, completed=share, detail=detail)

        yield update
        progress.update(task, completed=1.0)


def table_console() -> Console:
    """Where tables go: the terminal's width on a terminal; elsewhere (a pipe, a file) no
    width limit, so that labels are never folded into 8-character pieces."""
    console = Console()
    return console if console.is_terminal else Console(width=100_000)
