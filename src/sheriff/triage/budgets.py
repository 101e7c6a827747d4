"""Retrigger budgets of a push: what the request log asked for on it, and on its repository
in the last 24 hours (docs/service.md, "Budgets")."""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa

from sheriff.actions.usage import retrigger_runs
from sheriff.model.budget import Budget
from sheriff.store.schema import repository

DAY = timedelta(hours=24)


def retrigger_budgets(
    conn: sa.Connection,
    *,
    repo: str,
    revision: str,
    now: datetime,
    per_push: int | None,
    per_day: int | None,
) -> tuple[Budget, ...]:
    """The retrigger budgets of one push: call inside its planning transaction.

    A per-day cap locks the repository row first, so that two workers planning two pushes
    of one repository at once count each other's requests (the push lock alone would not)."""
    budgets = []
    if per_push is not None:
        budgets.append(Budget("push", per_push, retrigger_runs(conn, repo, revision=revision)))
    if per_day is not None:
        conn.execute(
            repository.update().where(repository.c.name == repo).values(id=repository.c.id)
        )
        used = retrigger_runs(conn, repo, since=now - DAY)
        budgets.append(Budget(f"{repo} in 24 hours", per_day, used))
    return tuple(budgets)
