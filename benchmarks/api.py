"""p50/p95 of the REST API's jobs list and similar-jobs endpoints with many jobs loaded.

Loads `--jobs` synthetic jobs (the ingest benchmark's generator, benchmarks/synthetic.py)
into a throwaway database, serves `create_app` with uvicorn on a loopback port and times
HTTP requests from a client in the same process. Prints one line per endpoint shape.

    .venv/bin/python benchmarks/api.py --jobs 1000000 --backend postgresql

`--load` instead puts the heaviest endpoints under concurrent load on the demo's data:
it plays the bundled `small` scenario into a fresh SQLite file (or takes `--url`, e.g.
the `sheriff-demo.db` that `sheriff demo` leaves), starts `sheriff serve` on it in its own
process (as a user would run it), and sends `--requests` requests per endpoint shape,
`--concurrency` at a time, from an asyncio client. Prints p50/p95, requests/s and errors.

    .venv/bin/python benchmarks/api.py --load [--requests 2000] [--concurrency 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import httpx
import sqlalchemy as sa
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthetic import Generator, Shape, test_paths

from sheriff.config import load_settings
from sheriff.store import db, queries
from sheriff.store.loader import Interner, load_jobs, load_push_manifests
from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    job,
    job_type,
    push,
    regression,
    run_observation,
    triage_case,
)
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


def load(engine: sa.Engine, shape: Shape, batch: int) -> int:
    """The synthetic jobs through sheriff's own loader (COPY on PostgreSQL)."""
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


def time_requests(client: httpx.Client, urls: list[str]) -> tuple[float, ...]:
    """Wall p50, p95; server (Server-Timing) p50, p95, in ms; mean results per answer."""
    timings, server, sizes = [], [], []
    for url in urls:
        started = time.perf_counter()
        answer = client.get(url)
        timings.append(time.perf_counter() - started)
        answer.raise_for_status()
        server.append(float(answer.headers["server-timing"].split("dur=")[1]) / 1000)
        sizes.append(len(answer.json()["results"]))
    return (*percentiles(timings), *percentiles(server), statistics.mean(sizes))


def add_triage(engine: sa.Engine, seed: int = 5) -> dict[str, list[int]]:
    """A case per failed run (verdicts drawn at random), observations with failure lines,
    and a backfill report per regression: what a triaged day looks like to the pages."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    verdicts = ["regression", "intermittent", "intermittent", "infra", "not-eligible", None]
    made: dict[str, list[int]] = {"cases": [], "reports": [], "jobs": []}
    with engine.begin() as conn:
        failed = conn.execute(
            sa.select(job.c.id, job.c.push_id, job.c.manifest_set_id, job_type.c.name)
            .join(job_type, job_type.c.id == job.c.job_type_id)
            .where(job.c.result == "testfailed")
        ).all()
        for job_id, push_id, set_id, label in failed:
            verdict = rng.choice(verdicts)
            line = f"TEST-UNEXPECTED-FAIL | {label}/test_{rng.randint(0, 19):03d}.js | oops"
            case_id = conn.execute(
                triage_case.insert()
                .values(
                    job_id=job_id,
                    push_id=push_id,
                    label=label,
                    state="decided" if verdict else "waiting",
                    verdict=verdict,
                    rule="synthetic",
                    policy="seed",
                    p_regression=rng.random(),
                    evidence={"lines": {line: 2}},
                    opened_at=now,
                    updated_at=now,
                )
                .returning(triage_case.c.id)
            ).scalar_one()
            conn.execute(
                run_observation.insert().values(
                    job_id=job_id,
                    parse_status="parsed",
                    failure_lines=[line],
                    raw_failure_lines=[line],
                    updated_at=now,
                )
            )
            made["cases"].append(case_id)
            made["jobs"].append(job_id)
            if verdict != "regression":
                continue
            window = list(reversed(queries.recent_push_ids(conn, push_id, 10)))
            report_id = conn.execute(
                backfill_report.insert()
                .values(
                    repository_id=1,
                    push_id=push_id,
                    job_id=job_id,
                    case_id=case_id,
                    source="regression",
                    label=label,
                    strategy="bisect",
                    same_manifests=True,
                    tests=[],
                    failure_lines=[line],
                    fail_rate=1.0,
                    case_ids=[case_id],
                    status="culprit",
                    culprit_push_id=window[len(window) // 2],
                    opened_at=now,
                    mature_at=now,
                    updated_at=now,
                )
                .returning(backfill_report.c.id)
            ).scalar_one()
            conn.execute(
                backfill_record.insert().values(
                    report_id=report_id,
                    job_id=job_id,
                    label=label,
                    platform="-",
                    option_collection="opt",
                    tier=1,
                    manifest_set_id=set_id,
                    context={
                        "window": window,
                        "outcomes": {str(p): rng.choice(["clean", "failing"]) for p in window},
                        "requested": {
                            str(p): [{"times": 2, "at": now.isoformat()}] for p in window
                        },
                    },
                    status="successful",
                    created_at=now,
                    updated_at=now,
                )
            )
            made["reports"].append(report_id)
    return made


def time_pages(client: httpx.Client, urls: list[str]) -> tuple[float, float, float]:
    """p50 and p95 of the server time (Server-Timing header), and the p95 wall time, in ms."""
    server, wall = [], []
    for url in urls:
        started = time.perf_counter()
        answer = client.get(url)
        wall.append(time.perf_counter() - started)
        answer.raise_for_status()
        server.append(float(answer.headers["server-timing"].split("dur=")[1]) / 1000)
    return (*percentiles(server), percentiles(wall)[1])


def dashboard(args: argparse.Namespace) -> None:
    """Server time of each dashboard page with a day of autoland loaded: synthetic jobs,
    or (`--url`) a database that `sheriff sim run --scenario autoland-day --database …`
    left behind."""
    # autoland-day.yaml: 120 pushes x 8 platforms x 67 chunks x 0.6 scheduled ~ 38,600 jobs.
    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            url, drop = args.url, lambda: None
        else:
            url, drop = database_url(args.backend, Path(tmp))
        engine = db.open_database(url)
        try:
            if args.url:
                made = _played_triage(engine)
                print(
                    f"{args.url}: {len(made['jobs']):,} jobs with a case, "
                    f"{len(made['reports']):,} backfill reports, "
                    f"{len(made['regressions']):,} regressions"
                )
            else:
                load(engine, Shape(jobs=args.jobs), args.batch)
                made = add_triage(engine)
                print(
                    f"{args.backend}: {args.jobs:,} jobs, {len(made['cases']):,} cases, "
                    f"{len(made['reports']):,} backfill reports"
                )
            _time_dashboard(engine, made, args.samples)
        finally:
            engine.dispose()
            drop()  # type: ignore[operator]


def _played_triage(engine: sa.Engine) -> dict[str, list[int]]:
    """The cases' jobs, the backfill reports and the regressions of a played database."""
    with engine.connect() as conn:
        return {
            "jobs": list(conn.execute(sa.select(triage_case.c.job_id)).scalars()),
            "reports": list(conn.execute(sa.select(backfill_report.c.id)).scalars()),
            "regressions": list(conn.execute(sa.select(regression.c.id)).scalars()),
        }


def _time_dashboard(engine: sa.Engine, made: dict[str, list[int]], n: int) -> None:
    with engine.connect() as conn:
        revisions = list(conn.execute(sa.select(push.c.revision)).scalars())
        repo = conn.execute(sa.text("SELECT name FROM repository LIMIT 1")).scalar_one()
    server = Server(create_app(engine, load_settings(), protocol_factory=None))
    try:
        base = f"http://127.0.0.1:{server.port}/{repo}"
        rng = random.Random(3)
        pages = {
            "landing": [f"{base}/"] * n,  # the open regressions, then 20 pushes
            "landing, all regr.": [f"{base}/?show=all"] * n,
            "push": [f"{base}/push/{rng.choice(revisions)}/" for _ in range(n)],
            "push, needs person": [
                f"{base}/push/{rng.choice(revisions)}/?needs=person" for _ in range(n)
            ],
            "job": [f"{base}/jobs/{rng.choice(made['jobs'])}/" for _ in range(n)],
            "similar jobs": [f"{base}/jobs/{rng.choice(made['jobs'])}/similar/" for _ in range(n)],
        }
        if made["reports"]:
            pages["backfill report"] = [
                f"{base}/backfills/{rng.choice(made['reports'])}/" for _ in range(n)
            ]
        if made.get("regressions"):  # merged ones too: they answer as the one they went into
            pages["regression"] = [
                f"{base}/regressions/{rng.choice(made['regressions'])}/" for _ in range(n)
            ]
        print(f"{'page':18} | server p50 ms | server p95 ms | wall p95 ms")
        with httpx.Client(timeout=60) as client:
            client.get(f"{base}/")
            for name, urls in pages.items():
                p50, p95, wall = time_pages(client, urls)
                print(f"{name:18} | {p50:13.1f} | {p95:13.1f} | {wall:11.1f}")
    finally:
        server.stop()


def demo_database(workdir: Path) -> str:
    """The demo's data: the bundled `small` scenario played into a fresh SQLite file."""
    path = workdir / "demo.db"
    url = f"sqlite:///{path}"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sheriff", "sim", "run", "--scenario", "small", "--database", url],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "SHERIFF_DATABASE_URL": url},
    )
    print(f"played small.yaml into {path.name} in {time.perf_counter() - started:.0f} s")
    return url


@contextlib.contextmanager
def served(url: str, **settings: str) -> Iterator[str]:
    """`sheriff serve` on `url` in its own process (with `SHERIFF_<NAME>` settings);
    yields its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "SHERIFF_DATABASE_URL": url,
        **{f"SHERIFF_{k.upper()}": v for k, v in settings.items()},
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "sheriff", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/openapi.json", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("sheriff serve did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)


async def _hammer(urls: list[str], concurrency: int) -> tuple[list[float], int, float]:
    """Wall time of each answer, errors (non-2xx or no answer), total seconds.

    aiohttp (installed with taskcluster) reads a body in C: with httpx the client itself
    spent 23 ms per 3 MB answer, on the same two cores as the server."""
    timings: list[float] = []
    errors = 0
    queue = list(reversed(urls))
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:

        async def worker() -> None:
            nonlocal errors
            while queue:
                url = queue.pop()
                started = time.perf_counter()
                try:
                    async with client.get(url) as answer:
                        await answer.read()
                        errors += answer.status >= 300
                except (aiohttp.ClientError, TimeoutError):
                    errors += 1
                timings.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return timings, errors, time.perf_counter() - started


def under_load(args: argparse.Namespace) -> None:
    """The heaviest endpoints under concurrent load (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or demo_database(Path(tmp))
        engine = db.open_database(url)
        with engine.connect() as conn:
            jobs = conn.execute(sa.text("SELECT count(*) FROM job")).scalar_one()
            repo = conn.execute(sa.text("SELECT name FROM repository LIMIT 1")).scalar_one()
            revisions = list(conn.execute(sa.select(push.c.revision)).scalars())
            job_ids = list(conn.execute(sa.text("SELECT id FROM job")).scalars())
        engine.dispose()
        rng = random.Random(5)
        n, c = args.requests, args.concurrency
        shapes = {
            "jobs?count=500&include=manifests&include=test_paths": [
                "/api/project/{repo}/jobs/?count=500&include=manifests&include=test_paths"
            ]
            * n,
            "jobs?count=500": ["/api/project/{repo}/jobs/?count=500"] * n,
            "push/?count=100": ["/api/project/{repo}/push/?count=100"] * n,
            "verdicts?count=500": ["/api/verdicts?count=500"] * n,
            "push/<rev>/task-to-test-paths": [
                f"/api/project/{{repo}}/push/{rng.choice(revisions)}/task-to-test-paths"
                for _ in range(n)
            ],
            "jobs/<id>/similar/?include=…": [
                f"/api/project/{{repo}}/jobs/{rng.choice(job_ids)}/similar/"
                "?include=manifests&include=test_paths"
                for _ in range(n)
            ],
        }
        print(f"{jobs:,} jobs of {repo}; {n:,} requests per shape, {c} at a time")
        # Side by side: the answer cache off, on, and on while something writes to the
        # database every second (a triage pass commits far less often than that).
        modes = (
            ("no cache", {"api_cache_mb": "0"}, False),
            ("cache", {}, False),
            ("cache, a write/s", {}, True),
        )
        print(f"{'endpoint':52} | {'mode':16} | p50 ms | p95 ms | req/s | errors")
        for mode, settings, writing in modes:
            with served(url, **settings) as base, _writes_every_second(url, writing):
                for name, paths in shapes.items():
                    urls = [base + p.format(repo=repo) for p in paths]
                    timings, errors, took = asyncio.run(_hammer(urls, c))
                    p50, p95 = percentiles(timings)
                    print(
                        f"{name:52} | {mode:16} | {p50:6.0f} | {p95:6.0f} | "
                        f"{n / took:5.0f} | {errors}"
                    )


@contextlib.contextmanager
def _writes_every_second(url: str, writing: bool) -> Iterator[None]:
    """A thread committing one small write per second (when `writing`)."""
    if not writing:
        yield
        return
    engine = db.open_database(url)
    stop = threading.Event()

    def write() -> None:
        flip = 0
        while not stop.wait(1.0):
            flip ^= 1
            with engine.begin() as conn:
                first = conn.execute(sa.select(sa.func.min(job.c.id))).scalar_one()
                conn.execute(
                    job.update().where(job.c.id == first).values(classification_id=1 + flip)
                )

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200, help="requests per endpoint shape")
    parser.add_argument("--backend", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument(
        "--dashboard",
        action="store_true",
        help="time the dashboard pages instead (use --jobs 38600: autoland-day's size)",
    )
    parser.add_argument("--load", action="store_true", help="concurrent load on the demo's data")
    parser.add_argument("--requests", type=int, default=2000, help="--load: per endpoint")
    parser.add_argument("--concurrency", type=int, default=20, help="--load: at a time")
    parser.add_argument("--keep", action="store_true", help="keep the loaded database")
    parser.add_argument("--url", help="time a database loaded before (with --keep)")
    args = parser.parse_args()
    if args.load:
        under_load(args)
        return
    if args.dashboard:
        dashboard(args)
        return

    shape = Shape(jobs=args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            url, drop = args.url, lambda: None
        else:
            url, drop = database_url(args.backend, Path(tmp))
            if args.keep:
                print(f"keeping the database: {url}")
                drop = lambda: None  # noqa: E731
        engine = db.open_database(url)
        server = None
        try:
            if not args.url:
                started = time.perf_counter()
                loaded = load(engine, shape, args.batch)
                took = time.perf_counter() - started
                print(f"{args.backend}: {loaded:,} jobs loaded in {took:.0f} s")
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
                "pushes: newest page": [f"{base}/push/"] * n,
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
            print(f"{'endpoint':42} | p50 ms | p95 ms | server p50 | server p95 | results")
            with httpx.Client(timeout=60) as client:
                client.get(f"{base}/jobs/")  # warm up the pool and the plans
                for name, urls in shapes.items():
                    p50, p95, s50, s95, size = time_requests(client, urls)
                    print(
                        f"{name:42} | {p50:6.1f} | {p95:6.1f} | {s50:10.1f} | {s95:10.1f} "
                        f"| {size:7.1f}"
                    )
        finally:
            if server:
                server.stop()
            engine.dispose()
            drop()  # type: ignore[operator]


if __name__ == "__main__":
    main()
