"""The manifest queries of SPEC §2 on both databases."""

from __future__ import annotations

import sqlalchemy as sa

from sheriff.model.job import job_from_task
from sheriff.store import queries
from sheriff.store.loader import load_jobs, load_push_manifests
from sheriff.store.schema import job, job_type
from tests.factories import new_task_id, task_on_push

A, B, C, D = "a/browser.toml", "b/browser.toml", "c/browser.toml", "d/browser.toml"


def _load(engine, specs):
    """specs: (push index, label, platform, manifests) → {(push, label, platform): job id}."""
    jobs = []
    for push_index, label, plat, manifests in specs:
        task = task_on_push(push_index, label, plat, manifests)
        jobs.append(job_from_task(new_task_id(), task))
    with engine.begin() as conn:
        load_jobs(conn, jobs)
        rows = conn.execute(
            sa.select(job.c.id, job.c.push_id, job_type.c.name, job.c.task_id).join(
                job_type, job_type.c.id == job.c.job_type_id
            )
        ).all()
    by_task = {r.task_id: r.id for r in rows}
    return {(s[0], s[1], s[2]): by_task[j.task_id] for s, j in zip(specs, jobs, strict=True)}


LINUX, WIN = "linux1804-64-qr", "windows11-64-24h2"


def test_job_manifests_and_test_paths(engine) -> None:
    ids = _load(engine, [(0, "bc1", LINUX, [B, A])])
    with engine.begin() as conn:
        push_id = conn.execute(sa.select(job.c.push_id)).scalar()
        load_push_manifests(conn, push_id, {}, {A: ["a/t1.js", "a/t2.js"], B: ["b/t1.js"]})
    with engine.connect() as conn:
        job_id = ids[(0, "bc1", LINUX)]
        assert queries.job_manifests(conn, job_id) == [A, B]
        assert queries.job_test_paths(conn, job_id) == ["a/t1.js", "a/t2.js", "b/t1.js"]
        assert queries.push_task_test_paths(conn, push_id) == {
            "bc1": ["a/t1.js", "a/t2.js", "b/t1.js"]
        }
        assert queries.find_push_id(conn, "autoland", "rev00") == push_id


def test_similar_jobs_by_platform_and_manifests_across_pushes(engine) -> None:
    # Dynamic chunking: the label bc1 runs other manifests on other pushes.
    ids = _load(
        engine,
        [
            (0, "bc1", LINUX, [A, B]),
            (1, "bc2", LINUX, [A, C]),  # same platform, shares A only
            (2, "bc1", LINUX, [C, D]),  # same label, no manifest in common
            (3, "bc3", LINUX, [B, A, D]),  # contains all of A, B
            (3, "bc1", WIN, [A, B]),  # other platform
            (4, "bc1", LINUX, [A, B]),  # the job we ask about
            (5, "bc1", LINUX, [A, B]),  # a later push: outside "up to its own"
        ],
    )
    me = ids[(4, "bc1", LINUX)]
    with engine.connect() as conn:
        any_ = set(queries.similar_jobs(conn, me, match="any", pushes=10))
        all_ = set(queries.similar_jobs(conn, me, match="all", pushes=10))
        near = set(queries.similar_jobs(conn, me, match="any", pushes=2))
    assert any_ == {me, ids[(0, "bc1", LINUX)], ids[(1, "bc2", LINUX)], ids[(3, "bc3", LINUX)]}
    assert all_ == {me, ids[(0, "bc1", LINUX)], ids[(3, "bc3", LINUX)]}
    assert near == {me, ids[(3, "bc3", LINUX)]}


def test_similar_jobs_of_a_job_without_manifests_is_empty(engine) -> None:
    ids = _load(engine, [(0, "bc1", LINUX, None)])
    with engine.connect() as conn:
        assert queries.similar_jobs(conn, ids[(0, "bc1", LINUX)]) == []
        assert queries.similar_jobs(conn, 999_999) == []
