"""The service against polling, on the simulator with Pulse on (RabbitMQ and PostgreSQL).

Plays one world three ways: `sheriff sim run` (a polling `sheriff triage` pass every ten
virtual minutes, lockstep with the clock), then `sheriff listen` + 1 worker and + 2
workers (real processes, real Celery) while the simulator's clock runs freely at
`--speed` virtual minutes per wall second. Prints, side by side: failure message →
retrigger request in wall seconds (target p95 <= 5 s), Taskcluster + Treeherder requests
per eligible case (all of them, and less the Treeherder write-back only polling's play
does; target: the service at most half of polling), throughput, whether every case's
verdict is the one polling reached, and the requests per endpoint. Never fails on a figure.

    .venv/bin/python benchmarks/service.py [--scenario small] [--workers 1,2] [--speed 10]
        [--open-cases-every 1] [--catch-up-every 30] [--catch-up-full-every CI_SECONDS]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sheriff.service.simplay import AMQP_URL, ServicePlay
from sheriff.sim.scenario import resolve_scenario
from sheriff.sim.treeherder_api import SIM_TREEHERDER_TOKEN
from sheriff.triage.simrun import play_with_outcomes, scenarios_of

ADMIN_URL = "postgresql+psycopg://root@127.0.0.1:5432/test"


def _database(admin_url: str) -> tuple[str, str]:
    name = f"sheriff_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return name, sa.engine.make_url(admin_url).set(database=name).render_as_string(False)


def _drop(admin_url: str, name: str) -> None:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


# Treeherder write-back (classifications, bug links, and the reads made only before one):
# `sheriff sim run` holds a Treeherder token, the service's play does not, so these are
# left out of both sides of the comparison (they are per decided case, not per poll).
WRITE_BACK = (
    "GET /api/project/{repo}/note/",
    "POST /api/project/{repo}/note/",
    "GET /api/project/{repo}/jobs/{job_id}/",
    "GET /api/project/{repo}/bug-job-map/",
    "POST /api/project/{repo}/bug-job-map/",
)


def _all_requests(metrics: dict[str, Any]) -> float:
    per_case = metrics["http_requests_per_eligible_case"]
    return per_case["taskcluster"] + per_case["treeherder"]


def _requests(metrics: dict[str, Any]) -> float:
    """Taskcluster + Treeherder requests per eligible case, write-back left out."""
    endpoints = metrics.get("http_requests_by_endpoint", {})
    written = sum(endpoints.get(name, 0) for name in WRITE_BACK)
    eligible = metrics["eligible"]
    return _all_requests(metrics) - (written / eligible if eligible else 0.0)


def _decided(outcome: dict[str, Any]) -> int:
    return sum(state == "decided" for state, _ in outcome.values())


def _per_second(m: dict[str, Any], key: str) -> str:
    count, wall = m.get(key), m.get("wall_seconds")
    return f"{count / wall:.1f}" if count is not None and wall else "-"


def _print_row(label: str, m: dict[str, Any], base: float | None) -> None:
    service = m.get("service", {})
    latency = service.get("failure_to_retrigger_seconds", {})
    lat = f"{latency.get('p50', '-')}/{latency.get('p95', '-')}" if service else "-"
    print(
        f"{label:28} {lat:>25} {_all_requests(m):>9.2f} {_requests(m):>15.2f} "
        f"{f'{_requests(m) / base:.2f}x' if base else '-':>11} "
        f"{m.get('verdicts_differing_from_polling', '-')!s:>11} {m['wall_seconds']:>7} "
        f"{_per_second(m, 'tasks_stored'):>8} {_per_second(m, 'cases_decided'):>10} "
        # Hooks triggered that no request of sheriff's owns (the service's plays count them;
        # `sheriff sim run` does not), and runs beyond every run sheriff asked for (both).
        f"{service.get('actions_sent_twice', '-')!s:>11} {m.get('excess_retriggers', '-')!s:>7}",
        flush=True,
    )


def _print_endpoints(rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Taskcluster and Treeherder requests per eligible case, per endpoint, per play."""
    names: dict[str, int] = {}
    for _, m in rows:
        for name, n in m.get("http_requests_by_endpoint", {}).items():
            names[name] = names.get(name, 0) + n
    print("\nrequests per eligible case, by endpoint:")
    print(f"{'':60}" + "".join(f"{label[:22]:>24}" for label, _ in rows))
    for name in sorted(names, key=lambda k: -names[k]):
        cells = []
        for _, m in rows:
            n = m.get("http_requests_by_endpoint", {}).get(name, 0)
            cells.append(f"{n / m['eligible'] if m['eligible'] else 0:>24.2f}")
        print(f"{name[:60]:60}" + "".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="small")
    parser.add_argument(
        "--workers", default="1,2", help="comma-separated worker counts (empty: polling alone)"
    )
    parser.add_argument("--speed", type=float, default=10.0, help="virtual minutes per second")
    parser.add_argument("--open-cases-every", type=float, default=1.0, help="wall seconds")
    parser.add_argument(
        "--catch-up-every", type=float, default=30.0, help="wall seconds between catch-ups"
    )
    parser.add_argument(
        "--catch-up-full-every",
        type=float,
        default=None,
        help="CI seconds between full catch-up passes (default: the setting's, 3600)",
    )
    parser.add_argument("--admin-url", default=ADMIN_URL, help="PostgreSQL to create dbs in")
    parser.add_argument("--amqp-url", default=AMQP_URL)
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument(
        "--wall-limit", type=float, default=900.0, help="a service play stops after this"
    )
    parser.add_argument(
        "--skip-polling",
        action="store_true",
        help="the service alone (a world too big for both in one sitting): no comparison",
    )
    parser.add_argument(
        "--write-back",
        action="store_true",
        help="the service's workers hold the simulator's Treeherder token and write back, "
        "as `sheriff sim run` does: they then also read the failure lines write-back needs "
        "(failed runs on untriaged queues near a regression), which the history policy "
        "counts as evidence",
    )
    parser.add_argument(
        "--keep-stores",
        type=Path,
        help="keep every play's store to look into: polling's as a SQLite file in this "
        "directory, the service's PostgreSQL databases not dropped (their names printed)",
    )
    parser.add_argument(
        "--polling-json",
        type=Path,
        help="polling's play (metrics and each case's verdict) kept here: read when the "
        "file exists, else played and written (a big world's plays in several sittings)",
    )
    args = parser.parse_args()
    path = resolve_scenario(args.scenario)
    print(f"scenario {args.scenario}; service clock {args.speed:g} virtual min per wall second")
    print(
        f"{'':28} {'fail→retrigger p50/p95 s':>25} {'all/case':>9} {'no write-back':>15} "
        f"{'vs polling':>11} "
        f"{'verdicts ≠':>11} {'wall s':>7} {'tasks/s':>8} {'decided/s':>10} "
        f"{'sent twice':>11} {'excess':>7}",
        flush=True,
    )
    rows: list[tuple[str, dict[str, Any]]] = []
    expected: dict[str, Any] | None = None
    base = None
    if args.polling_json is not None and args.polling_json.exists():
        kept = json.loads(args.polling_json.read_text())
        polling = kept["metrics"]
        expected = {t: tuple(v) for t, v in kept["outcome"].items()}
    elif not args.skip_polling:
        started = time.perf_counter()
        store = None
        if args.keep_stores is not None:
            args.keep_stores.mkdir(parents=True, exist_ok=True)
            store = f"sqlite:///{(args.keep_stores / f'polling-{path.stem}.db').resolve()}"
            print(f"polling's store: {store}", flush=True)
        polling, expected = play_with_outcomes(path, scenarios_of(path), database_url=store)
        polling["cases_decided"] = _decided(expected)
        polling["wall_seconds"] = round(time.perf_counter() - started, 1)
        if args.polling_json is not None:
            args.polling_json.write_text(
                json.dumps({"metrics": polling, "outcome": expected}, default=str)
            )
    if expected is not None:
        rows.append(("polling (sheriff sim run)", polling))
        base = _requests(polling)
        _print_row(rows[0][0], polling, base)
    for workers in [int(w) for w in args.workers.split(",") if w.strip()]:
        name, url = _database(args.admin_url)
        try:
            played = ServicePlay(
                path,
                url,
                amqp_url=args.amqp_url,
                workers=workers,
                speed=args.speed,
                open_cases_every_seconds=args.open_cases_every,
                catch_up_every_seconds=args.catch_up_every,
                catch_up_full_every_seconds=args.catch_up_full_every,
                wall_limit_seconds=args.wall_limit,
                extra_env=(
                    {"SHERIFF_TREEHERDER_TOKEN": SIM_TREEHERDER_TOKEN} if args.write_back else {}
                ),
                progress=lambda line: print(f"  … {line}", flush=True),
            ).run()
        finally:
            if args.keep_stores is None:
                _drop(args.admin_url, name)
            else:
                print(f"  {workers} worker(s)' store kept: {url}", flush=True)
        outcome = played.pop("outcome")
        played["cases_decided"] = _decided(outcome)
        if expected is not None:
            changed = sorted(
                t for t in expected.keys() | outcome.keys() if expected.get(t) != outcome.get(t)
            )
            played["verdicts_differing_from_polling"] = len(changed)
            played["differing"] = [
                {"task_id": t, "polling": expected.get(t), "service": outcome.get(t)}
                for t in changed
            ]
        else:
            played["verdicts"]["cases_decided"] = sum(s == "decided" for s, _ in outcome.values())
        label = f"listen + {workers} worker{'s' * (workers > 1)}"
        rows.append((label, played))
        _print_row(label, played, base)
    _print_endpoints(rows)
    if args.json:
        args.json.write_text(json.dumps(dict(rows), indent=2, default=str))


if __name__ == "__main__":
    main()
