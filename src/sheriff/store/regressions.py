"""Reading regression records back: for `sheriff regressions`, the API, the dashboard
and the alerts; and moving cases to a record of their own when a search finds they are
not its regression's (`move_cases`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sheriff.store.schema import (
    action_request,
    job,
    platform,
    push,
    regression,
    regression_case,
    repository,
    triage_case,
)

OPEN_STATUSES = ("confirmed", "culprit")
CONFIRMED = OPEN_STATUSES[0]
STOPPED = "stopped"
# The request log's strategy of alert rows (`sheriff.notify.ALERT` is this one).
ALERT_STRATEGY = "alert"


def alerts_key_prefix(regression_id: int) -> str:
    """What the request log keys of one regression's alerts start with."""
    return f"{ALERT_STRATEGY}:{regression_id}:"


def alert_key(regression_id: int, event: str, channel: str) -> str:
    """The request log key of one alert: one row per regression, event and channel."""
    return f"{alerts_key_prefix(regression_id)}{event}:{channel}"


def _push_of(conn: sa.Connection, push_id: int | None) -> dict[str, Any] | None:
    if push_id is None:
        return None
    row = conn.execute(
        sa.select(
            push.c.id, push.c.revision, push.c.author, push.c.message, push.c.push_time
        ).where(push.c.id == push_id)
    ).first()
    if row is None:
        return None
    return {
        "id": row.id,
        "revision": row.revision,
        "author": row.author,
        "message": row.message,
        "push_time": row.push_time.isoformat() if row.push_time else None,
    }


def _as_dict(conn: sa.Connection, row: Any) -> dict[str, Any]:
    cases = conn.execute(
        sa.select(
            triage_case.c.id,
            triage_case.c.label,
            triage_case.c.push_id,
            triage_case.c.verdict,
            job.c.id.label("job_id"),
            job.c.task_id,
            job.c.run_id,
            job.c.option_collection,
            platform.c.platform,
            push.c.revision,
        )
        .join(regression_case, regression_case.c.case_id == triage_case.c.id)
        .join(job, job.c.id == triage_case.c.job_id)
        .join(platform, platform.c.id == job.c.machine_platform_id)
        .join(push, push.c.id == triage_case.c.push_id)
        .where(regression_case.c.regression_id == row.id)
        .order_by(push.c.push_time, triage_case.c.id)
    ).all()
    return {
        "id": row.id,
        "repository": row.repository,
        "status": row.status,
        "tests": list(row.tests),
        "failure_lines": list(row.failure_lines),
        "configurations": list(row.configurations),
        "labels": list(row.labels),
        "first_push": _push_of(conn, row.first_push_id),
        "last_push": _push_of(conn, row.last_push_id),
        "culprit": _push_of(conn, row.culprit_push_id),
        "stopped_push": _push_of(conn, row.stopped_push_id),
        "backfill_report_id": row.backfill_report_id,
        "opened_at": row.opened_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
        "cases": [
            {
                "case_id": c.id,
                "job_id": c.job_id,
                "task_id": c.task_id,
                "run_id": c.run_id,
                "label": c.label,
                "configuration": f"{c.platform}/{c.option_collection}",
                "verdict": c.verdict,
                "revision": c.revision,
            }
            for c in cases
        ],
    }


def _query() -> Any:
    return (
        sa.select(regression, repository.c.name.label("repository"))
        .join(repository, repository.c.id == regression.c.repository_id)
        .where(regression.c.merged_into.is_(None))
    )


def list_regressions(
    conn: sa.Connection,
    *,
    open_only: bool = False,
    statuses: Collection[str] | None = None,
    repository_name: str | None = None,
    offset: int = 0,
    count: int = 100,
) -> list[dict[str, Any]]:
    """Regressions (not those merged into another), newest first, with their cases;
    `open_only` is `statuses=OPEN_STATUSES`."""
    query = _query()
    if open_only:
        statuses = OPEN_STATUSES
    if statuses is not None:
        query = query.where(regression.c.status.in_(sorted(statuses)))
    if repository_name is not None:
        query = query.where(repository.c.name == repository_name)
    query = query.order_by(regression.c.id.desc()).offset(offset).limit(count)
    return [_as_dict(conn, row) for row in conn.execute(query).all()]


def get_regression(conn: sa.Connection, regression_id: int) -> dict[str, Any] | None:
    """One regression; one merged into another answers as the one it went into."""
    seen: set[int] = set()
    while regression_id not in seen:
        seen.add(regression_id)
        into = conn.execute(
            sa.select(regression.c.merged_into).where(regression.c.id == regression_id)
        ).first()
        if into is None:
            return None
        if into.merged_into is None:
            break
        regression_id = into.merged_into
    row = conn.execute(_query().where(regression.c.id == regression_id)).first()
    return _as_dict(conn, row) if row is not None else None


def alerts_of(
    conn: sa.Connection, repository_name: str, regression_ids: Iterable[int]
) -> dict[int, list[dict[str, Any]]]:
    """The alerts the request log holds about these regressions, oldest first, by id:
    event, channel, state (sent, dry-run, failed, ...), subject and when written."""
    wanted = set(regression_ids)
    found: dict[int, list[dict[str, Any]]] = {i: [] for i in wanted}
    if not wanted:
        return found
    # By key (unique, so indexed): only these regressions' rows, not the repository's.
    keys = action_request.c.idempotency_key
    prefixes = [keys.startswith(alerts_key_prefix(i), autoescape=True) for i in sorted(wanted)]
    rows = conn.execute(
        sa.select(action_request.c.input, action_request.c.state, action_request.c.created_at)
        .where(
            action_request.c.strategy == ALERT_STRATEGY,
            action_request.c.repository == repository_name,
            sa.or_(*prefixes),
        )
        .order_by(action_request.c.id)
    ).all()
    for row in rows:
        given = row.input if isinstance(row.input, dict) else {}
        if given.get("regression_id") in wanted:
            found[given["regression_id"]].append(
                {
                    "event": given.get("event"),
                    "channel": given.get("channel"),
                    "subject": given.get("subject"),
                    "state": row.state,
                    "created_at": row.created_at,
                }
            )
    return found


def move_cases(
    conn: sa.Connection,
    report_id: int,
    new_report_id: int,
    case_ids: Sequence[int],
    tests: Sequence[str],
    lines: Sequence[str],
    now: datetime,
) -> int | None:
    """Move `case_ids` from the regression record the search `report_id` serves to a new
    record of `tests` and `lines`, served by the search `new_report_id`; its id (None when
    no record is served by the report, or none of the cases is its). The old record no
    longer names those tests: they were not what its search looked for
    (`backfill.reports.check_unsearched`)."""
    old = conn.execute(
        sa.select(regression).where(
            regression.c.backfill_report_id == report_id, regression.c.merged_into.is_(None)
        )
    ).first()
    if old is None:
        return None
    gone, gone_lines = set(tests), set(lines)
    members = set(
        conn.execute(
            sa.select(regression_case.c.case_id).where(regression_case.c.regression_id == old.id)
        ).scalars()
    )
    moving, staying = members & set(case_ids), members - set(case_ids)
    if not moving:
        return None
    if not staying:
        # Every case of the record is the new search's: the record is its regression.
        conn.execute(
            sa.update(regression)
            .where(regression.c.id == old.id)
            .values(backfill_report_id=new_report_id, updated_at=now)
        )
        return old.id
    conn.execute(
        sa.update(regression)
        .where(regression.c.id == old.id)
        .values(
            tests=[t for t in old.tests if t not in gone],
            failure_lines=[line for line in old.failure_lines if line not in gone_lines],
            **_where_cases_ran(conn, staying),
            updated_at=now,
        )
    )
    new_id = conn.execute(
        sa.insert(regression)
        .values(
            repository_id=old.repository_id,
            status=CONFIRMED,
            tests=sorted(gone),
            failure_lines=sorted(gone_lines),
            **_where_cases_ran(conn, moving),
            backfill_report_id=new_report_id,
            opened_at=now,
            updated_at=now,
        )
        .returning(regression.c.id)
    ).scalar_one()
    conn.execute(
        sa.update(regression_case)
        .where(regression_case.c.case_id.in_(sorted(moving)))
        .values(regression_id=new_id)
    )
    return new_id


def _where_cases_ran(conn: sa.Connection, case_ids: Collection[int]) -> dict[str, Any]:
    """A record's configurations, labels and first and last push, from its cases."""
    rows = conn.execute(
        sa.select(
            triage_case.c.label,
            triage_case.c.push_id,
            platform.c.platform,
            job.c.option_collection,
            push.c.push_time,
        )
        .join(job, job.c.id == triage_case.c.job_id)
        .join(platform, platform.c.id == job.c.machine_platform_id)
        .join(push, push.c.id == triage_case.c.push_id)
        .where(triage_case.c.id.in_(sorted(case_ids)))
        .order_by(push.c.push_time, push.c.id)
    ).all()
    return {
        "configurations": sorted({f"{r.platform}/{r.option_collection}" for r in rows}),
        "labels": sorted({r.label for r in rows}),
        "first_push_id": rows[0].push_id,
        "last_push_id": rows[-1].push_id,
    }
