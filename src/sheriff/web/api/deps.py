"""What every API route shares: a connection per request, the repository, pages, links."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

import orjson
import sqlalchemy as sa
from fastapi import Depends, HTTPException, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from sheriff.config import Settings
from sheriff.store import api_queries

# Bounds that keep every value inside what both databases store (32-bit push ids, 64-bit
# job ids) so that odd input is a 422, never a database error.
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
NO_NUL = r"^[^\x00]*$"

RepoName = Annotated[
    str, Path(description="repository name, e.g. autoland", pattern=r"^[A-Za-z0-9._-]{1,64}$")
]
Revision = Annotated[str, Path(description="the push's revision", pattern=r"^[A-Za-z0-9]{1,40}$")]
# A row's id in a path: a job, a backfill report, a regression.
RowId = Annotated[int, Path(ge=1, le=MAX_INT64)]
JobId = RowId

ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "unknown repository, push or job"},
    422: {"description": "bad parameters"},
    503: {"description": "busy: every database connection in use; retry after Retry-After"},
}


def connection(request: Request) -> Iterator[sa.Connection]:
    """One read connection per request, closed after the answer."""
    with request.app.state.engine.connect() as conn:
        yield conn


Conn = Annotated[sa.Connection, Depends(connection)]


def settings_of(request: Request) -> Settings:
    return request.app.state.settings


def repo_id(repo: RepoName, conn: Conn) -> int:
    """The repository's id; 404 when sheriff has never seen it."""
    found = api_queries.repository_id(conn, repo)
    if found is None:
        raise HTTPException(404, f"unknown repository {repo!r}")
    return found


RepoId = Annotated[int, Depends(repo_id)]


_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(:\d\d(\.\d+)?)?([Zz]|[+-]\d\d:?\d\d)?")


def date_time_only(value: Any) -> Any:
    """A query's date-time as the schema says it (`format: date-time`): pydantic alone
    would also take a number (`0.5`) for seconds since 1970."""
    if isinstance(value, str) and not _DATE_TIME.fullmatch(value):
        raise ValueError("not a date-time such as 2026-11-02T08:00:00Z")
    return value


def pushes_of(conn: sa.Connection, revision: str, repo_id: int | None) -> list[int]:
    """The pushes a `revision` filter means: in `repo`, or in any repository without one
    (a revision names one change wherever it landed); 404 when there is none."""
    found = api_queries.pushes_of_revision(conn, revision, repo_id)
    if not found:
        raise HTTPException(404, f"unknown push {revision!r}")
    return found


class Pagination:
    """`offset` and `count` query parameters, Treeherder-style."""

    def __init__(
        self,
        offset: int = Query(0, ge=0, le=MAX_INT32, description="rows to skip"),
        count: int = Query(50, ge=1, le=500, description="rows per page"),
    ) -> None:
        self.offset = offset
        self.count = count

    def page(self, results: list[Any]) -> dict[str, Any]:
        full = len(results) == self.count
        return {
            "meta": {
                "offset": self.offset,
                "count": self.count,
                "next_offset": self.offset + self.count if full else None,
            },
            "results": results,
        }


Paging = Annotated[Pagination, Depends()]


@dataclass(frozen=True)
class Links:
    """Where a repository's tasks and jobs live: the services its data was fetched from,
    else (data ingested from files) the ones this server is configured with."""

    taskcluster: str
    treeherder: str

    def task(self, task_id: str) -> str:
        return f"{self.taskcluster}/tasks/{task_id}"

    def jobs(self, query: Sequence[tuple[str, Any]] | dict[str, Any]) -> str:
        return f"{self.treeherder}/jobs?{urlencode(query)}"

    def job(self, repo: str, revision: str, task_id: str, run: int) -> str:
        return self.jobs(
            {"repo": repo, "revision": revision, "selectedTaskRun": f"{task_id}.{run}"}
        )


# Fields whose lists many rows of a page share (the jobs of one manifest set).
SHARED_LISTS = ("manifests", "test_paths")


def rows_of(model: type[BaseModel], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows`, changed in place to hold exactly `model`'s fields (absent ones null), as its
    validation would leave them: for answers sent by `json_answer`, which skips that.

    A list that several rows hold (the same object: the test paths of one manifest set)
    is serialised once and written as is for each of them: a page of 500 jobs holds
    50,000 test paths, but a handful of distinct lists."""
    if not rows:
        return rows
    names = model.model_fields.keys()
    # The rows of one query share their keys: what to drop and add is known from one.
    extra = [key for key in rows[0] if key not in names]
    missing = [name for name in names if name not in rows[0]]
    shared = [name for name in SHARED_LISTS if name in names]
    done: dict[int, orjson.Fragment] = {}
    for row in rows:
        for key in extra:
            row.pop(key, None)
        for name in missing:
            row.setdefault(name, None)
        for name in shared:
            value = row.get(name)
            if isinstance(value, list):
                fragment = done.get(id(value))
                if fragment is None:
                    fragment = done[id(value)] = orjson.Fragment(orjson.dumps(value))
                row[name] = fragment
    return rows


def json_answer(data: Any) -> Response:
    """`data` as JSON, serialised by orjson and sent as is.

    For the big pages (500 jobs with their test paths are megabytes): FastAPI would
    validate the answer against its response model and serialise it again, which took
    most of the time of a request (benchmarks/api.py --load). The route keeps its
    `response_model`, so the OpenAPI document is unchanged, and the data is shaped to it
    (`rows_of`); tests/web/test_schemathesis.py checks every answer against the schema.
    Stored times are UTC: naive ones (SQLite) are written with their `Z`, as aware ones.
    """
    options = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z
    return Response(orjson.dumps(data, option=options), media_type="application/json")


def links_of(conn: sa.Connection, settings: Settings, repo: str) -> Links:
    stored = api_queries.repository_sources(conn, repo)
    taskcluster, treeherder = stored or (None, None)
    return Links(
        (taskcluster or settings.taskcluster_root_url).rstrip("/"),
        (treeherder or settings.treeherder_url).rstrip("/"),
    )
