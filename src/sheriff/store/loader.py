"""Bulk loading of pushes, jobs, manifests and test paths.

Everything here works on sets of rows inside the caller's transaction: interned strings
go in with one `INSERT … ON CONFLICT DO NOTHING` per table and come back with one
`SELECT`, jobs with one executemany per batch. Loading the same rows twice changes
nothing, and a job's state only ever moves forward (pending → running → completed).
"""

from __future__ import annotations

import hashlib
import operator
from collections import ChainMap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from sheriff.model.job import (
    STATE_RANK,
    PushDetails,
    PushRef,
    TaskJob,
    TaskShapeError,
    run_state_and_result,
)
from sheriff.model.task_shapes import RunShape
from sheriff.store.schema import (
    JOB_KINDS,
    job,
    job_group,
    job_type,
    manifest,
    manifest_set,
    manifest_set_member,
    manifest_test,
    platform,
    push,
    push_label_manifest_set,
    repository,
    task_queue,
    test_path,
)
from sheriff.store.schema.base import slugid_bytes

# Keeps every statement's bound parameters well under SQLite's and PostgreSQL's limits.
CHUNK = 500
# Above this many runs, PostgreSQL loads go through COPY instead of multi-row INSERTs.
COPY_THRESHOLD = 2000


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def matching(
    conn: sa.Connection, column: sa.ColumnElement[Any], values: Sequence[Any]
) -> Iterable[sa.ColumnElement[bool]]:
    """Conditions that together select the rows whose `column` is one of `values`.

    PostgreSQL takes them all as one array (`= ANY(…)`, one statement, no IN list to
    render); SQLite gets IN lists of CHUNK values.
    """
    if conn.dialect.name == "postgresql":
        if values:
            yield column == sa.any_(
                sa.bindparam(None, list(values), type_=postgresql.ARRAY(column.type))
            )
        return
    for chunk in chunks(values):
        yield column.in_(chunk)


def insert_ignoring_conflicts(conn: sa.Connection, table: sa.Table, rows: list[dict]) -> None:
    """INSERT rows, skipping any that collide with a unique key (both backends)."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        # One statement whatever the number of rows: each column as an array, unnested
        # (an executemany sends one statement per row).
        columns = list(rows[0])
        arrays = [
            sa.bindparam(None, [r[c] for r in rows], type_=postgresql.ARRAY(table.c[c].type))
            for c in columns
        ]
        unnested = sa.func.unnest(*arrays).table_valued(*columns).render_derived()
        conn.execute(
            postgresql.insert(table)
            .from_select(columns, sa.select(*(unnested.c[c] for c in columns)))
            .on_conflict_do_nothing()
        )
        return
    stmt = sqlite.insert(table).on_conflict_do_nothing()
    for chunk in chunks(rows):
        conn.execute(stmt, list(chunk))


def manifest_set_digest(paths: Iterable[str]) -> str:
    """The interning key of a set of manifests (never used as a job's identity)."""
    return hashlib.sha1("\n".join(sorted(set(paths))).encode()).hexdigest()


@dataclass
class LoadStats:
    """What one load did, for the CLI and the tests."""

    pushes: int = 0
    jobs_inserted: int = 0
    jobs_updated: int = 0
    jobs_unchanged: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


class Interner:
    """Maps strings (or tuples of them) to the ids of their rows, creating missing rows.

    One instance serves one transaction: what it creates must not outlive a rollback, so
    `known` (ids committed earlier, read only) is kept apart from what this transaction
    found or made, which `publish` adds to `known` once the transaction has committed.
    """

    def __init__(
        self, conn: sa.Connection, known: dict[str, dict[tuple, int]] | None = None
    ) -> None:
        self.conn = conn
        self._known = known if known is not None else {}
        self._cache: dict[str, dict[tuple, int]] = {}

    def _table_cache(self, name: str) -> ChainMap[tuple, int]:
        return ChainMap(self._cache.setdefault(name, {}), self._known.get(name, {}))

    def publish(self, known: dict[str, dict[tuple, int]]) -> None:
        """Add what this (committed) transaction interned to `known`."""
        for name, ids in self._cache.items():
            known.setdefault(name, {}).update(ids)

    def ids(
        self, table: sa.Table, columns: tuple[str, ...], keys: Iterable[tuple]
    ) -> Mapping[tuple, int]:
        cache = self._table_cache(table.name)
        missing = sorted({k for k in keys if k not in cache})
        if missing:
            # Most strings are stored already: look them up first and insert only the rest
            # (an INSERT … ON CONFLICT costs a speculative insertion per row).
            self._select_into(cache, table, columns, missing)
            new = [k for k in missing if k not in cache]
            if new:
                insert_ignoring_conflicts(
                    self.conn, table, [dict(zip(columns, k, strict=True)) for k in new]
                )
                self._select_into(cache, table, columns, new)
        return cache

    def _select_into(
        self,
        cache: ChainMap[tuple, int],
        table: sa.Table,
        columns: tuple[str, ...],
        keys: Sequence[tuple],
    ) -> None:
        cols = [table.c[c] for c in columns]
        wanted = set(keys)
        # Filter on the first column only: PostgreSQL plans a row-value IN list as a
        # sequential scan, while a plain IN list uses the unique index.
        firsts = sorted({k[0] for k in keys})
        for condition in matching(self.conn, cols[0], firsts):
            rows = self.conn.execute(sa.select(table.c.id, *cols).where(condition))
            for row in rows:
                key = tuple(row[1:])
                if key in wanted:
                    cache[key] = row[0]

    def id(self, table: sa.Table, columns: tuple[str, ...], key: tuple) -> int:
        return self.ids(table, columns, [key])[key]

    def manifest_sets(self, sets: Iterable[tuple[str, ...]]) -> dict[tuple[str, ...], int]:
        """Ids of manifest sets (tuples of paths), storing each new set and its members once."""
        wanted = {tuple(sorted(set(s))) for s in sets}
        by_digest = {manifest_set_digest(s): s for s in wanted}
        cache = self._table_cache("manifest_set")
        new_digests = [d for d in by_digest if (d,) not in cache]
        if new_digests:
            existing = self._select_sets(new_digests)
            fresh = [d for d in new_digests if d not in existing]
            # Only the members of sets not stored yet need their manifests' ids.
            manifest_ids = self.ids(
                manifest, ("path",), {(p,) for d in fresh for p in by_digest[d]}
            )
            insert_ignoring_conflicts(
                self.conn,
                manifest_set,
                [{"digest": d, "size": len(by_digest[d])} for d in fresh],
            )
            created = self._select_sets(fresh)
            insert_ignoring_conflicts(
                self.conn,
                manifest_set_member,
                [
                    {"manifest_set_id": created[d], "manifest_id": manifest_ids[(p,)]}
                    for d in fresh
                    for p in by_digest[d]
                ],
            )
            for digest, set_id in {**existing, **created}.items():
                cache[(digest,)] = set_id
        return {s: cache[(manifest_set_digest(s),)] for s in wanted}

    def _select_sets(self, digests: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for condition in matching(self.conn, manifest_set.c.digest, list(digests)):
            rows = self.conn.execute(
                sa.select(manifest_set.c.digest, manifest_set.c.id).where(condition)
            )
            found.update({digest: set_id for digest, set_id in rows})
        return found


def ensure_pushes(
    conn: sa.Connection,
    interner: Interner,
    pushes: Mapping[PushRef, tuple[datetime, str | None]],
) -> dict[PushRef, int]:
    """Ids of pushes, creating missing ones; value = (earliest known time, task group)."""
    repo_ids = interner.ids(repository, ("name",), {(p.repository,) for p in pushes})
    rows = [
        {
            "repository_id": repo_ids[(ref.repository,)],
            "revision": ref.revision,
            "pushlog_id": ref.pushlog_id,
            "push_time": when,
            "decision_task_id": group,
        }
        for ref, (when, group) in pushes.items()
    ]
    insert_ignoring_conflicts(conn, push, rows)
    found: dict[PushRef, int] = {}
    by_key = {(repo_ids[(r.repository,)], r.revision): r for r in pushes}
    for chunk in chunks(list(by_key)):
        result = conn.execute(
            sa.select(
                push.c.id,
                push.c.repository_id,
                push.c.revision,
                push.c.decision_task_id,
                push.c.pushlog_id,
            ).where(sa.tuple_(push.c.repository_id, push.c.revision).in_(chunk))
        )
        for push_id, repo_id, revision, decision, pushlog_id in result:
            ref = by_key[(repo_id, revision)]
            found[ref] = push_id
            # What a first sighting did not know (Treeherder lists a push before any of
            # its tasks name its pushlog id or group) is filled in when it is known.
            missing: dict[str, Any] = {}
            if decision is None and pushes[ref][1] is not None:
                missing["decision_task_id"] = pushes[ref][1]
            if pushlog_id is None and ref.pushlog_id is not None:
                missing["pushlog_id"] = ref.pushlog_id
            if missing:
                conn.execute(push.update().where(push.c.id == push_id).values(**missing))
    return found


def record_sources(
    conn: sa.Connection, repository_name: str, taskcluster_root_url: str, treeherder_url: str
) -> None:
    """The services a repository's data comes from, for links to its tasks and jobs."""
    conn.execute(
        repository.update()
        .where(
            repository.c.name == repository_name,
            sa.or_(
                repository.c.taskcluster_root_url.is_distinct_from(taskcluster_root_url),
                repository.c.treeherder_url.is_distinct_from(treeherder_url),
            ),
        )
        .values(taskcluster_root_url=taskcluster_root_url, treeherder_url=treeherder_url)
    )


def describe_pushes(conn: sa.Connection, details: Mapping[int, PushDetails]) -> None:
    """Author and commit message of pushes (by id), where the store has none yet."""
    rows = [
        {"pid": push_id, "author": d.author, "message": d.message}
        for push_id, d in details.items()
        if d.author or d.message
    ]
    if not rows:
        return
    conn.execute(
        push.update()
        .where(
            push.c.id == sa.bindparam("pid"),
            sa.or_(push.c.author.is_(None), push.c.message.is_(None)),
        )
        .values(
            author=sa.func.coalesce(push.c.author, sa.bindparam("author")),
            message=sa.func.coalesce(push.c.message, sa.bindparam("message")),
        ),
        rows,
    )


def _decision_group(jobs: Sequence[TaskJob]) -> str | None:
    # The push's own tasks share the decision task's group; actions' tasks join it too.
    groups = [j.task_group_id for j in jobs if j.action is None]
    return max(set(groups), key=groups.count) if groups else None


def load_jobs(
    conn: sa.Connection, jobs: Sequence[TaskJob], interner: Interner | None = None
) -> LoadStats:
    """Insert or update the given runs, with their pushes, identity rows and manifests."""
    interner = interner or Interner(conn)
    stats = LoadStats()
    if not jobs:
        return stats
    unknown = {j.job_kind for j in jobs} - set(JOB_KINDS)
    if unknown:
        raise TaskShapeError(
            f"job kind {sorted(unknown)} is not one of Treeherder's {', '.join(JOB_KINDS)}"
        )

    by_push: dict[PushRef, list[TaskJob]] = {}
    for j in jobs:
        by_push.setdefault(j.push, []).append(j)
    push_ids = ensure_pushes(
        conn,
        interner,
        {ref: (min(j.submit_time for j in js), _decision_group(js)) for ref, js in by_push.items()},
    )
    stats.pushes = len(push_ids)

    repo_ids = interner.ids(repository, ("name",), {(j.push.repository,) for j in jobs})
    platform_cols = ("os_name", "platform", "architecture")
    platform_ids = interner.ids(
        platform,
        platform_cols,
        {
            (p.os_name, p.platform, p.architecture)
            for j in jobs
            for p in (j.build_platform, j.machine_platform)
        },
    )
    group_ids = interner.ids(
        job_group, ("name", "symbol"), {(j.group_name, j.group_symbol) for j in jobs}
    )
    type_ids = interner.ids(
        job_type, ("name", "symbol"), {(j.job_type_name, j.job_symbol) for j in jobs}
    )
    queue_ids = interner.ids(task_queue, ("name",), {(j.task_queue_id,) for j in jobs})
    set_ids = interner.manifest_sets(j.manifests for j in jobs if j.manifests)
    planned = _planned_manifest_sets(conn, {push_ids[j.push] for j in jobs if j.manifests is None})

    # Jobs of one label share their tuple of manifests: sort each distinct tuple once.
    set_of = {m: set_ids[tuple(sorted(set(m)))] for m in {j.manifests for j in jobs} if m}

    def row(j: TaskJob) -> dict[str, Any]:
        push_id = push_ids[j.push]
        bp, mp = j.build_platform, j.machine_platform
        set_id = set_of[j.manifests] if j.manifests else planned.get((push_id, j.label))
        return {
            "push_id": push_id,
            "task_id": j.task_id,
            "run_id": j.run_id,
            "repository_id": repo_ids[(j.push.repository,)],
            "build_platform_id": platform_ids[(bp.os_name, bp.platform, bp.architecture)],
            "machine_platform_id": platform_ids[(mp.os_name, mp.platform, mp.architecture)],
            "job_group_id": group_ids[(j.group_name, j.group_symbol)],
            "job_type_id": type_ids[(j.job_type_name, j.job_symbol)],
            "option_collection": j.option_collection,
            "tier": j.tier,
            "job_kind": j.job_kind,
            "task_queue_id": queue_ids[(j.task_queue_id,)],
            "state": j.state,
            "result": j.result,
            "retriggerable": j.retriggerable,
            "action": j.action,
            "parent_task_id": None if j.parent_task_id == j.task_group_id else j.parent_task_id,
            "test_type": j.test_type,
            "manifest_set_id": set_id,
            "submit_time": j.submit_time,
            "start_time": j.start_time,
            "end_time": j.end_time,
        }

    write_runs(conn, [row(j) for j in jobs], stats)
    return stats


def write_runs(conn: sa.Connection, rows: list[dict[str, Any]], stats: LoadStats) -> None:
    """Insert new runs; move existing ones forward (never back) in state and result.

    One `INSERT … ON CONFLICT (task_id, run_id) DO UPDATE … WHERE <moves forward>` per
    chunk: the unique index finds existing runs, whatever the planner's statistics say,
    and concurrent loaders cannot both insert the same run.
    """
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        key = (r["task_id"], r["run_id"])
        if key not in latest or _moves_forward(latest[key], r):
            latest[key] = r
    ordered = [latest[k] for k in sorted(latest)]  # one lock order for concurrent loaders
    stats.jobs_unchanged += len(rows) - len(ordered)
    if not ordered:
        return
    max_before = conn.execute(sa.select(sa.func.max(job.c.id))).scalar() or 0
    written: list[int] = []
    if conn.dialect.name == "postgresql" and len(ordered) > COPY_THRESHOLD:
        written = _upsert_by_copy(conn, ordered)
    else:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        stmt = _upsert_runs(dialect.insert(job))
        for chunk in chunks(ordered, 1000):
            written.extend(conn.execute(stmt, list(chunk)).scalars())
    # Ids only grow, so a returned id above the previous maximum is a new row.
    inserted = sum(1 for job_id in written if job_id > max_before)
    stats.jobs_inserted += inserted
    stats.jobs_updated += len(written) - inserted
    stats.jobs_unchanged += len(ordered) - len(written)


def _upsert_runs(insert):  # type: ignore[no-untyped-def]
    """The conflict clause shared by both bulk paths: move an existing run forward only."""
    excluded = insert.excluded
    return insert.on_conflict_do_update(
        index_elements=[job.c.task_id, job.c.run_id],
        set_={
            "state": excluded.state,
            "result": excluded.result,
            "start_time": sa.func.coalesce(excluded.start_time, job.c.start_time),
            "end_time": sa.func.coalesce(excluded.end_time, job.c.end_time),
        },
        where=_forward_sql(job.c.state, job.c.result, excluded.state, excluded.result),
    ).returning(job.c.id)


def _upsert_by_copy(conn: sa.Connection, ordered: list[dict[str, Any]]) -> list[int]:
    """PostgreSQL bulk path: COPY into a temporary table, then one INSERT … SELECT."""
    columns = list(ordered[0])
    names = ", ".join(columns)
    conn.exec_driver_sql(
        f"CREATE TEMPORARY TABLE job_stage ON COMMIT DROP AS SELECT {names} FROM job WITH NO DATA"
    )
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    # Binary COPY: a third of the text format's cost to encode in Python.
    with cursor.copy(f"COPY job_stage ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([_copy_type(job.c[c]) for c in columns])
        values_of = operator.itemgetter(*columns)
        task_at = columns.index("task_id")
        for r in ordered:
            values = list(values_of(r))
            values[task_at] = slugid_bytes(values[task_at])
            copy.write_row(values)
    staged = sa.table("job_stage", *(sa.column(c) for c in columns))
    # Rows land clustered by push and label, as the API and triage read them; the unique
    # index still serialises concurrent loaders of the same runs.
    select = sa.select(*(staged.c[c] for c in columns)).order_by(
        staged.c.push_id, staged.c.job_type_id, staged.c.task_id, staged.c.run_id
    )
    written = list(
        conn.execute(_upsert_runs(postgresql.insert(job).from_select(columns, select))).scalars()
    )
    conn.exec_driver_sql("DROP TABLE job_stage")
    return written


def _copy_type(column: sa.Column[Any]) -> str:
    """The PostgreSQL type whose binary COPY format a job column's values are sent in."""
    if column.name == "task_id":
        return "bytea"  # a uuid's binary format is its 16 bytes, which SlugId stores
    kind = column.type
    if isinstance(kind, sa.types.TypeDecorator):  # UtcDateTime: its timestamptz
        kind = kind.impl_instance
    if isinstance(kind, sa.DateTime):
        return "timestamptz"
    if isinstance(kind, sa.Boolean):
        return "bool"
    if isinstance(kind, sa.SmallInteger):
        return "int2"
    if isinstance(kind, sa.BigInteger):
        return "int8"
    if isinstance(kind, sa.Integer):
        return "int4"
    return "text"  # strings, and enums (whose binary format is their label's text)


def _rank_sql(state: sa.ColumnElement[Any]) -> sa.ColumnElement[int]:
    return sa.case({name: rank for name, rank in STATE_RANK.items()}, value=state, else_=-1)


def _as_text(column: sa.ColumnElement[Any]) -> sa.ColumnElement[str]:
    # `excluded.*` loses the column's PostgreSQL enum type, so compare as text.
    return sa.cast(column, sa.String)


def _forward_sql(old_state, old_result, new_state, new_result):  # type: ignore[no-untyped-def]
    """SQL twin of `_moves_forward`."""
    old_state, old_result = _as_text(old_state), _as_text(old_result)
    new_state, new_result = _as_text(new_state), _as_text(new_result)
    return sa.or_(
        _rank_sql(new_state) > _rank_sql(old_state),
        sa.and_(
            new_state == "completed",
            old_state == "completed",
            new_result == "retry",
            old_result != "retry",
        ),
    )


def _moves_forward(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old_rank, new_rank = STATE_RANK[old["state"]], STATE_RANK[new["state"]]
    if new_rank != old_rank:
        return new_rank > old_rank
    # Same state: only a completed run can still change result, to `retry` once rerun.
    return new["state"] == "completed" and new["result"] == "retry" and old["result"] != "retry"


def _planned_manifest_sets(conn: sa.Connection, push_ids: set[int]) -> dict[tuple[int, str], int]:
    if not push_ids:
        return {}
    planned: dict[tuple[int, str], int] = {}
    for chunk in chunks(sorted(push_ids)):
        result = conn.execute(
            sa.select(
                push_label_manifest_set.c.push_id,
                push_label_manifest_set.c.label,
                push_label_manifest_set.c.manifest_set_id,
            ).where(push_label_manifest_set.c.push_id.in_(chunk))
        )
        for push_id, label, set_id in result:
            planned[(push_id, label)] = set_id
    return planned


def _stored_test_counts(conn: sa.Connection, manifest_ids: Sequence[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for chunk in chunks(sorted(set(manifest_ids))):
        rows = conn.execute(
            sa.select(manifest_test.c.manifest_id, sa.func.count())
            .where(manifest_test.c.manifest_id.in_(chunk))
            .group_by(manifest_test.c.manifest_id)
        )
        counts.update({manifest_id: n for manifest_id, n in rows})
    return counts


def load_push_manifests(
    conn: sa.Connection,
    push_id: int,
    manifests_by_label: Mapping[str, Sequence[str]],
    tests_by_manifest: Mapping[str, Sequence[str]],
    interner: Interner | None = None,
) -> dict[str, int]:
    """Store what the decision task planned for a push; fill it in on jobs lacking manifests."""
    interner = interner or Interner(conn)
    sets = {label: tuple(sorted(set(paths))) for label, paths in manifests_by_label.items()}
    set_ids = interner.manifest_sets(s for s in sets.values() if s)
    insert_ignoring_conflicts(
        conn,
        push_label_manifest_set,
        [
            {"push_id": push_id, "label": label, "manifest_set_id": set_ids[s]}
            for label, s in sets.items()
            if s
        ],
    )
    manifest_ids = interner.ids(manifest, ("path",), {(m,) for m in tests_by_manifest})
    # Every push's decision task lists every manifest's tests again; only manifests with
    # tests not stored yet are worth interning and linking (most pushes: none).
    stored = _stored_test_counts(conn, [manifest_ids[(m,)] for m in tests_by_manifest])
    changed = {
        m: set(tests)
        for m, tests in tests_by_manifest.items()
        if stored.get(manifest_ids[(m,)], 0) < len(set(tests))
    }
    test_ids = interner.ids(
        test_path, ("path",), {(t,) for tests in changed.values() for t in tests}
    )
    insert_ignoring_conflicts(
        conn,
        manifest_test,
        [
            {"manifest_id": manifest_ids[(m,)], "test_path_id": test_ids[(t,)]}
            for m, tests in changed.items()
            for t in tests
        ],
    )
    # Jobs already ingested without MOZHARNESS_TEST_PATHS take the planned set.
    labelled = sa.select(job_type.c.id).where(job_type.c.name == sa.bindparam("label"))
    stmt = (
        job.update()
        .where(
            job.c.push_id == push_id,
            job.c.manifest_set_id.is_(None),
            job.c.job_type_id.in_(labelled.scalar_subquery()),
        )
        .values(manifest_set_id=sa.bindparam("set_id"))
    )
    params = [{"label": label[:99], "set_id": set_ids[s]} for label, s in sets.items() if s]
    updated = 0
    for chunk in chunks(params):
        updated += sum(conn.execute(stmt, [p]).rowcount for p in chunk)
    return {
        "labels": len(params),
        "manifests": len(manifest_ids),
        "tests": len(test_ids),
        "jobs_updated": updated,
    }


def apply_run_updates(conn: sa.Connection, runs: Sequence[RunUpdate]) -> LoadStats:
    """Record run state changes (from Pulse or a status call) for tasks already stored."""
    stats = LoadStats()
    task_ids = sorted({r.task_id for r in runs})
    identity: dict[str, dict[str, Any]] = {}
    for chunk in chunks(task_ids):
        result = conn.execute(
            sa.select(job).where(job.c.task_id.in_(chunk)).order_by(job.c.run_id.desc())
        )
        for r in result.mappings():
            identity.setdefault(r["task_id"], dict(r))
    rows: list[dict[str, Any]] = []
    for update in runs:
        base = identity.get(update.task_id)
        if base is None:
            stats.skip("task not stored yet")
            continue
        state, result = run_state_and_result(update.run, base["job_kind"])
        row = {k: v for k, v in base.items() if k != "id"}
        row.update(
            run_id=update.run_id,
            state=state,
            result=result,
            start_time=update.run.get("started"),
            end_time=update.run.get("resolved"),
        )
        if update.run_id > 0:
            # An automatic rerun: Treeherder shows the run before it as `retry`.
            previous = {**row, "run_id": update.run_id - 1, "state": "completed"}
            rows.append({**previous, "result": "retry", "start_time": None, "end_time": None})
        rows.append(row)
    write_runs(conn, rows, stats)
    return stats


@dataclass(frozen=True)
class RunUpdate:
    """Run `run_id` of a stored task is now as `run` (a checked entry of its status runs)."""

    task_id: str
    run_id: int
    run: RunShape
