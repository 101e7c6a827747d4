"""What the request log has asked CI for: runs per repository, push and time, for budgets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.actions.strategies import REGISTRY, strategy
from sheriff.store.schema import action_request

RETRIGGER_STRATEGIES = ("retrigger", "retrigger-multiple")


def _rows(conn: sa.Connection, *conditions: sa.ColumnElement[bool]) -> list[Any]:
    # A request that failed for good asked CI for nothing; every other state did or will.
    query = sa.select(action_request).where(
        action_request.c.state != request_log.FAILED, *conditions
    )
    return [request_log.RequestRow.from_mapping(m) for m in conn.execute(query).mappings()]


def runs_of(row: request_log.RequestRow) -> int:
    """The runs one request asks for (Gecko's `backfill`: `times` on each of `depth` pushes)."""
    if row.strategy == "backfill":
        return int(row.input.get("depth", 1)) * int(row.input.get("times", 1))
    if row.strategy not in REGISTRY:
        return 0
    return sum(strategy(row.strategy).runs(row.input, row.labels).values())


def retrigger_runs(
    conn: sa.Connection, repo: str, *, revision: str | None = None, since: datetime | None = None
) -> int:
    """Retriggers asked for on a repository (one push of it; since a time)."""
    conditions = [
        action_request.c.repository == repo,
        action_request.c.strategy.in_(RETRIGGER_STRATEGIES),
    ]
    if revision is not None:
        conditions.append(action_request.c.revision == revision)
    if since is not None:
        conditions.append(action_request.c.created_at > since)
    return sum(runs_of(r) for r in _rows(conn, *conditions))


def backfill_runs(conn: sa.Connection, repo: str, *, since: datetime) -> int:
    """Backfilled runs asked for on a repository since a time (backfill keys only)."""
    rows = _rows(
        conn,
        action_request.c.repository == repo,
        action_request.c.created_at > since,
        action_request.c.idempotency_key.like("backfill:%"),
    )
    return sum(runs_of(r) for r in rows)
