"""Regressions: the cases that are one breakage, with its culprit and where it stopped."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from sheriff.store import regressions as stored
from sheriff.web.api.deps import ERRORS, Conn, Paging, RowId
from sheriff.web.api.schemas import Page, RegressionOut

router = APIRouter(prefix="/api", responses=ERRORS, tags=["regressions"])


@router.get("/regressions", response_model=Page[RegressionOut])
def list_regressions(
    conn: Conn,
    paging: Paging,
    repo: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = None,
    open: Annotated[bool, Query(description="only those still failing")] = False,
) -> dict[str, Any]:
    """Regression records, newest first, each with its cases."""
    found = stored.list_regressions(
        conn, open_only=open, repository_name=repo, offset=paging.offset, count=paging.count
    )
    return paging.page(found)


@router.get("/regressions/{regression_id}", response_model=RegressionOut)
def get_regression(conn: Conn, regression_id: RowId) -> dict[str, Any]:
    """One regression record."""
    found = stored.get_regression(conn, regression_id)
    if found is None:
        raise HTTPException(404, f"unknown regression {regression_id}")
    return found
