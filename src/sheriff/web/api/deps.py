"""What every API route shares: a connection per request, the repository, pages, links."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

import sqlalchemy as sa
from fastapi import Depends, HTTPException, Path, Query, Request

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
JobId = Annotated[int, Path(ge=1, le=MAX_INT64)]

ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "unknown repository, push or job"},
    422: {"description": "bad parameters"},
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


def links_of(conn: sa.Connection, settings: Settings, repo: str) -> Links:
    stored = api_queries.repository_sources(conn, repo)
    taskcluster, treeherder = stored or (None, None)
    return Links(
        (taskcluster or settings.taskcluster_root_url).rstrip("/"),
        (treeherder or settings.treeherder_url).rstrip("/"),
    )
