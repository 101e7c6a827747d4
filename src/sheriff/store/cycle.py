"""Data cycling (SPEC §2): delete jobs of pushes older than a cutoff, then what only they used.

Jobs go in chunks, each chunk its own transaction together with every row that hangs off
those jobs (found from the schema's foreign keys, so tables added later are covered).
Then pushes left without jobs, then manifest sets, manifests and test paths that nothing
references any more. Only rows older than the cutoff are deleted, and a run that stops
half way leaves a consistent database that the next run finishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.store.schema import (
    job,
    manifest,
    manifest_set,
    manifest_set_member,
    manifest_test,
    metadata,
    push,
    push_label_manifest_set,
    test_path,
)

DEFAULT_DAYS = 120
DEFAULT_CHUNK_SIZE = 5000

# (stage, rows deleted in this step) after every committed chunk.
Progress = Callable[[str, int], None]


@dataclass
class CycleStats:
    """Rows deleted, per table."""

    cutoff: datetime
    deleted: dict[str, int] = field(default_factory=dict)

    def add(self, table: str, rows: int) -> None:
        if rows:
            self.deleted[table] = self.deleted.get(table, 0) + rows


def cutoff_for(days: int, now: datetime | None = None) -> datetime:
    """The moment before which data has expired."""
    if days < 1:
        raise ValueError("days must be at least 1")
    return (now or datetime.now(UTC)) - timedelta(days=days)


def _bound(conn: sa.Connection, moment: datetime) -> datetime:
    # SQLite stores naive UTC text, so compare with a naive UTC bound.
    moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None) if conn.dialect.name == "sqlite" else moment


def _referencing(target: sa.Table) -> list[tuple[sa.Table, sa.Column]]:
    """(table, column) pairs whose foreign key points at `target`'s primary key."""
    found = []
    for table in metadata.sorted_tables:
        for fk in table.foreign_keys:
            if fk.column.table is target and fk.parent.table is not target:
                found.append((table, fk.parent))
    return found


def _delete_dependents(
    conn: sa.Connection,
    target: sa.Table,
    ids: sa.Select | list[int],
    stats: CycleStats,
    depth: int = 0,
) -> None:
    """Delete (or detach, for nullable keys) rows referencing `target` rows with `ids`."""
    if depth > 8:  # the schema has no reference cycle; this only guards against one
        raise RuntimeError(f"foreign keys nest too deep below {target.name}")
    for table, column in _referencing(target):
        where = column.in_(ids)
        if column.nullable:
            # An optional reference (the case a backfill report came from): forget it.
            conn.execute(table.update().where(where).values({column.name: None}))
            continue
        pk = list(table.primary_key.columns)
        if len(pk) == 1:
            _delete_dependents(conn, table, sa.select(pk[0]).where(where), stats, depth + 1)
        result = conn.execute(table.delete().where(where))
        stats.add(table.name, result.rowcount)


def _expired(conn: sa.Connection, cutoff: datetime) -> sa.ColumnElement[bool]:
    # A push's jobs expire with it, so jobs are found through the push's time (the push
    # table is small) and need no index of their own on submit_time.
    pushes = sa.select(push.c.id).where(push.c.push_time < _bound(conn, cutoff))
    return job.c.push_id.in_(pushes.scalar_subquery())


def delete_expired_jobs(
    engine: Engine,
    cutoff: datetime,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    stats: CycleStats,
    progress: Progress | None = None,
) -> None:
    """Delete jobs of pushes before `cutoff`, `chunk_size` at a time, one transaction each."""
    while True:
        with engine.begin() as conn:
            ids = list(
                conn.execute(
                    sa.select(job.c.id)
                    .where(_expired(conn, cutoff))
                    .order_by(job.c.id)
                    .limit(chunk_size)
                ).scalars()
            )
            if not ids:
                return
            _delete_dependents(conn, job, ids, stats)
            deleted = conn.execute(job.delete().where(job.c.id.in_(ids))).rowcount
            stats.add("job", deleted)
        if progress:
            progress("job", deleted)


def expired_job_count(engine: Engine, cutoff: datetime) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).where(_expired(conn, cutoff))).scalar_one()


def _unreferenced(table: sa.Table, ignore: tuple[sa.Table, ...] = ()) -> sa.Select:
    """Ids of `table` rows that no row of any other table (but `ignore`) points at."""
    (pk,) = table.primary_key.columns
    conditions = [
        ~sa.exists().where(column == pk)
        for other, column in _referencing(table)
        if other not in ignore
    ]
    return sa.select(pk).where(*conditions)


def _delete_in_chunks(
    engine: Engine,
    table: sa.Table,
    candidates: Callable[[sa.Connection], sa.Select],
    *,
    chunk_size: int,
    stats: CycleStats,
    progress: Progress | None,
    before: tuple[sa.Table, ...] = (),
) -> None:
    """Delete rows chosen by `candidates`, first their rows in the `before` link tables."""
    (pk,) = table.primary_key.columns
    while True:
        with engine.begin() as conn:
            ids = list(conn.execute(candidates(conn).order_by(pk).limit(chunk_size)).scalars())
            if not ids:
                return
            for other, column in _referencing(table):
                if other in before:
                    removed = conn.execute(other.delete().where(column.in_(ids))).rowcount
                    stats.add(other.name, removed)
            deleted = conn.execute(table.delete().where(pk.in_(ids))).rowcount
            stats.add(table.name, deleted)
        if progress:
            progress(table.name, deleted)


def cycle(
    engine: Engine,
    *,
    days: int = DEFAULT_DAYS,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    now: datetime | None = None,
    progress: Progress | None = None,
) -> CycleStats:
    """Delete everything older than `days` days that nothing newer needs; returns counts."""
    if chunk_size < 1:
        raise ValueError("chunk size must be at least 1")
    cutoff = cutoff_for(days, now)
    stats = CycleStats(cutoff=cutoff)
    delete_expired_jobs(engine, cutoff, chunk_size=chunk_size, stats=stats, progress=progress)

    common = {"chunk_size": chunk_size, "stats": stats, "progress": progress}

    def expired_pushes(conn: sa.Connection) -> sa.Select:
        # Pushes whose jobs are all gone; one still named by a case or a backfill stays.
        return _unreferenced(push, ignore=(push_label_manifest_set,)).where(
            push.c.push_time < _bound(conn, cutoff)
        )

    _delete_in_chunks(engine, push, expired_pushes, before=(push_label_manifest_set,), **common)
    _delete_in_chunks(
        engine,
        manifest_set,
        lambda _: _unreferenced(manifest_set, ignore=(manifest_set_member,)),
        before=(manifest_set_member,),
        **common,
    )
    _delete_in_chunks(
        engine,
        manifest,
        lambda _: _unreferenced(manifest, ignore=(manifest_test,)),
        before=(manifest_test,),
        **common,
    )
    _delete_in_chunks(engine, test_path, lambda _: _unreferenced(test_path), **common)
    return stats
