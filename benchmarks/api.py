"""p50/p95 of the REST API's jobs list and similar-jobs endpoints with many jobs loaded.

Loads `--jobs` synthetic jobs (the ingest benchmark's generator, benchmarks/synthetic.py)
into a throwaway database, serves `create_app` with uvicorn on a loopback port and times
HTTP requests from a client in the same process. Prints one line per endpoint shape.

    .venv/bin/python benchmarks/api.py --jobs 1000000 --backend postgresql
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import sqlalchemy as sa
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthetic import Generator, Shape, test_paths

from sheriff.config import load_settings
from sheriff.store import db, loader
from sheriff.store.loader import Interner, load_jobs, load_push_manifests
from sheriff.store.schema import job
from sheriff.web import create_app

ADMIN_URL = "postgresql+psycopg://root@127.0.0.1:5432/test"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def database_url(backend: str, workdir: Path) -> tuple[str, object]:
    """A fresh database URL and a function that drops it."""
    if backend == "sqlite":
        return f"sqlite:///{workdir / 'api.db'}", lambda: None
    name = f"sheriff_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return sa.engine.make_url(ADMIN_URL).set(database=name).render_as_string(False), drop


def _insert_only(conn: sa.Connection, rows: list[dict], stats: loader.LoadStats) -> None:
    # Every synthetic job is new, so skip write_runs' existence check: on PostgreSQL its
    # `(task_id, run_id) IN (…)` lookup scans all run_id = 0 rows per chunk (quadratic),
    # which would make loading a million jobs take hours. Timing the API is the point here.
    for start in range(0, len(rows), 2000):
        conn.execute(job.insert(), rows[start : start + 2000])
    stats.jobs_inserted += len(rows)


def load(engine: sa.Engine, shape: Shape, batch: int) -> int:
    loader.write_runs = _insert_only
    generator = Generator(shape)
    loaded = 0
    started = time.perf_counter()
    first = True
    for jobs in generator.batches(batch):
        with engine.begin() as conn:
            load_jobs(conn, jobs, Interner(conn))
            if first:
                # Each manifest's tests, so that test_path filters and include work.
                tests = {
                    m: test_paths(m, shape.tests_per_manifest) for m in generator.all_manifests()
                }
                load_push_manifests(conn, 1, {}, tests)
                first = False
        loaded += len(jobs)
        rate = loaded / (time.perf_counter() - started)
        print(f"  loaded {loaded:,} jobs ({rate:,.0f}/s)", end="\r", file=sys.stderr)
    print(file=sys.stderr)
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM ANALYZE"))
    return loaded


class Server:
    def __init__(self, app: object) -> None:
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def time_requests(client: httpx.Client, urls: list[str]) -> tuple[float, float, float]:
    """p50 ms, p95 ms, mean results per answer."""
    timings, sizes = [], []
    for url in urls:
        started = time.perf_counter()
        answer = client.get(url)
        timings.append(time.perf_counter() - started)
        answer.raise_for_status()
        sizes.append(len(answer.json()["results"]))
    return (*percentiles(timings), statistics.mean(sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200, help="requests per endpoint shape")
    parser.add_argument("--backend", choices=("postgresql", "sqlite"), default="postgresql")
    args = parser.parse_args()

    shape = Shape(jobs=args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        url, drop = database_url(args.backend, Path(tmp))
        engine = db.open_database(url)
        server = None
        try:
            started = time.perf_counter()
            loaded = load(engine, shape, args.batch)
            print(
                f"{args.backend}: {loaded:,} jobs loaded in {time.perf_counter() - started:.0f} s"
            )
            with engine.connect() as conn:
                max_job = conn.execute(sa.text("SELECT max(id) FROM job")).scalar_one()
                max_push = conn.execute(sa.text("SELECT max(id) FROM push")).scalar_one()
                manifests = list(conn.execute(sa.text("SELECT path FROM manifest")).scalars())
                platforms = list(conn.execute(sa.text("SELECT platform FROM platform")).scalars())
            app = create_app(engine, load_settings(), protocol_factory=None)
            server = Server(app)
            rng = random.Random(11)
            base = f"http://127.0.0.1:{server.port}/api/project/autoland"
            n = args.samples
            shapes = {
                "jobs: newest page": [f"{base}/jobs/"] * n,
                "jobs: push_id": [
                    f"{base}/jobs/?push_id={rng.randint(1, max_push)}&count=200" for _ in range(n)
                ],
                "jobs: push_id + manifests + test_paths": [
                    f"{base}/jobs/?push_id={rng.randint(1, max_push)}"
                    "&include=manifests&include=test_paths"
                    for _ in range(n)
                ],
                "jobs: platform + result": [
                    f"{base}/jobs/?platform={rng.choice(platforms)}&result=testfailed"
                    for _ in range(n)
                ],
                "jobs: manifest": [
                    f"{base}/jobs/?manifest={rng.choice(manifests)}" for _ in range(n)
                ],
                "similar: any, 10 pushes": [
                    f"{base}/jobs/{rng.randint(1, max_job)}/similar/?match=any&pushes=10"
                    for _ in range(n)
                ],
                "similar: all, 10 pushes": [
                    f"{base}/jobs/{rng.randint(1, max_job)}/similar/?match=all&pushes=10"
                    for _ in range(n)
                ],
            }
            print(f"{'endpoint':42} | p50 ms | p95 ms | results")
            with httpx.Client(timeout=60) as client:
                client.get(f"{base}/jobs/")  # warm up the pool and the plans
                for name, urls in shapes.items():
                    p50, p95, size = time_requests(client, urls)
                    print(f"{name:42} | {p50:6.1f} | {p95:6.1f} | {size:7.1f}")
        finally:
            if server:
                server.stop()
            engine.dispose()
            drop()  # type: ignore[operator]


if __name__ == "__main__":
    main()
