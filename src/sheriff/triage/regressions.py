"""Regression records: file each regression case into one, follow culprits and ends.

`file_case` runs inside the transaction that decided the case (triage's `on_regression`),
before its backfill is opened, so that the case's search is its regression's search.
`follow_regressions` runs once per pass: it takes culprits from the backfill reports,
merges regressions whose searches named the same culprit push, and notes the push where
each stopped failing. Grouping itself is `sheriff.model.regressions` (pure).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sheriff.backfill.evidence import test_of
from sheriff.backfill.reports import regression_of
from sheriff.model.failure_lines import with_crash_lines
from sheriff.model.policy import LINES_READ
from sheriff.model.regressions import (
    CONFIRMED,
    CULPRIT,
    STOPPED,
    CaseFacts,
    Group,
    clean_runs_to_stop,
    match,
    merge_target,
    merged_stop,
    stopped_failing,
)
from sheriff.store.history import LOOKBACK_PUSHES, began_failing_on
from sheriff.store.schema import (
    backfill_report,
    job,
    job_type,
    platform,
    push,
    regression,
    regression_case,
    repository,
    run_observation,
    triage_case,
)


def push_orders(conn: sa.Connection, repository_id: int) -> dict[int, int]:
    """Each push id of the repository → its position in push time order."""
    ids = conn.execute(
        sa.select(push.c.id)
        .where(push.c.repository_id == repository_id)
        .order_by(push.c.push_time, push.c.id)
    ).scalars()
    return {push_id: order for order, push_id in enumerate(ids)}


def regression_of_case(conn: sa.Connection, case_id: int) -> int | None:
    """The regression a case was filed in (following merges), if any."""
    found = conn.execute(
        sa.select(regression_case.c.regression_id).where(regression_case.c.case_id == case_id)
    ).scalar()
    return _follow(conn, found) if found is not None else None


def _follow(conn: sa.Connection, regression_id: int) -> int:
    seen = set()
    while regression_id not in seen:
        seen.add(regression_id)
        into = conn.execute(
            sa.select(regression.c.merged_into).where(regression.c.id == regression_id)
        ).scalar()
        if into is None:
            return regression_id
        regression_id = into
    return regression_id


def _case_facts(
    conn: sa.Connection, case_id: int, orders: dict[int, int], began: dict[str, int]
) -> tuple[Any, ...]:
    row = conn.execute(
        sa.select(
            triage_case.c.job_id,
            triage_case.c.push_id,
            triage_case.c.label,
            job.c.repository_id,
            job.c.option_collection,
            platform.c.platform,
        )
        .join(job, job.c.id == triage_case.c.job_id)
        .join(platform, platform.c.id == job.c.machine_platform_id)
        .where(triage_case.c.id == case_id)
    ).one()
    found = regression_of(conn, row.job_id)
    lines = _reproduced_most(found.lines, found.shown_by)
    tests = frozenset(t for t in (test_of(line) for line in lines) if t) or frozenset(found.tests)
    facts = CaseFacts(
        case_id=case_id,
        push_order=orders.get(row.push_id, 0),
        tests=tests,
        lines=frozenset(lines),
        configuration=f"{row.platform}/{row.option_collection}",
        label=row.label,
        began={t: o for t, o in began.items() if t in tests},
    )
    return facts, row


def began_failing_by(
    conn: sa.Connection, push_order: int, orders: dict[int, int]
) -> dict[str, int]:
    """Test → the push order where it began failing (`store.history.began_failing_on`),
    read from the push at `push_order` and the `LOOKBACK_PUSHES` before it (`orders`: the
    repository's pushes, `push_orders`)."""
    window = sorted(
        (o, p) for p, o in orders.items() if push_order - LOOKBACK_PUSHES <= o <= push_order
    )
    began = began_failing_on(conn, [p for _, p in window])
    return {test: orders[p] for test, p in began.items()}


def _reproduced_most(lines: list[str], shown_by: dict[str, int]) -> list[str]:
    """The lines the retriggers showed at least half as often as the most shown one: a
    flaky test that failed beside the regression once more is not the regression."""
    if not shown_by:
        return lines
    most = max(shown_by.get(line, 0) for line in lines) if lines else 0
    return [line for line in lines if shown_by.get(line, 0) * 2 >= most]


def _groups(
    conn: sa.Connection, repository_id: int, orders: dict[int, int], began: dict[str, int]
) -> list[Group]:
    rows = conn.execute(
        sa.select(regression).where(
            regression.c.repository_id == repository_id, regression.c.merged_into.is_(None)
        )
    ).all()
    return [
        Group(
            id=r.id,
            tests=set(r.tests),
            lines=set(r.failure_lines),
            first_push=orders.get(r.first_push_id, 0),
            last_push=orders.get(r.last_push_id, 0),
            stopped_at=orders.get(r.stopped_push_id) if r.stopped_push_id else None,
            culprit_at=orders.get(r.culprit_push_id) if r.culprit_push_id else None,
            onsets=frozenset(began[t] for t in r.tests if t in began),
            configurations=set(r.configurations),
            labels=set(r.labels),
        )
        for r in rows
    ]


def file_case(conn: sa.Connection, case_id: int, now: datetime) -> int | None:
    """File a `regression` case into its regression (a new one if none admits it); its id.

    Safe to call again: a case already filed returns its regression. A case with neither a
    failing test nor a failure line to group by is left out (None).
    """
    known = regression_of_case(conn, case_id)
    if known is not None:
        return known
    repository_id, case_push = conn.execute(
        sa.select(push.c.repository_id, push.c.id)
        .join(triage_case, triage_case.c.push_id == push.c.id)
        .where(triage_case.c.id == case_id)
    ).one()
    orders = push_orders(conn, repository_id)
    began = began_failing_by(conn, orders.get(case_push, 0), orders)
    facts, row = _case_facts(conn, case_id, orders, began)
    if not facts.tests and not facts.lines:
        return None
    chosen = match(facts, _groups(conn, repository_id, orders, began))
    if chosen is None:
        regression_id = conn.execute(
            sa.insert(regression)
            .values(
                repository_id=repository_id,
                status=CONFIRMED,
                tests=sorted(facts.tests),
                failure_lines=sorted(facts.lines),
                configurations=[facts.configuration],
                labels=[row.label],
                first_push_id=row.push_id,
                last_push_id=row.push_id,
                opened_at=now,
                updated_at=now,
            )
            .returning(regression.c.id)
        ).scalar_one()
    else:
        regression_id = chosen.id
        current = conn.execute(sa.select(regression).where(regression.c.id == chosen.id)).one()
        tests, lines = chosen.grown(facts)
        values: dict[str, Any] = {
            "tests": sorted(tests),
            "failure_lines": sorted(lines),
            "configurations": sorted(set(current.configurations) | {facts.configuration}),
            "labels": sorted(set(current.labels) | {row.label}),
            "updated_at": now,
        }
        if facts.push_order < orders.get(current.first_push_id, 0):
            values["first_push_id"] = row.push_id
        if facts.push_order > orders.get(current.last_push_id, 0):
            values["last_push_id"] = row.push_id
        conn.execute(sa.update(regression).where(regression.c.id == chosen.id).values(**values))
        _search_for(conn, current.backfill_report_id, chosen.began_with(facts), now)
    conn.execute(sa.insert(regression_case).values(case_id=case_id, regression_id=regression_id))
    return regression_id


def _search_for(conn: sa.Connection, report_id: int | None, tests: set[str], now: datetime) -> None:
    """The regression's search is for tests that began failing with it too: its report
    names them (what its culprit is said to have broken), and their later cases join it by
    test like any other."""
    if report_id is None or not tests:
        return
    named = conn.execute(
        sa.select(backfill_report.c.tests).where(backfill_report.c.id == report_id)
    ).scalar_one()
    if tests <= set(named):
        return
    conn.execute(
        sa.update(backfill_report)
        .where(backfill_report.c.id == report_id)
        .values(tests=sorted(set(named) | tests), updated_at=now)
    )


def report_of(conn: sa.Connection, regression_id: int) -> int | None:
    """The backfill report that serves the regression, if one was opened."""
    return conn.execute(
        sa.select(regression.c.backfill_report_id).where(regression.c.id == regression_id)
    ).scalar()


def serve_by(conn: sa.Connection, regression_id: int, report_id: int | None) -> None:
    """Record the report as the regression's one search (the first one wins)."""
    if report_id is None:
        return
    conn.execute(
        sa.update(regression)
        .where(regression.c.id == regression_id, regression.c.backfill_report_id.is_(None))
        .values(backfill_report_id=report_id)
    )


def with_searches(conn: sa.Connection, repo: str) -> list[Any]:
    """The repository's regressions (not merged away) with their culprit's author and
    their search's status (`search`: the backfill report's, None without one)."""
    culprit = push.alias("culprit")
    return list(
        conn.execute(
            sa.select(
                regression,
                culprit.c.author,
                backfill_report.c.status.label("search"),
            )
            .join(repository, repository.c.id == regression.c.repository_id)
            .outerjoin(culprit, culprit.c.id == regression.c.culprit_push_id)
            .outerjoin(backfill_report, backfill_report.c.id == regression.c.backfill_report_id)
            .where(repository.c.name == repo, regression.c.merged_into.is_(None))
        ).all()
    )


def search_settled(row: Any) -> bool:
    """Whether a regression's search is over: a culprit, a search that ended without
    one, or no search at all (backfills off, no failure line to look for)."""
    return row.culprit_revision is not None or row.search in (None, "failed")


# -- once per pass ---------------------------------------------------------------------


def follow_regressions(conn: sa.Connection, now: datetime) -> None:
    """Culprits from the backfill reports, merges by culprit, and where each stopped."""
    rows = conn.execute(
        sa.select(regression, backfill_report.c.culprit_push_id.label("found_push"))
        .outerjoin(backfill_report, backfill_report.c.id == regression.c.backfill_report_id)
        .where(regression.c.merged_into.is_(None))
        .order_by(regression.c.id)
    ).all()
    culprits: dict[int, str | None] = {}
    for r in rows:
        culprit_push = r.culprit_push_id or r.found_push
        if r.culprit_push_id is None and r.found_push is not None:
            revision = conn.execute(
                sa.select(push.c.revision).where(push.c.id == r.found_push)
            ).scalar_one()
            conn.execute(
                sa.update(regression)
                .where(regression.c.id == r.id)
                .values(
                    culprit_push_id=r.found_push,
                    culprit_revision=revision,
                    status=CULPRIT if r.status == CONFIRMED else r.status,
                    updated_at=now,
                )
            )
        culprits[r.id] = str(culprit_push) if culprit_push is not None else None
    for gone, into in merge_target(culprits).items():
        _merge(conn, gone, into, now)
    _mark_stopped(conn, now)


def _merge(conn: sa.Connection, gone: int, into: int, now: datetime) -> None:
    a = conn.execute(sa.select(regression).where(regression.c.id == into)).one()
    b = conn.execute(sa.select(regression).where(regression.c.id == gone)).one()
    orders = push_orders(conn, a.repository_id)
    # The merged stop is one of the two records' own stops (or none).
    stops = {orders[r.stopped_push_id]: r.stopped_push_id for r in (a, b) if r.stopped_push_id}
    stop = merged_stop(
        (orders[r.last_push_id], orders[r.stopped_push_id] if r.stopped_push_id else None)
        for r in (a, b)
    )
    conn.execute(
        sa.update(regression)
        .where(regression.c.id == into)
        .values(
            tests=sorted(set(a.tests) | set(b.tests)),
            failure_lines=sorted(set(a.failure_lines) | set(b.failure_lines)),
            configurations=sorted(set(a.configurations) | set(b.configurations)),
            labels=sorted(set(a.labels) | set(b.labels)),
            first_push_id=min(a.first_push_id, b.first_push_id, key=orders.__getitem__),
            last_push_id=max(a.last_push_id, b.last_push_id, key=orders.__getitem__),
            # Failing past its stop, it is open again (`merged_stop`); `_mark_stopped`
            # looks for its end after the merged last push.
            stopped_push_id=stops[stop] if stop is not None else None,
            status=STOPPED if stop is not None else CULPRIT if a.culprit_push_id else CONFIRMED,
            updated_at=now,
        )
    )
    conn.execute(
        sa.update(regression_case)
        .where(regression_case.c.regression_id == gone)
        .values(regression_id=into)
    )
    conn.execute(
        sa.update(regression)
        .where(regression.c.id == gone)
        .values(merged_into=into, updated_at=now)
    )


def _mark_stopped(conn: sa.Connection, now: datetime) -> None:
    open_ = conn.execute(
        sa.select(regression, backfill_report.c.fail_rate)
        .outerjoin(backfill_report, backfill_report.c.id == regression.c.backfill_report_id)
        .where(regression.c.merged_into.is_(None), regression.c.stopped_push_id.is_(None))
    ).all()
    for r in open_:
        orders = push_orders(conn, r.repository_id)
        last = orders.get(r.last_push_id, 0)
        later = [p for p, o in orders.items() if o > last]
        if not later:
            continue
        lines = set(r.failure_lines)
        runs = conn.execute(
            sa.select(
                job.c.push_id,
                job.c.result,
                run_observation.c.parse_status,
                run_observation.c.failure_lines,
                run_observation.c.raw_failure_lines,
                platform.c.platform,
                job.c.option_collection,
                job_type.c.name.label("label"),
            )
            .join(job_type, job_type.c.id == job.c.job_type_id)
            .join(platform, platform.c.id == job.c.machine_platform_id)
            .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
            .where(
                job.c.push_id.in_(later),
                job_type.c.name.in_(list(r.labels)),
                job.c.state == "completed",
            )
        ).all()
        # Every (label, configuration) its cases failed on must run clean on a push for
        # that push to count as clean: one lucky chunk of an intermittent one says nothing.
        expected = _case_pairs(conn, r.id)
        clean: dict[int, set[tuple[str, str]]] = defaultdict(set)
        clean_runs: dict[int, int] = defaultdict(int)
        failing: dict[int, int] = defaultdict(int)
        for run in runs:
            pair = (run.label, f"{run.platform}/{run.option_collection}")
            if pair not in expected:
                continue
            if run.result == "success":
                clean[run.push_id].add(pair)
                clean_runs[run.push_id] += 1
            elif run.result == "testfailed" and (
                run.parse_status not in LINES_READ
                or lines & set(with_crash_lines(run.failure_lines or (), run.raw_failure_lines))
            ):
                # A failed run not read yet may be the regression still failing.
                failing[run.push_id] += 1
        seen = set(clean) | set(failing)
        tally = {p: (clean_runs[p] if clean[p] >= expected else 0, failing[p]) for p in seen}
        rate = r.fail_rate if r.fail_rate is not None else 1.0
        needed = clean_runs_to_stop(rate, looks=len(tally))
        stop = stopped_failing(last, [(orders[p], c, f) for p, (c, f) in tally.items()], needed)
        if stop is None:
            continue
        stop_push = next(p for p, o in orders.items() if o == stop)
        conn.execute(
            sa.update(regression)
            .where(regression.c.id == r.id)
            .values(stopped_push_id=stop_push, status=STOPPED, updated_at=now)
        )


def _case_pairs(conn: sa.Connection, regression_id: int) -> set[tuple[str, str]]:
    rows = conn.execute(
        sa.select(triage_case.c.label, platform.c.platform, job.c.option_collection)
        .join(regression_case, regression_case.c.case_id == triage_case.c.id)
        .join(job, job.c.id == triage_case.c.job_id)
        .join(platform, platform.c.id == job.c.machine_platform_id)
        .where(regression_case.c.regression_id == regression_id)
    ).all()
    return {(r.label, f"{r.platform}/{r.option_collection}") for r in rows}
