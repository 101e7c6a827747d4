"""Arguments checked before anything is opened or asked: a bad one costs no request."""

from __future__ import annotations


def task_id(value: str) -> str:
    """A Typer callback: refuse a TASK_ID that is not a Taskcluster slugid, in one line."""
    from sheriff.errors import InputError
    from sheriff.store.schema.base import is_slugid

    if not is_slugid(value):
        raise InputError(
            f"{value!r} is not a Taskcluster task id (a slugid: 22 URL-safe base64 characters)"
        )
    return value
