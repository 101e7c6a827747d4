"""Read queries behind the REST API and the dashboard: pages of pushes, jobs and verdicts.

Every function takes an open connection and returns plain dicts ready to serialise;
pages are (offset, count) windows in a stable order. Manifests and test paths are fetched
per page with one query each, never per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    job,
    job_group,
    job_type,
    manifest,
    manifest_set_member,
    manifest_test,
    platform,
    push,
    repository,
    run_observation,
    task_queue,
    test_path,
    triage_case,
)

# Treeherder's results that mean "this run failed".
FAILED_RESULTS = ("testfailed", "busted", "exception")

# Beyond this many manifest sets a filter stays a subquery (bound-parameter limits).
MAX_LISTED_SETS = 5000

# A case without a verdict yet is shown as `pending`.
PENDING = "pending"

_build_platform = platform.alias("build_platform")
_machine_platform = platform.alias("machine_platform")


def repository_id(conn: sa.Connection, name: str) -> int | None:
    return conn.execute(sa.select(repository.c.id).where(repository.c.name == name)).scalar()


def repository_sources(conn: sa.Connection, name: str) -> tuple[str | None, str | None] | None:
    """The Taskcluster root URL and Treeherder URL a repository's data was fetched from."""
    row = conn.execute(
        sa.select(repository.c.taskcluster_root_url, repository.c.treeherder_url).where(
            repository.c.name == name
        )
    ).first()
    return (row.taskcluster_root_url, row.treeherder_url) if row else None


def repositories(conn: sa.Connection) -> list[str]:
    return list(conn.execute(sa.select(repository.c.name).order_by(repository.c.name)).scalars())


# -- pushes --------------------------------------------------------------------------------


def _push_row(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "revision": row.revision,
        "pushlog_id": row.pushlog_id,
        "author": row.author,
        "message": row.message,
        "push_time": row.push_time,
        "decision_task_id": row.decision_task_id,
    }


def list_pushes(
    conn: sa.Connection, repo_id: int, *, offset: int = 0, count: int = 20
) -> list[dict[str, Any]]:
    """Pushes of a repository, newest first, each with its job, failure and verdict counts."""
    rows = conn.execute(
        sa.select(push)
        .where(push.c.repository_id == repo_id)
        .order_by(push.c.push_time.desc(), push.c.id.desc())
        .offset(offset)
        .limit(count)
    ).all()
    pushes = [_push_row(r) for r in rows]
    _add_push_counts(conn, pushes)
    return pushes


def get_push(conn: sa.Connection, repo_id: int, revision: str) -> dict[str, Any] | None:
    """One push by revision, with its counts."""
    row = conn.execute(
        sa.select(push).where(push.c.repository_id == repo_id, push.c.revision == revision)
    ).first()
    if row is None:
        return None
    found = [_push_row(row)]
    _add_push_counts(conn, found)
    return found[0]


def _add_push_counts(conn: sa.Connection, pushes: list[dict[str, Any]]) -> None:
    ids = [p["id"] for p in pushes]
    for p in pushes:
        p.update(jobs=0, failed_jobs=0, verdicts={})
    if not ids:
        return
    by_id = {p["id"]: p for p in pushes}
    failed = sa.func.sum(sa.case((job.c.result.in_(FAILED_RESULTS), 1), else_=0))
    for push_id, total, failures in conn.execute(
        sa.select(job.c.push_id, sa.func.count(), failed)
        .where(job.c.push_id.in_(ids))
        .group_by(job.c.push_id)
    ):
        by_id[push_id].update(jobs=int(total), failed_jobs=int(failures or 0))
    verdict = sa.func.coalesce(triage_case.c.verdict, PENDING)
    for push_id, name, number in conn.execute(
        sa.select(triage_case.c.push_id, verdict, sa.func.count())
        .where(triage_case.c.push_id.in_(ids))
        .group_by(triage_case.c.push_id, verdict)
    ):
        by_id[push_id]["verdicts"][name] = int(number)


# -- jobs ----------------------------------------------------------------------------------


@dataclass
class JobFilter:
    """What a jobs list may be narrowed to; empty fields do not filter."""

    push_id: int | None = None
    platform: str | None = None
    result: str | None = None
    label: str | None = None
    manifests: Sequence[str] = field(default_factory=tuple)
    test_paths: Sequence[str] = field(default_factory=tuple)
    failed_only: bool = False


_JOB_COLUMNS = (
    job.c.id,
    job.c.push_id,
    push.c.revision,
    job.c.task_id,
    job.c.run_id,
    job_type.c.name.label("label"),
    job_type.c.symbol.label("job_symbol"),
    job_group.c.name.label("group_name"),
    job_group.c.symbol.label("group_symbol"),
    _machine_platform.c.platform.label("platform"),
    _machine_platform.c.os_name.label("os_name"),
    _machine_platform.c.architecture.label("architecture"),
    _build_platform.c.platform.label("build_platform"),
    job.c.option_collection,
    job.c.tier,
    job.c.job_kind,
    task_queue.c.name.label("task_queue_id"),
    job.c.state,
    job.c.result,
    job.c.classification_id,
    job.c.action,
    job.c.parent_task_id,
    job.c.test_type,
    job.c.manifest_set_id,
    job.c.submit_time,
    job.c.start_time,
    job.c.end_time,
)


def _jobs_select() -> sa.Select:
    return (
        sa.select(*_JOB_COLUMNS)
        .select_from(job)
        .join(push, push.c.id == job.c.push_id)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(job_group, job_group.c.id == job.c.job_group_id)
        .join(_machine_platform, _machine_platform.c.id == job.c.machine_platform_id)
        .join(_build_platform, _build_platform.c.id == job.c.build_platform_id)
        .join(task_queue, task_queue.c.id == job.c.task_queue_id)
    )


def _sets_with_manifests(paths: Iterable[str]) -> sa.Select:
    wanted = sa.select(manifest.c.id).where(manifest.c.path.in_(sorted(set(paths))))
    return sa.select(manifest_set_member.c.manifest_set_id).where(
        manifest_set_member.c.manifest_id.in_(wanted.scalar_subquery())
    )


def _sets_with_test_paths(paths: Iterable[str]) -> sa.Select:
    wanted = sa.select(test_path.c.id).where(test_path.c.path.in_(sorted(set(paths))))
    return (
        sa.select(manifest_set_member.c.manifest_set_id)
        .join(manifest_test, manifest_test.c.manifest_id == manifest_set_member.c.manifest_id)
        .where(manifest_test.c.test_path_id.in_(wanted.scalar_subquery()))
    )


def list_jobs(
    conn: sa.Connection,
    repo_id: int,
    filters: JobFilter,
    *,
    offset: int = 0,
    count: int = 50,
    include_manifests: bool = False,
    include_test_paths: bool = False,
) -> list[dict[str, Any]]:
    """Jobs of a repository, newest first, narrowed by `filters`.

    The page of ids is chosen on the job table alone, then its rows are joined: the
    planner then never joins a million rows to throw most of them away.
    """
    stmt = sa.select(job.c.id).where(job.c.repository_id == repo_id)
    if filters.push_id is not None:
        stmt = stmt.where(job.c.push_id == filters.push_id)
    if filters.platform:
        stmt = stmt.where(
            job.c.machine_platform_id.in_(
                sa.select(platform.c.id).where(platform.c.platform == filters.platform)
            )
        )
    if filters.result:
        stmt = stmt.where(job.c.result == filters.result)
    if filters.failed_only:
        stmt = stmt.where(job.c.result.in_(FAILED_RESULTS))
    if filters.label:
        stmt = stmt.where(
            job.c.job_type_id.in_(sa.select(job_type.c.id).where(job_type.c.name == filters.label))
        )
    # Each manifest / test path named narrows further: a job must have run all of them.
    # The sets are looked up first so that the planner sees a list it can use the
    # (manifest_set_id, push_id) index with; behind a subquery PostgreSQL scans every job.
    for paths, sets_of in (
        (filters.manifests, _sets_with_manifests),
        (filters.test_paths, _sets_with_test_paths),
    ):
        for path in dict.fromkeys(paths):
            set_ids = sorted(set(conn.execute(sets_of([path])).scalars()))
            if not set_ids:
                return []
            if len(set_ids) > MAX_LISTED_SETS:  # keep within bound-parameter limits
                stmt = stmt.where(job.c.manifest_set_id.in_(sets_of([path]).scalar_subquery()))
            else:
                stmt = stmt.where(job.c.manifest_set_id.in_(set_ids))
    newest_first = job.c.id.desc()
    if filters.push_id is not None or filters.manifests or filters.test_paths:
        # These filters have an index that finds a few thousand rows at most. Ordered by
        # the bare primary key, PostgreSQL would rather walk that key backwards hoping to
        # meet matching rows soon, and a push's jobs sit together: on a million jobs that
        # walk takes half a second. `id + 0` is not the key, so the planner uses the index
        # and sorts the few rows instead.
        newest_first = (job.c.id + 0).desc()
    ids = list(conn.execute(stmt.order_by(newest_first).offset(offset).limit(count)).scalars())
    return jobs_by_id(
        conn, ids, include_manifests=include_manifests, include_test_paths=include_test_paths
    )


def jobs_by_id(
    conn: sa.Connection,
    job_ids: Sequence[int],
    *,
    include_manifests: bool = False,
    include_test_paths: bool = False,
) -> list[dict[str, Any]]:
    """The given jobs, in the given order."""
    if not job_ids:
        return []
    found: dict[int, dict[str, Any]] = {}
    for start in range(0, len(job_ids), 500):
        chunk = list(job_ids[start : start + 500])
        for row in _job_rows(conn.execute(_jobs_select().where(job.c.id.in_(chunk)))):
            found[row["id"]] = row
    jobs = [found[i] for i in job_ids if i in found]
    return _decorate(conn, jobs, include_manifests, include_test_paths)


def get_job(conn: sa.Connection, repo_id: int, job_id: int) -> dict[str, Any] | None:
    """One job of a repository, with its manifests."""
    row = conn.execute(
        _jobs_select().where(job.c.id == job_id, job.c.repository_id == repo_id)
    ).first()
    if row is None:
        return None
    return _decorate(conn, [_job_row(row)], True, False)[0]


def _job_row(row: Any) -> dict[str, Any]:
    return dict(row._mapping)


def _job_rows(result: sa.CursorResult) -> Iterable[dict[str, Any]]:
    """`_job_row` for a whole result: plain tuples zipped with the names once (a page of
    500 jobs spent more time in per-row mappings than in the query)."""
    names = [str(name) for name in result.keys()]  # noqa: SIM118 - a result, not a dict
    for values in result:
        yield dict(zip(names, values, strict=True))


def _decorate(
    conn: sa.Connection,
    jobs: list[dict[str, Any]],
    include_manifests: bool,
    include_test_paths: bool,
) -> list[dict[str, Any]]:
    _add_verdicts(conn, jobs)
    set_ids = {j["manifest_set_id"] for j in jobs if j["manifest_set_id"] is not None}
    if include_manifests:
        by_set = manifests_of_sets(conn, set_ids)
        for j in jobs:
            j["manifests"] = by_set.get(j["manifest_set_id"], [])
    if include_test_paths:
        by_set = test_paths_of_sets(conn, set_ids)
        for j in jobs:
            j["test_paths"] = by_set.get(j["manifest_set_id"], [])
    return jobs


def manifests_of_sets(conn: sa.Connection, set_ids: Iterable[int]) -> dict[int, list[str]]:
    """Manifest set id → its manifests, sorted."""
    ids = sorted(set(set_ids))
    result: dict[int, list[str]] = {i: [] for i in ids}
    for start in range(0, len(ids), 500):
        rows = conn.execute(
            sa.select(manifest_set_member.c.manifest_set_id, manifest.c.path)
            .join(manifest, manifest.c.id == manifest_set_member.c.manifest_id)
            .where(manifest_set_member.c.manifest_set_id.in_(ids[start : start + 500]))
            .order_by(manifest.c.path)
        )
        for set_id, path in rows:
            result[set_id].append(path)
    return result


def test_paths_of_sets(conn: sa.Connection, set_ids: Iterable[int]) -> dict[int, list[str]]:
    """Manifest set id → the distinct test paths of its manifests, sorted."""
    ids = sorted(set(set_ids))
    members: dict[int, list[int]] = {i: [] for i in ids}
    for start in range(0, len(ids), 500):
        for set_id, manifest_id in conn.execute(
            sa.select(
                manifest_set_member.c.manifest_set_id, manifest_set_member.c.manifest_id
            ).where(manifest_set_member.c.manifest_set_id.in_(ids[start : start + 500]))
        ):
            members[set_id].append(manifest_id)
    # Sets on one page share most manifests: fetch each manifest's tests once, merge here
    # (cheaper than a DISTINCT … ORDER BY over the whole join).
    manifest_ids = sorted({m for ms in members.values() for m in ms})
    tests: dict[int, list[str]] = {m: [] for m in manifest_ids}
    for start in range(0, len(manifest_ids), 500):
        for manifest_id, path in conn.execute(
            sa.select(manifest_test.c.manifest_id, test_path.c.path)
            .join(test_path, test_path.c.id == manifest_test.c.test_path_id)
            .where(manifest_test.c.manifest_id.in_(manifest_ids[start : start + 500]))
        ):
            tests[manifest_id].append(path)
    return {
        set_id: sorted({path for m in ms for path in tests[m]}) for set_id, ms in members.items()
    }


def _add_verdicts(conn: sa.Connection, jobs: list[dict[str, Any]]) -> None:
    """The verdict of each job's case: its own, or that of the original run it retried."""
    for j in jobs:
        j["verdict"] = None
        j["case_id"] = None
    keys = {(j["push_id"], j["label"]) for j in jobs}
    if not keys:
        return
    cases: dict[tuple[int, str], tuple[int, str]] = {}
    push_ids = sorted({k[0] for k in keys})
    for start in range(0, len(push_ids), 500):
        rows = conn.execute(
            sa.select(
                triage_case.c.push_id,
                triage_case.c.label,
                triage_case.c.id,
                sa.func.coalesce(triage_case.c.verdict, PENDING),
            ).where(triage_case.c.push_id.in_(push_ids[start : start + 500]))
        )
        for push_id, label, case_id, verdict in rows:
            # Treeherder's job type keeps 99 characters of the label.
            cases[(push_id, label[:99])] = (case_id, verdict)
    for j in jobs:
        case = cases.get((j["push_id"], j["label"]))
        if case:
            j["case_id"], j["verdict"] = case


def job_runs(conn: sa.Connection, job_row: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run of the job's label on its push (original, retriggers, backfills), oldest
    first, each with what Treeherder said about it."""
    ids = list(
        conn.execute(
            sa.select(job.c.id)
            .join(job_type, job_type.c.id == job.c.job_type_id)
            .where(job.c.push_id == job_row["push_id"], job_type.c.name == job_row["label"])
            .order_by(job.c.submit_time, job.c.id)
        ).scalars()
    )
    runs = jobs_by_id(conn, ids)
    observations = {
        row.job_id: row
        for row in conn.execute(sa.select(run_observation).where(run_observation.c.job_id.in_(ids)))
    }
    for run in runs:
        seen = observations.get(run["id"])
        run["treeherder_job_id"] = seen.treeherder_job_id if seen else None
        run["parse_status"] = seen.parse_status if seen else None
        run["errorsummary"] = seen.errorsummary if seen else None
        run["failure_lines"] = list(seen.failure_lines or []) if seen else []
        run["raw_failure_lines"] = list(seen.raw_failure_lines or []) if seen else []
        run["structured_failures"] = list(seen.structured_failures or []) if seen else []
    return runs


# -- verdicts ------------------------------------------------------------------------------


@dataclass
class VerdictFilter:
    """What a verdict list may be narrowed to; empty fields do not filter."""

    repository_id: int | None = None
    push_ids: list[int] | None = None  # a revision's pushes (one per repository at most)
    verdict: str | None = None
    policy: str | None = None
    state: str | None = None
    label: str | None = None
    since: datetime | None = None


def _case_row(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "job_id": row.job_id,
        "repository": row.repository,
        "revision": row.revision,
        "push_id": row.push_id,
        "label": row.label,
        "state": row.state,
        "verdict": row.verdict or PENDING,
        "rule": row.rule,
        "policy": row.policy,
        "p_regression": row.p_regression,
        "runs_wanted": row.runs_wanted,
        "retriggers_requested": row.retriggers_requested,
        "evidence": row.evidence,
        "opened_at": row.opened_at,
        "decided_at": row.decided_at,
        "updated_at": row.updated_at,
    }


def _cases_select() -> sa.Select:
    return (
        sa.select(
            triage_case,
            repository.c.name.label("repository"),
            push.c.revision,
        )
        .join(push, push.c.id == triage_case.c.push_id)
        .join(repository, repository.c.id == push.c.repository_id)
    )


def list_verdicts(
    conn: sa.Connection, filters: VerdictFilter, *, offset: int = 0, count: int = 50
) -> list[dict[str, Any]]:
    """Triage cases with their verdicts and evidence, most recently opened first."""
    stmt = _cases_select()
    if filters.repository_id is not None:
        stmt = stmt.where(push.c.repository_id == filters.repository_id)
    if filters.push_ids is not None:
        stmt = stmt.where(triage_case.c.push_id.in_(filters.push_ids))
    if filters.verdict == PENDING:
        stmt = stmt.where(triage_case.c.verdict.is_(None))
    elif filters.verdict:
        stmt = stmt.where(triage_case.c.verdict == filters.verdict)
    if filters.policy:
        stmt = stmt.where(triage_case.c.policy == filters.policy)
    if filters.state:
        stmt = stmt.where(triage_case.c.state == filters.state)
    if filters.label:
        stmt = stmt.where(triage_case.c.label == filters.label)
    if filters.since is not None:
        stmt = stmt.where(triage_case.c.opened_at >= filters.since)
    stmt = (
        stmt.order_by(triage_case.c.opened_at.desc(), triage_case.c.id.desc())
        .offset(offset)
        .limit(count)
    )
    return [_case_row(r) for r in conn.execute(stmt)]


def case_of_job(conn: sa.Connection, job_row: dict[str, Any]) -> dict[str, Any] | None:
    """The triage case the job belongs to (its own, or its original run's)."""
    if job_row.get("case_id") is None:
        return None
    row = conn.execute(_cases_select().where(triage_case.c.id == job_row["case_id"])).first()
    return _case_row(row) if row else None


def pushes_of_revision(conn: sa.Connection, revision: str, repo_id: int | None) -> list[int]:
    """The pushes of a revision: in one repository, or in every one that has it."""
    stmt = sa.select(push.c.id).where(push.c.revision == revision)
    if repo_id is not None:
        stmt = stmt.where(push.c.repository_id == repo_id)
    return list(conn.execute(stmt.order_by(push.c.id)).scalars())


# What a push's page shows of each of its (thousands of) runs: no times, no task ids.
_PUSH_PAGE_COLUMNS = (
    job.c.id,
    job.c.push_id,
    job_type.c.name.label("label"),
    job_type.c.symbol.label("job_symbol"),
    job_group.c.name.label("group_name"),
    job_group.c.symbol.label("group_symbol"),
    _machine_platform.c.platform.label("platform"),
    job.c.option_collection,
    job.c.tier,
    job.c.result,
    job.c.classification_id,
    job.c.action,
)


def jobs_of_push(conn: sa.Connection, push_id: int) -> list[dict[str, Any]]:
    """The push's runs by platform then label, with their case's verdict and
    P(regression), and `has_case` for the originals of cases: the columns a push's page
    shows."""
    stmt = (
        sa.select(*_PUSH_PAGE_COLUMNS)
        .select_from(job)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(job_group, job_group.c.id == job.c.job_group_id)
        .join(_machine_platform, _machine_platform.c.id == job.c.machine_platform_id)
        .where(job.c.push_id == push_id)
    )
    stmt = stmt.order_by(
        _machine_platform.c.platform, job.c.option_collection, job_type.c.name, job.c.id
    )
    jobs = list(_job_rows(conn.execute(stmt)))
    _add_verdicts(conn, jobs)
    cases = conn.execute(
        sa.select(triage_case.c.id, triage_case.c.job_id, triage_case.c.p_regression).where(
            triage_case.c.push_id == push_id
        )
    ).all()
    p_by_case = {c.id: c.p_regression for c in cases}
    originals = {c.job_id for c in cases}
    for j in jobs:
        j["p_regression"] = p_by_case.get(j["case_id"])
        j["has_case"] = j["id"] in originals
    return jobs


# -- backfills -----------------------------------------------------------------------------


@dataclass
class BackfillFilter:
    """What a backfill list may be narrowed to; empty fields do not filter."""

    repository_id: int | None = None
    push_ids: list[int] | None = None  # a revision's pushes (one per repository at most)
    status: str | None = None
    source: str | None = None
    label: str | None = None


def _report_row(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "repository": row.repository,
        "revision": row.revision,
        "push_id": row.push_id,
        "job_id": row.job_id,
        "case_id": row.case_id,
        "source": row.source,
        "label": row.label,
        "strategy": row.strategy,
        "same_manifests": row.same_manifests,
        "tests": list(row.tests or []),
        "failure_lines": list(row.failure_lines or []),
        "fail_rate": row.fail_rate,
        "status": row.status,
        "culprit_push_id": row.culprit_push_id,
        "culprit_revision": row.culprit_revision,
        "reason": row.reason,
        "opened_at": row.opened_at,
        "mature_at": row.mature_at,
        "closed_at": row.closed_at,
        "updated_at": row.updated_at,
    }


def list_backfills(
    conn: sa.Connection, filters: BackfillFilter, *, offset: int = 0, count: int = 50
) -> list[dict[str, Any]]:
    """Backfill reports, newest first, each with its records and their push windows."""
    stmt = (
        sa.select(backfill_report, repository.c.name.label("repository"), push.c.revision)
        .join(push, push.c.id == backfill_report.c.push_id)
        .join(repository, repository.c.id == backfill_report.c.repository_id)
    )
    if filters.repository_id is not None:
        stmt = stmt.where(backfill_report.c.repository_id == filters.repository_id)
    if filters.push_ids is not None:
        stmt = stmt.where(backfill_report.c.push_id.in_(filters.push_ids))
    if filters.status:
        stmt = stmt.where(backfill_report.c.status == filters.status)
    if filters.source:
        stmt = stmt.where(backfill_report.c.source == filters.source)
    if filters.label:
        stmt = stmt.where(backfill_report.c.label == filters.label)
    stmt = (
        stmt.order_by(backfill_report.c.opened_at.desc(), backfill_report.c.id.desc())
        .offset(offset)
        .limit(count)
    )
    reports = [_report_row(r) for r in conn.execute(stmt)]
    _add_records(conn, reports)
    return reports


def get_backfill(conn: sa.Connection, report_id: int) -> dict[str, Any] | None:
    """One backfill report with its records and their push windows."""
    row = conn.execute(
        sa.select(backfill_report, repository.c.name.label("repository"), push.c.revision)
        .join(push, push.c.id == backfill_report.c.push_id)
        .join(repository, repository.c.id == backfill_report.c.repository_id)
        .where(backfill_report.c.id == report_id)
    ).first()
    if row is None:
        return None
    reports = [_report_row(row)]
    _add_records(conn, reports)
    return reports[0]


def _add_records(conn: sa.Connection, reports: list[dict[str, Any]]) -> None:
    for report in reports:
        report["records"] = []
        report["runs_requested"] = 0
    if not reports:
        return
    by_id = {r["id"]: r for r in reports}
    records = conn.execute(
        sa.select(backfill_record)
        .where(backfill_record.c.report_id.in_(list(by_id)))
        .order_by(backfill_record.c.id)
    ).all()
    push_ids: set[int] = set()
    for record in records:
        context = record.context if isinstance(record.context, dict) else {}
        push_ids.update(p for p in context.get("window") or [] if isinstance(p, int))
    pushes = {
        row.id: row
        for row in conn.execute(
            sa.select(push.c.id, push.c.revision, push.c.push_time, push.c.author).where(
                push.c.id.in_(sorted(push_ids))
            )
        )
    }
    manifests = manifests_of_sets(
        conn, {r.manifest_set_id for r in records if r.manifest_set_id is not None}
    )
    for record in records:
        report = by_id[record.report_id]
        window = _window(record.context, pushes, report["culprit_push_id"])
        requested = sum(p["runs_requested"] for p in window)
        report["runs_requested"] += requested
        report["records"].append(
            {
                "id": record.id,
                "job_id": record.job_id,
                "label": record.label,
                "platform": record.platform,
                "option_collection": record.option_collection,
                "tier": record.tier,
                "manifests": manifests.get(record.manifest_set_id, []),
                "status": record.status,
                "actions_triggered": record.actions_triggered,
                "runs_in_progress": record.runs_in_progress,
                "runs_successful": record.runs_successful,
                "runs_failed": record.runs_failed,
                "runs_requested": requested,
                "iterations": record.iterations,
                "reason": record.reason,
                "created_at": record.created_at,
                "triggered_at": record.triggered_at,
                "updated_at": record.updated_at,
                "window": window,
            }
        )


def _window(context: Any, pushes: dict[int, Any], culprit: int | None) -> list[dict[str, Any]]:
    """The record's suspect range, oldest push first, with each push's outcome so far."""
    if not isinstance(context, dict):
        return []
    outcomes = context.get("outcomes") or {}
    requested = context.get("requested") or {}
    untestable = set(context.get("untestable") or [])
    window = []
    for push_id in context.get("window") or []:
        found = pushes.get(push_id)
        if found is None:
            continue  # cycled away
        asks = requested.get(str(push_id)) or []
        window.append(
            {
                "push_id": push_id,
                "revision": found.revision,
                "author": found.author,
                "push_time": found.push_time,
                "outcome": str(outcomes.get(str(push_id), "unknown")),
                "untestable": push_id in untestable,
                "runs_requested": sum(int(a.get("times", 0)) for a in asks if isinstance(a, dict)),
                "culprit": push_id == culprit,
            }
        )
    return window


def backfills_of(
    conn: sa.Connection,
    *,
    job_ids: Sequence[int] = (),
    push_id: int | None = None,
    report_ids: Sequence[int] = (),
) -> list[dict[str, Any]]:
    """(id, status, label, culprit) of reports about these jobs, seen on this push, or
    with these ids."""
    conditions = []
    if job_ids:
        conditions.append(backfill_report.c.job_id.in_(list(job_ids)))
    if report_ids:
        conditions.append(backfill_report.c.id.in_(list(report_ids)))
    if push_id is not None:
        conditions.append(backfill_report.c.push_id == push_id)
    if not conditions:
        return []
    rows = conn.execute(
        sa.select(
            backfill_report.c.id,
            backfill_report.c.status,
            backfill_report.c.label,
            backfill_report.c.culprit_revision,
        )
        .where(sa.or_(*conditions))
        .order_by(backfill_report.c.id)
    )
    return [dict(r._mapping) for r in rows]
