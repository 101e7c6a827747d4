"""Ingest benchmark: sheriff's job layout against the naive one, on SQLite and PostgreSQL.

Prints, per backend and layout: jobs/s ingested, bytes per job on disk (job rows, links
and their indexes; shared strings — manifest and test paths, labels, platforms —
excluded), and p50/p95 of the similar-jobs query; first, how fast task definitions in
`listTaskGroup`'s shape are checked and derived into jobs (the step before storing, in a
triage pass and in `sheriff ingest tasks`). Run from the repository root:

    .venv/bin/python benchmarks/ingest.py [--jobs 1000000] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import Generator, Shape, listing_entry, test_paths

from sheriff.ingest.taskgroup import parse_listing
from sheriff.store import db, queries
from sheriff.store.loader import Interner, load_jobs, load_push_manifests

PG_ADMIN = "postgresql+psycopg://root@127.0.0.1:5432/test"
OURS = ("job", "manifest_set", "manifest_set_member")


class Database:
    """A throwaway database on one backend."""

    def __init__(self, backend: str, workdir: Path) -> None:
        self.backend = backend
        if backend == "sqlite":
            self.url = f"sqlite:///{workdir / f'bench-{uuid.uuid4().hex[:8]}.db'}"
            self.name = None
        else:
            self.name = f"sheriff_bench_{uuid.uuid4().hex[:10]}"
            admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{self.name}"'))
            admin.dispose()
            self.url = (
                sa.engine.make_url(PG_ADMIN)
                .set(database=self.name)
                .render_as_string(hide_password=False)
            )
        self.engine = db.open_database(self.url)

    def bytes_of(self, tables: tuple[str, ...]) -> int:
        with self.engine.connect() as conn:
            if self.backend == "postgresql":
                conn.execute(sa.text("CHECKPOINT"))
                return sum(
                    conn.execute(sa.text(f"SELECT pg_total_relation_size('{t}')")).scalar_one()
                    for t in tables
                )
            names = tuple(tables) + tuple(
                r[0]
                for r in conn.execute(
                    sa.text(
                        "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name IN "
                        f"({', '.join(repr(t) for t in tables)})"
                    )
                )
            )
            return (
                conn.execute(
                    sa.text(
                        "SELECT SUM(pgsize) FROM dbstat WHERE name IN "
                        f"({', '.join(repr(n) for n in names)})"
                    )
                ).scalar_one()
                or 0
            )

    def drop(self) -> None:
        self.engine.dispose()
        if self.name:
            admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
            admin.dispose()


NAIVE_DDL = """
CREATE TABLE naive_job (
  id {pk},
  push_id INTEGER NOT NULL, task_id VARCHAR(22) NOT NULL, run_id SMALLINT NOT NULL,
  repository VARCHAR(64) NOT NULL,
  build_os VARCHAR(64) NOT NULL, build_platform VARCHAR(100) NOT NULL,
  build_architecture VARCHAR(64) NOT NULL,
  machine_os VARCHAR(64) NOT NULL, machine_platform VARCHAR(100) NOT NULL,
  machine_architecture VARCHAR(64) NOT NULL,
  group_name VARCHAR(255) NOT NULL, group_symbol VARCHAR(64) NOT NULL,
  job_type_name VARCHAR(255) NOT NULL, job_type_symbol VARCHAR(64) NOT NULL,
  option_collection VARCHAR(32) NOT NULL, tier SMALLINT NOT NULL, job_kind VARCHAR(16) NOT NULL,
  task_queue VARCHAR(255) NOT NULL, state VARCHAR(16) NOT NULL, result VARCHAR(16) NOT NULL,
  submit_time TIMESTAMP NOT NULL, start_time TIMESTAMP, end_time TIMESTAMP,
  manifests TEXT NOT NULL,
  UNIQUE (task_id, run_id)
);
CREATE INDEX ix_naive_config ON naive_job (machine_platform, option_collection, push_id)
"""


def naive_rows(batch, push_numbers):  # type: ignore[no-untyped-def]
    return [
        {
            "push_id": push_numbers[j.push.revision],
            "task_id": j.task_id,
            "run_id": j.run_id,
            "repository": j.push.repository,
            "build_os": j.build_platform.os_name,
            "build_platform": j.build_platform.platform,
            "build_architecture": j.build_platform.architecture,
            "machine_os": j.machine_platform.os_name,
            "machine_platform": j.machine_platform.platform,
            "machine_architecture": j.machine_platform.architecture,
            "group_name": j.group_name,
            "group_symbol": j.group_symbol,
            "job_type_name": j.job_type_name,
            "job_type_symbol": j.job_symbol,
            "option_collection": j.option_collection,
            "tier": j.tier,
            "job_kind": j.job_kind,
            "task_queue": j.task_queue_id,
            "state": j.state,
            "result": j.result,
            "submit_time": j.submit_time.replace(tzinfo=None),
            "start_time": j.start_time.replace(tzinfo=None) if j.start_time else None,
            "end_time": j.end_time.replace(tzinfo=None) if j.end_time else None,
            "manifests": "\n" + "\n".join(j.manifests or ()) + "\n",
        }
        for j in batch
    ]


NAIVE_INSERT = sa.text(
    "INSERT INTO naive_job (push_id, task_id, run_id, repository, build_os, build_platform, "
    "build_architecture, machine_os, machine_platform, machine_architecture, group_name, "
    "group_symbol, job_type_name, job_type_symbol, option_collection, tier, job_kind, "
    "task_queue, state, result, submit_time, start_time, end_time, manifests) VALUES "
    "(:push_id, :task_id, :run_id, :repository, :build_os, :build_platform, "
    ":build_architecture, :machine_os, :machine_platform, :machine_architecture, :group_name, "
    ":group_symbol, :job_type_name, :job_type_symbol, :option_collection, :tier, :job_kind, "
    ":task_queue, :state, :result, :submit_time, :start_time, :end_time, :manifests)"
)


def naive_similar(conn: sa.Connection, job_id: int, pushes: int) -> list[int]:
    row = conn.execute(
        sa.text(
            "SELECT push_id, machine_platform, option_collection, manifests FROM naive_job "
            "WHERE id = :id"
        ),
        {"id": job_id},
    ).one()
    wanted = [m for m in row.manifests.split("\n") if m]
    like = " OR ".join(f"manifests LIKE :m{i}" for i in range(len(wanted)))
    params = {f"m{i}": f"%\n{m}\n%" for i, m in enumerate(wanted)}
    return list(
        conn.execute(
            sa.text(
                "SELECT id FROM naive_job WHERE machine_platform = :p AND option_collection = :o "
                f"AND push_id > :lo AND push_id <= :hi AND ({like})"
            ),
            {
                "p": row.machine_platform,
                "o": row.option_collection,
                "lo": row.push_id - pushes,
                "hi": row.push_id,
                **params,
            },
        ).scalars()
    )


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def run_backend(backend: str, shape: Shape, batch: int, samples: int, workdir: Path) -> list:
    results = []
    database = Database(backend, workdir)
    try:
        generator = Generator(shape)
        # Shared strings first (not part of the per-job figures): each manifest's tests.
        with database.engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO repository (name) VALUES ('autoland')"))
            conn.execute(
                sa.text(
                    "INSERT INTO push (repository_id, revision, push_time) "
                    "VALUES (1, 'shared-strings', '2026-01-01')"
                )
            )
            load_push_manifests(
                conn,
                1,
                {},
                {m: test_paths(m, shape.tests_per_manifest) for m in generator.all_manifests()},
            )
        loaded, elapsed = 0, 0.0
        for jobs in generator.batches(batch):
            started = time.perf_counter()
            with database.engine.begin() as conn:
                load_jobs(conn, jobs, Interner(conn))
            elapsed += time.perf_counter() - started
            loaded += len(jobs)
            print(
                f"  {backend} sheriff: {loaded:,} jobs, {loaded / elapsed:,.0f}/s",
                end="\r",
                file=sys.stderr,
            )
        print(file=sys.stderr)
        per_job = database.bytes_of(OURS) / loaded
        with database.engine.connect() as conn:
            if backend == "postgresql":
                conn.execute(sa.text("ANALYZE"))
            max_id = conn.execute(sa.text("SELECT max(id) FROM job")).scalar_one()
            rng = random.Random(7)
            timings = {"any": [], "all": []}
            found = 0
            for _ in range(samples):
                job_id = rng.randint(1, max_id)
                for match in ("any", "all"):
                    started = time.perf_counter()
                    found += len(queries.similar_jobs(conn, job_id, match=match, pushes=10))
                    timings[match].append(time.perf_counter() - started)
        results.append(
            (
                backend,
                "sheriff",
                loaded / elapsed,
                per_job,
                *percentiles(timings["any"]),
                *percentiles(timings["all"]),
            )
        )

        # The naive layout: identity strings and manifest paths on every job row.
        with database.engine.begin() as conn:
            pk = "INTEGER PRIMARY KEY" if backend == "sqlite" else "BIGSERIAL PRIMARY KEY"
            for ddl in NAIVE_DDL.format(pk=pk).split(";"):
                conn.execute(sa.text(ddl))
        generator = Generator(shape)
        loaded, elapsed = 0, 0.0
        push_numbers: dict[str, int] = {}
        for jobs in generator.batches(batch):
            for j in jobs:
                push_numbers.setdefault(j.push.revision, len(push_numbers) + 1)
            started = time.perf_counter()
            with database.engine.begin() as conn:
                conn.execute(NAIVE_INSERT, naive_rows(jobs, push_numbers))
            elapsed += time.perf_counter() - started
            loaded += len(jobs)
            print(
                f"  {backend} naive: {loaded:,} jobs, {loaded / elapsed:,.0f}/s",
                end="\r",
                file=sys.stderr,
            )
        print(file=sys.stderr)
        naive_per_job = database.bytes_of(("naive_job",)) / loaded
        with database.engine.connect() as conn:
            if backend == "postgresql":
                conn.execute(sa.text("ANALYZE naive_job"))
            rng = random.Random(7)
            naive_times = []
            for _ in range(samples):
                job_id = rng.randint(1, loaded)
                started = time.perf_counter()
                naive_similar(conn, job_id, 10)
                naive_times.append(time.perf_counter() - started)
        results.append(
            (
                backend,
                "naive",
                loaded / elapsed,
                naive_per_job,
                *percentiles(naive_times),
                float("nan"),
                float("nan"),
            )
        )
    finally:
        database.drop()
    return results


def parse_rate(shape: Shape, batch: int, limit: int = 200_000) -> tuple[int, float]:
    """Task definitions (listTaskGroup entries) checked and derived into jobs per second."""
    entries = [listing_entry(j) for j in Generator(shape).jobs()][:limit]
    parsed, elapsed = 0, 0.0
    for start in range(0, len(entries), batch):
        page = entries[start : start + batch]
        started = time.perf_counter()
        parsed += len(parse_listing("decision", page).jobs)
        elapsed += time.perf_counter() - started
    return parsed, parsed / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200, help="similar-jobs queries timed")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--parse-only", action="store_true", help="only the parsing figure")
    args = parser.parse_args()
    shape = Shape(jobs=args.jobs)
    parsed, rate = parse_rate(Shape(jobs=min(args.jobs, 200_000)), args.batch)
    print(f"parse: {parsed:,} listTaskGroup entries checked and derived, {rate:,.0f} jobs/s")
    if args.parse_only:
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            rows += run_backend(backend, shape, args.batch, args.samples, Path(tmp))
    print(
        f"\n{args.jobs:,} jobs, ~{shape.manifests_per_job} manifests each from "
        f"{shape.manifests:,}, {shape.tests_per_manifest} tests per manifest"
    )
    header = (
        "backend",
        "layout",
        "jobs/s",
        "bytes/job",
        "similar any p50 ms",
        "p95 ms",
        "similar all p50 ms",
        "p95 ms",
    )
    print(" | ".join(header))
    for r in rows:
        print(
            " | ".join([r[0], r[1], f"{r[2]:,.0f}", f"{r[3]:,.0f}", *(f"{v:.1f}" for v in r[4:])])
        )
    by = {(r[0], r[1]): r for r in rows}
    for backend in args.backends.split(","):
        ours, naive = by[(backend, "sheriff")], by[(backend, "naive")]
        print(
            f"{backend}: bytes/job naive/sheriff = {naive[3] / ours[3]:.1f}x; "
            f"similar p95 naive/sheriff = {naive[5] / ours[5]:.1f}x; "
            f"ingest sheriff/naive = {ours[2] / naive[2]:.2f}x"
        )


if __name__ == "__main__":
    main()
