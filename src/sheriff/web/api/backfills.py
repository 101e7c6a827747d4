"""Backfill reports: what regressed, the suspect range push by push, the culprit."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from sheriff.store import api_queries
from sheriff.web.api.deps import ERRORS, NO_NUL, Conn, Paging, RowId, pushes_of
from sheriff.web.api.schemas import BackfillOut, Page

router = APIRouter(prefix="/api", responses=ERRORS, tags=["backfills"])


@router.get("/backfills", response_model=Page[BackfillOut])
def list_backfills(
    conn: Conn,
    paging: Paging,
    repo: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = None,
    revision: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9]{1,40}$")] = None,
    status: Annotated[str | None, Query(max_length=16, pattern=NO_NUL)] = None,
    source: Annotated[str | None, Query(max_length=16, pattern=NO_NUL)] = None,
    label: Annotated[str | None, Query(max_length=255, pattern=NO_NUL)] = None,
) -> dict[str, Any]:
    """Backfill reports, newest first, with their records and each record's push window."""
    filters = api_queries.BackfillFilter(status=status, source=source, label=label)
    if repo is not None:
        filters.repository_id = api_queries.repository_id(conn, repo)
        if filters.repository_id is None:
            raise HTTPException(404, f"unknown repository {repo!r}")
    if revision is not None:
        filters.push_ids = pushes_of(conn, revision, filters.repository_id)
    return paging.page(
        api_queries.list_backfills(conn, filters, offset=paging.offset, count=paging.count)
    )


@router.get("/backfills/{report_id}", response_model=BackfillOut)
def get_backfill(conn: Conn, report_id: RowId) -> dict[str, Any]:
    """One backfill report."""
    found = api_queries.get_backfill(conn, report_id)
    if found is None:
        raise HTTPException(404, f"unknown backfill report {report_id}")
    return found
