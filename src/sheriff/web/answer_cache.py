"""Answers of the read API kept while the database has not changed.

A page of 500 jobs with their test paths is megabytes of JSON built from thousands of
rows; dashboards and scripts ask for the same pages again and again, and between two
passes of `sheriff triage` nothing in them changes. So a GET under /api/ is answered from
memory when the database is provably unchanged since the answer was built, and built
once when many ask for it at the same time.

"Unchanged" is the database's own change counter, read before the answer is built (so a
write that lands while it is built makes the next request build it again):
- SQLite: `PRAGMA data_version` on a connection of this cache's own, which changes
  whenever any other connection (this process's or another's) commits;
- PostgreSQL: `pg_current_wal_lsn()` (or, on a standby, the replay position), which moves
  with every write to the cluster — coarser than needed, never stale.
Other databases, and SQLite in memory, get no cache. Every cached answer carries an
`ETag`; a request with a matching `If-None-Match` gets a bodiless 304. `X-Sheriff-Cache`
says `hit` or `miss`.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.engine import Engine

CACHED_PREFIX = "/api/"
# One answer bigger than this is served but not kept (a quarter of the budget at most).
MAX_SHARE = 4

Version = Callable[[], object | None]


def database_version(engine: Engine) -> Version | None:
    """A function answering the database's change counter, or None when there is none."""
    backend = engine.dialect.name
    if backend == "sqlite":
        path = engine.url.database
        if not path or path == ":memory:" or path.startswith("file::memory:"):
            return None
        return _SqliteDataVersion(path)
    if backend == "postgresql":
        return _PostgresWalPosition(engine)
    return None


class _SqliteDataVersion:
    """`PRAGMA data_version` on one connection kept for it (the counter is per
    connection: it tells what *other* connections committed)."""

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()

    def __call__(self) -> object | None:
        with self._lock:
            return self._conn.execute("PRAGMA data_version").fetchone()[0]


class _PostgresWalPosition:
    _SQL = sa.text(
        "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text "
        "ELSE pg_current_wal_lsn()::text END"
    )

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __call__(self) -> object | None:
        with self._engine.connect() as conn:
            return conn.execute(self._SQL).scalar()


@dataclass(frozen=True)
class _Answer:
    version: object
    etag: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


class AnswerCache:
    """ASGI middleware: GET answers under /api/ (200, JSON) kept per URL and version, up
    to `max_bytes` of bodies, least recently used first out."""

    def __init__(self, app: Any, *, version: Version, max_bytes: int) -> None:
        self.app = app
        self.version = version
        self.max_bytes = max_bytes
        self.kept_bytes = 0
        self.answers: OrderedDict[bytes, _Answer] = OrderedDict()
        self.building: dict[tuple[bytes, object], asyncio.Future[_Answer | None]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or not scope["path"].startswith(CACHED_PREFIX)
        ):
            await self.app(scope, receive, send)
            return
        version = await anyio.to_thread.run_sync(self.version)
        if version is None:
            await self.app(scope, receive, send)
            return
        key = scope["path"].encode() + b"?" + scope["query_string"]
        answer = self.answers.get(key)
        if answer is not None and answer.version == version:
            self.answers.move_to_end(key)
            await _send(answer, scope, send)
            return
        building = self.building.get((key, version))
        if building is not None:
            # The same page is being built for another request: wait for it.
            answer = await asyncio.shield(building)
            if answer is not None:
                await _send(answer, scope, send)
                return
        future: asyncio.Future[_Answer | None] = asyncio.get_running_loop().create_future()
        self.building[(key, version)] = future
        answer = None
        try:
            answer = await self._build(scope, receive, send, key, version)
        finally:
            self.building.pop((key, version), None)
            future.set_result(answer)

    async def _build(
        self, scope: Any, receive: Any, send: Any, key: bytes, version: object
    ) -> _Answer | None:
        """Run the app for this request, passing its answer on, and keep it if it may be."""
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                if message["status"] != 200:
                    await send(message)
                return
            if start.get("status") != 200:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                body = b"".join(chunks)
                etag = _etag(body)
                headers = [
                    (k, v) for k, v in start.get("headers", []) if k.lower() not in _NOT_KEPT
                ]
                answer = _Answer(version, etag, [*headers, (b"etag", etag)], body)
                built.append(answer)
                await _send(answer, scope, send, hit=False)

        built: list[_Answer] = []
        await self.app(scope, receive, keep)
        if not built or not _is_json(built[0].headers):
            return None
        answer = built[0]
        if len(answer.body) * MAX_SHARE <= self.max_bytes:
            self._keep(key, answer)
        return answer

    def _keep(self, key: bytes, answer: _Answer) -> None:
        old = self.answers.pop(key, None)
        if old is not None:
            self.kept_bytes -= len(old.body)
        self.answers[key] = answer
        self.kept_bytes += len(answer.body)
        while self.kept_bytes > self.max_bytes and self.answers:
            _, dropped = self.answers.popitem(last=False)
            self.kept_bytes -= len(dropped.body)


# Per-request headers that a kept answer must not repeat.
_NOT_KEPT = frozenset({b"server-timing", b"date", b"content-length", b"etag"})


def _etag(body: bytes) -> bytes:
    # Of the body, not the version: each process counts versions of its own.
    return f'"{hashlib.blake2b(body, digest_size=12).hexdigest()}"'.encode()


def _is_json(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(
        k.lower() == b"content-type" and v.startswith(b"application/json") for k, v in headers
    )


async def _send(answer: _Answer, scope: Any, send: Any, *, hit: bool = True) -> None:
    """The answer, or a 304 when the client holds it already."""
    wanted = dict(scope.get("headers", [])).get(b"if-none-match")
    if wanted is not None and answer.etag in [t.strip() for t in wanted.split(b",")]:
        await send(
            {"type": "http.response.start", "status": 304, "headers": [(b"etag", answer.etag)]}
        )
        await send({"type": "http.response.body", "body": b""})
        return
    headers = [
        *answer.headers,
        (b"content-length", str(len(answer.body)).encode()),
        (b"x-sheriff-cache", b"hit" if hit else b"miss"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})
