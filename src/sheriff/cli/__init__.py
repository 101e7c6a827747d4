"""The `sheriff` command: thin modules that parse, call the library and print.

Every module in this package except `app` registers its commands on `app.app`; they are
discovered here so that adding a command never edits a shared list.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import sqlalchemy.exc
import typer

from sheriff.cli.app import app
from sheriff.errors import SheriffError


def _register_commands() -> None:
    for module in pkgutil.iter_modules(__path__):
        if module.name != "app" and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; any `SheriffError` or usage error becomes one line on stderr."""
    try:
        code = app(args=argv, prog_name="sheriff", standalone_mode=False)
    except SheriffError as exc:
        _fail(str(exc), exc.exit_code)
    except sqlalchemy.exc.OperationalError as exc:
        _fail(f"database unavailable: {exc.orig}", 1)
    except sqlalchemy.exc.StatementError as exc:
        # A column type refusing a value (a task id that is not a slugid on PostgreSQL)
        # raises inside SQLAlchemy, which wraps it.
        if not isinstance(exc.orig, SheriffError):
            raise
        _fail(str(exc.orig), exc.orig.exit_code)
    except typer.Abort:
        _fail("aborted", 130)
    except OSError as exc:
        # A file the command reads or writes (`--out` under a file, a full disk, a folder
        # without permission): the path and the reason, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}", 1)
    except Exception as exc:
        # Typer vendors its own click; its usage errors are recognised by their shape.
        if type(exc).__name__ == "NoArgsIsHelpError":
            # `sheriff` (or a group) alone: the help, as --help prints it, not one line.
            print(exc.format_message(), file=sys.stderr)  # type: ignore[attr-defined]
            sys.exit(2)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            _fail(exc.format_message(), exc.exit_code)
        raise
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    first_line = " ".join(message.split())
    print(f"sheriff: error: {first_line}", file=sys.stderr)
    sys.exit(code)
