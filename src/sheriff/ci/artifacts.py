"""Reading an artifact's bytes: whole files only.

What a download answers may not be the file: a gzip stream cut short, bytes of something
else, text that is not JSON. That is a failed download, like an HTTP error: never an
answer, and never evidence (a cut errorsummary read whole is evidence; a cut transfer is
not). Here it becomes one clear error: `InputError` for the byte-level readers (also used
for files a person hands to `sheriff ingest`), `ArtifactUnreadable` — a kind of
`TaskclusterUnavailable`, so callers retry it as they retry an outage — for artifacts.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from sheriff.ci.taskcluster import TaskclusterUnavailable
from sheriff.errors import InputError

T = TypeVar("T")
# A transfer that arrived broken is most often whole on the next try: read again at once
# this many times before leaving it to a later pass (which delays the case's verdict).
REREADS = 2

# Characters JSON text never holds unescaped: bytes that decode to them are no JSON lines
# (an errorsummary) but a broken download.
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


class ArtifactUnreadable(TaskclusterUnavailable):
    """An artifact answered bytes that are not the whole file: a failed download."""


def gunzipped(raw: bytes) -> bytes:
    """The bytes, decompressed when they are gzip (artifacts and files come both ways).

    A truncated or corrupt gzip stream is an `InputError` (zlib's and gzip's own errors,
    and the EOFError of a cut stream, which click would take for an aborted prompt)."""
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError(f"not a complete gzip stream ({exc.__class__.__name__}: {exc})") from exc


def decoded_json(raw: bytes) -> Any:
    """JSON from bytes (gzipped or not): `InputError` for bytes that are not UTF-8 JSON,
    nest deeper than 1,024 levels, or hold a number out of range (orjson's limits)."""
    try:
        return orjson.loads(gunzipped(raw))
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc}") from exc


def artifact_json(raw: bytes, what: str) -> Any:
    """A JSON artifact's content; `ArtifactUnreadable` naming `what` when it is not."""
    try:
        return decoded_json(raw)
    except InputError as exc:
        raise ArtifactUnreadable(f"{what}: {exc}") from exc


def errorsummary_text(raw: bytes) -> str:
    """An errorsummary artifact's text; `InputError` when the bytes are not a whole text
    file (a cut or corrupt gzip stream, bytes that are not UTF-8, binary garbage)."""
    try:
        text = gunzipped(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if (found := _NOT_TEXT.search(text)) is not None:
        raise InputError(f"not text (a control character at {found.start()})")
    return text


def read_whole(download: Callable[[], bytes], decode: Callable[[bytes], T]) -> T:
    """`decode(download())`, downloading again (up to `REREADS` times) while the bytes
    are not the whole file; the last attempt's error is raised."""
    for attempt in range(REREADS + 1):
        try:
            return decode(download())
        except (InputError, ArtifactUnreadable):
            if attempt == REREADS:
                raise
    raise AssertionError("unreachable")
