"""Read queries over jobs, manifests and test paths (SPEC §2), the same on both backends."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from sheriff.store.schema import (
    job,
    job_type,
    manifest,
    manifest_set_member,
    manifest_test,
    push,
    repository,
    test_path,
    triage_case,
)

Match = Literal["any", "all"]


@dataclass(frozen=True)
class PlatformConfig:
    """The part of a job's identity that says where and how it ran, not what it ran."""

    repository_id: int
    build_platform_id: int
    machine_platform_id: int
    option_collection: str


def job_manifests(conn: sa.Connection, job_id: int) -> list[str]:
    """The manifests a job ran, sorted."""
    stmt = (
        sa.select(manifest.c.path)
        .join(manifest_set_member, manifest_set_member.c.manifest_id == manifest.c.id)
        .join(job, job.c.manifest_set_id == manifest_set_member.c.manifest_set_id)
        .where(job.c.id == job_id)
        .order_by(manifest.c.path)
    )
    return list(conn.execute(stmt).scalars())


def job_test_paths(conn: sa.Connection, job_id: int) -> list[str]:
    """The test paths of the manifests a job ran, sorted and distinct."""
    stmt = (
        sa.select(test_path.c.path)
        .distinct()
        .join(manifest_test, manifest_test.c.test_path_id == test_path.c.id)
        .join(
            manifest_set_member,
            manifest_set_member.c.manifest_id == manifest_test.c.manifest_id,
        )
        .join(job, job.c.manifest_set_id == manifest_set_member.c.manifest_set_id)
        .where(job.c.id == job_id)
        .order_by(test_path.c.path)
    )
    return list(conn.execute(stmt).scalars())


def find_push_id(conn: sa.Connection, repo: str, revision: str) -> int | None:
    return conn.execute(
        sa.select(push.c.id)
        .join(repository, repository.c.id == push.c.repository_id)
        .where(repository.c.name == repo, push.c.revision == revision)
    ).scalar()


def push_task_test_paths(conn: sa.Connection, push_id: int) -> dict[str, list[str]]:
    """Label → sorted test paths, for every task of a push whose manifests are known."""
    stmt = (
        sa.select(job_type.c.name, test_path.c.path)
        .distinct()
        .select_from(job)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(
            manifest_set_member,
            manifest_set_member.c.manifest_set_id == job.c.manifest_set_id,
        )
        .join(manifest_test, manifest_test.c.manifest_id == manifest_set_member.c.manifest_id)
        .join(test_path, test_path.c.id == manifest_test.c.test_path_id)
        .where(job.c.push_id == push_id)
        .order_by(job_type.c.name, test_path.c.path)
    )
    result: dict[str, list[str]] = {}
    for label, path in conn.execute(stmt):
        result.setdefault(label, []).append(path)
    return result


def config_columns() -> tuple[sa.Column[Any], ...]:
    return (job.c.repository_id, job.c.build_platform_id, job.c.machine_platform_id,
            job.c.option_collection)  # fmt: skip


def platform_config(conn: sa.Connection, job_id: int) -> PlatformConfig | None:
    row = conn.execute(sa.select(*config_columns()).where(job.c.id == job_id)).first()
    return PlatformConfig(*row) if row else None


def case_configurations(conn: sa.Connection, case_ids: Sequence[int]) -> list[PlatformConfig]:
    """The platform configurations of these triage cases' original runs."""
    if not case_ids:
        return []
    rows = conn.execute(
        sa.select(*config_columns())
        .distinct()
        .join(triage_case, triage_case.c.job_id == job.c.id)
        .where(triage_case.c.id.in_(list(case_ids)))
    ).all()
    return by_platform({PlatformConfig(*r) for r in rows})


def by_platform(configs: Iterable[PlatformConfig]) -> list[PlatformConfig]:
    """Configurations in a stable order: machine platform, options, build platform."""
    return sorted(
        configs, key=lambda c: (c.machine_platform_id, c.option_collection, c.build_platform_id)
    )


def recent_push_ids(conn: sa.Connection, push_id: int, count: int) -> list[int]:
    """The `count` pushes of the same repository up to and including `push_id`, newest first."""
    this = conn.execute(
        sa.select(push.c.repository_id, push.c.push_time).where(push.c.id == push_id)
    ).first()
    if this is None:
        return []
    stmt = (
        sa.select(push.c.id)
        .where(push.c.repository_id == this.repository_id, push.c.push_time <= this.push_time)
        .order_by(push.c.push_time.desc(), push.c.id.desc())
        .limit(count)
    )
    return list(conn.execute(stmt).scalars())


def jobs_running_manifests(
    conn: sa.Connection,
    config: PlatformConfig,
    manifest_paths: Sequence[str],
    push_ids: Sequence[int],
    match: Match = "any",
) -> list[int]:
    """Ids of jobs on `config`, on the given pushes, that ran any / all of the manifests.

    These are the tasks a backfill with the same manifests schedules, found again by
    platform configuration and manifests rather than by label or signature.
    """
    if not manifest_paths or not push_ids:
        return []
    wanted = sa.select(manifest.c.id).where(manifest.c.path.in_(sorted(set(manifest_paths))))
    sets = (
        sa.select(manifest_set_member.c.manifest_set_id)
        .where(manifest_set_member.c.manifest_id.in_(wanted.scalar_subquery()))
        .group_by(manifest_set_member.c.manifest_set_id)
    )
    if match == "all":
        sets = sets.having(sa.func.count() == len(set(manifest_paths)))
    stmt = (
        sa.select(job.c.id)
        .where(
            job.c.manifest_set_id.in_(sets.scalar_subquery()),
            job.c.push_id.in_(list(push_ids)),
            job.c.repository_id == config.repository_id,
            job.c.build_platform_id == config.build_platform_id,
            job.c.machine_platform_id == config.machine_platform_id,
            job.c.option_collection == config.option_collection,
        )
        .order_by(job.c.push_id.desc(), job.c.id)
    )
    return list(conn.execute(stmt).scalars())


def similar_jobs(
    conn: sa.Connection, job_id: int, *, match: Match = "any", pushes: int = 10
) -> list[int]:
    """Jobs on this job's platform configuration that ran any / all of its manifests over
    the last `pushes` pushes up to its own (itself included)."""
    config = platform_config(conn, job_id)
    if config is None:
        return []
    push_id = conn.execute(sa.select(job.c.push_id).where(job.c.id == job_id)).scalar_one()
    return jobs_running_manifests(
        conn,
        config,
        job_manifests(conn, job_id),
        recent_push_ids(conn, push_id, pushes),
        match,
    )
