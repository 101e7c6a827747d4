"""Play a scenario against the service: the simulator publishing Pulse, `sheriff listen` and
N `sheriff worker` processes, each a real process on real RabbitMQ and PostgreSQL.

The harness (like `triage/simrun.py`, it alone knows both sides) moves the simulator's
virtual clock at a steady pace in wall time (holding it while Pulse messages or Celery
tasks wait in the queues, so that a busy machine slows CI down rather than leaving the
service behind), can kill a worker midway (SIGKILL, then starts
a fresh one) and restart the listener, and measures: the metrics of `sheriff sim run`, each
case's verdict, and the wall time from a run's failure message to the retrigger request
that covers it (observed on its own Pulse queue and by reading the request log).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import kombu
import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.ci.pulse import EXCHANGE_PREFIX, binding_keys
from sheriff.service.outage import CuttableProxy
from sheriff.sim.scenario import resolve_scenario
from sheriff.store.schema import action_request, backfill_record, job, triage_case
from sheriff.triage.cases import OPEN_STATES
from sheriff.triage.simrun import (
    EXTRA_HOURS,
    SIM_ACCESS_TOKEN,
    SIM_CLIENT_ID,
    SimProcess,
    case_outcomes,
    fault_losses,
    measure,
    require_empty_store,
    scenarios_of,
)

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"


class _Backlog:
    """Messages ready in the service's queues (not those a consumer holds)."""

    def __init__(self, url: str, queues: list[str]) -> None:
        self._connection = kombu.Connection(url, connect_timeout=5)
        self._channel = self._connection.channel()
        self._queues = queues

    def waiting(self) -> bool:
        for name in self._queues:
            try:
                _, ready, _ = self._channel.queue_declare(name, passive=True)
            except Exception:  # not declared yet: nothing waits in it
                self._channel = self._connection.channel()
                continue
            if ready:
                return True
        return False

    def consumers(self, name: str) -> int:
        try:
            _, _, consumers = self._channel.queue_declare(name, passive=True)
        except Exception:  # not declared yet
            self._channel = self._connection.channel()
            return 0
        return consumers

    def close(self) -> None:
        self._connection.release()


class _Maintenance:
    """VACUUM ANALYZE of the play's database every `every` wall seconds, only when the
    server's autovacuum is off (then nothing else would)."""

    def __init__(self, engine: sa.Engine, every: float) -> None:
        self._engine = engine
        self._every = every
        self._next = time.monotonic() + every
        self.done = 0
        with engine.connect() as conn:
            self._needed = conn.execute(sa.text("SHOW autovacuum")).scalar_one() == "off"

    def maybe(self) -> None:
        if not self._needed or time.monotonic() < self._next:
            return
        with self._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM ANALYZE"))
        self.done += 1
        self._next = time.monotonic() + self._every


def _tasks_stored(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count(sa.distinct(job.c.task_id)))).scalar_one()


@dataclass
class ServicePlay:
    """What to play and how: `run()` returns the metrics."""

    scenario: str | Path
    database_url: str  # PostgreSQL, empty
    amqp_url: str = AMQP_URL
    workers: int = 2
    speed: float = 10.0  # virtual minutes per wall second
    open_cases_every_seconds: float = 1.0
    catch_up_every_seconds: float = 30.0
    catch_up_full_every_seconds: float | None = None  # CI seconds; None: the default
    batch_seconds: float = 0.3
    kill_worker_at: float | None = None  # share of the pushes' span: SIGKILL a worker then
    restart_listener_at: float | None = None
    # Share of the pushes' span at which the service's broker connections are cut (through
    # a loopback proxy: the broker itself stays up for the simulator and the harness), and
    # for how many wall seconds.
    broker_outage_at: float | None = None
    broker_outage_seconds: float = 15.0
    policy: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    wall_limit_seconds: float = 900.0
    progress: Callable[[str], None] | None = None
    # Wall seconds between the harness's own VACUUM ANALYZE of the play's database, when
    # the server's autovacuum is off (as on this project's machine): a deployment's
    # PostgreSQL has it on, and without it the open cases' rewrites bloat `triage_case`
    # and its statistics go stale (a push query of every `open_cases` pass went from
    # under a millisecond to 90 ms late in the three-repository world).
    vacuum_every_seconds: float = 300.0

    def run(self) -> dict[str, Any]:
        path = resolve_scenario(self.scenario)
        loaded = scenarios_of(path)
        scenarios = loaded if isinstance(loaded, list) else [loaded]
        repositories = [s.repository for s in scenarios]
        tag = uuid.uuid4().hex[:10]
        engine = require_empty_store(self.database_url)
        self._failed_at: dict[str, float] = {}
        self._request_seen: dict[int, float] = {}
        self._stop = threading.Event()
        events = {"killed": 0, "listener_restarts": 0, "broker_outages": 0}
        proxy = None
        if self.broker_outage_at is not None:
            url = kombu.Connection(self.amqp_url)
            proxy = CuttableProxy((url.hostname or "127.0.0.1", url.port or 5672))
        outage_ends: float | None = None
        with SimProcess(path, pulse_url=self.amqp_url) as sim:
            env = self._env(sim.root_url, tag, repositories)
            if proxy is not None:
                through = proxy.url_for(self.amqp_url)
                env |= {"SHERIFF_PULSE_URL": through, "SHERIFF_CELERY_BROKER_URL": through}
            watcher = threading.Thread(
                target=self._watch_failures, args=(tag, repositories), daemon=True
            )
            watcher.start()
            processes: list[subprocess.Popen[bytes]] = []
            try:
                listener = self._start(["listen", "--batch-seconds", str(self.batch_seconds)], env)
                workers = [
                    self._start(["worker", "--live", *(["--beat"] if i == 0 else [])], env)
                    for i in range(self.workers)
                ]
                processes = [listener, *workers]
                backlog = _Backlog(
                    self.amqp_url, [env["SHERIFF_PULSE_QUEUE"], env["SHERIFF_CELERY_QUEUE"]]
                )
                # The queues exist and every process consumes before CI moves: a message
                # published before the listener's queue is declared would go nowhere.
                ready_by = time.monotonic() + 120
                while time.monotonic() < ready_by and (
                    backlog.consumers(env["SHERIFF_PULSE_QUEUE"]) < 1
                    or backlog.consumers(env["SHERIFF_CELERY_QUEUE"]) < self.workers
                ):
                    time.sleep(0.2)
                begin = sim.now
                span = timedelta(minutes=max(s.push_interval_minutes * s.pushes for s in scenarios))
                last_push, deadline = begin + span, begin + span + timedelta(hours=EXTRA_HOURS)
                started = time.monotonic()
                tick = 0.2
                next_report = time.monotonic() + 60
                held = 0
                vacuum = _Maintenance(engine, self.vacuum_every_seconds)
                while sim.now < deadline:
                    # The clock waits while messages or tasks queue up: on a busy machine
                    # the service falls behind instead of CI running away from it.
                    if backlog.waiting():
                        held += 1
                    else:
                        sim.advance(self.speed * tick)
                    self._poll_requests(engine)
                    share = (sim.now - begin) / span
                    if self.kill_worker_at is not None and share >= self.kill_worker_at:
                        self.kill_worker_at = None
                        victim = workers[-1]
                        victim.send_signal(signal.SIGKILL)
                        victim.wait()
                        events["killed"] += 1
                        workers[-1] = self._start(["worker", "--live"], env)
                        processes.append(workers[-1])
                    if self.restart_listener_at is not None and share >= self.restart_listener_at:
                        self.restart_listener_at = None
                        listener.send_signal(signal.SIGINT)
                        listener.wait(timeout=30)
                        events["listener_restarts"] += 1
                        listener = self._start(
                            ["listen", "--batch-seconds", str(self.batch_seconds)], env
                        )
                        processes.append(listener)
                    if self.broker_outage_at is not None and share >= self.broker_outage_at:
                        assert proxy is not None
                        self.broker_outage_at = None
                        proxy.cut()
                        events["broker_outages"] += 1
                        outage_ends = time.monotonic() + self.broker_outage_seconds
                    if outage_ends is not None and time.monotonic() >= outage_ends:
                        assert proxy is not None
                        proxy.restore()
                        outage_ends = None
                    if sim.now >= last_push and sim.finished and self._settled(engine):
                        break
                    if time.monotonic() - started > self.wall_limit_seconds:
                        break
                    vacuum.maybe()
                    if self.progress is not None and time.monotonic() >= next_report:
                        next_report = time.monotonic() + 60
                        self.progress(self._progress_line(engine, sim.now - begin, started))
                    time.sleep(tick)
                wall = time.monotonic() - started
                backlog.close()
                events["clock_held_ticks"] = held
                events["vacuums"] = vacuum.done
                truth, stats = sim.truth(), sim.stats()
            finally:
                self._stop.set()
                for p in processes:
                    if p.poll() is None:
                        p.send_signal(signal.SIGTERM)
                for p in processes:
                    try:
                        p.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        p.kill()
                self._delete_queues(tag)
                if proxy is not None:
                    proxy.close()
        metrics = measure(
            engine,
            truth,
            stats,
            truth.get("action_tasks", []),
            policy=self.policy or "history",
            virtual_hours=(sim.now - begin).total_seconds() / 3600,
        )
        outcome = case_outcomes(engine)
        metrics["wall_seconds"] = round(wall, 1)
        metrics["service"] = {
            "workers": self.workers,
            "speed_virtual_minutes_per_second": self.speed,
            **events,
            **fault_losses(engine, truth, outcome),
            "failure_to_retrigger_seconds": self._latency(engine),
            "tasks": _tasks_stored(engine),
            "tasks_per_second": round(_tasks_stored(engine) / wall, 1) if wall else 0.0,
        }
        metrics["outcome"] = outcome
        # Cases a person classifies in Treeherder some time after the run: which comes first,
        # their classification or sheriff's verdict, is a race with that person.
        metrics["classified_by_a_person"] = sorted(
            t for t, case in truth["cases"].items() if case.get("classified")
        )
        engine.dispose()
        return metrics

    # -- processes ------------------------------------------------------------------------

    def _env(self, root_url: str, tag: str, repositories: list[str]) -> dict[str, str]:
        env = {
            **os.environ,
            "SHERIFF_DATABASE_URL": self.database_url,
            "TASKCLUSTER_ROOT_URL": root_url,
            "SHERIFF_TREEHERDER_URL": root_url,
            "TASKCLUSTER_CLIENT_ID": SIM_CLIENT_ID,
            "TASKCLUSTER_ACCESS_TOKEN": SIM_ACCESS_TOKEN,
            "SHERIFF_CI_CLOCK_URL": f"{root_url}/__sim__/clock",
            "SHERIFF_PULSE_URL": self.amqp_url,
            "SHERIFF_CELERY_BROKER_URL": self.amqp_url,
            "SHERIFF_PULSE_QUEUE": f"queue/sheriff/play-{tag}",
            "SHERIFF_CELERY_QUEUE": f"sheriff-play-{tag}",
            "SHERIFF_REPOSITORIES": json.dumps(repositories),
            "SHERIFF_OPEN_CASES_EVERY_SECONDS": str(self.open_cases_every_seconds),
            "SHERIFF_CATCH_UP_EVERY_SECONDS": str(self.catch_up_every_seconds),
            **self.extra_env,
        }
        if self.catch_up_full_every_seconds is not None:
            env["SHERIFF_CATCH_UP_FULL_EVERY_SECONDS"] = str(self.catch_up_full_every_seconds)
        if self.policy:
            env["SHERIFF_POLICY"] = self.policy
        env.pop("SHERIFF_CONFIG", None)
        return env

    def _start(self, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        out = subprocess.DEVNULL
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            name = f"{args[0]}-{time.monotonic_ns()}.log"
            out = (self.log_dir / name).open("wb")  # type: ignore[assignment]
        return subprocess.Popen(
            [sys.executable, "-m", "sheriff", *args], env=env, stdout=out, stderr=out
        )

    def _delete_queues(self, tag: str) -> None:
        with kombu.Connection(self.amqp_url, connect_timeout=5) as connection:
            channel = connection.channel()
            for name in (f"queue/sheriff/play-{tag}", f"sheriff-play-{tag}"):
                try:
                    kombu.Queue(name, channel=channel).delete()
                except Exception:  # never declared (a process that did not start)
                    channel = connection.channel()

    # -- observing ------------------------------------------------------------------------

    def _progress_line(self, engine: sa.Engine, played: timedelta, started: float) -> str:
        with engine.connect() as conn:
            cases = conn.execute(sa.select(sa.func.count()).select_from(triage_case)).scalar_one()
            decided = conn.execute(
                sa.select(sa.func.count())
                .select_from(triage_case)
                .where(triage_case.c.state.not_in(OPEN_STATES))
            ).scalar_one()
        return (
            f"{time.monotonic() - started:.0f} s wall: {played.total_seconds() / 3600:.2f} "
            f"virtual h, {_tasks_stored(engine)} tasks stored, {cases} cases ({decided} ended)"
        )

    def _settled(self, engine: sa.Engine) -> bool:
        with engine.connect() as conn:
            open_cases = conn.execute(
                sa.select(sa.func.count())
                .select_from(triage_case)
                .where(triage_case.c.state.in_(OPEN_STATES))
            ).scalar_one()
            open_backfills = conn.execute(
                sa.select(sa.func.count())
                .select_from(backfill_record)
                .where(backfill_record.c.status.in_(("preliminary", "ready", "backfilled")))
            ).scalar_one()
            cases = conn.execute(sa.select(sa.func.count()).select_from(triage_case)).scalar_one()
        return cases > 0 and open_cases == 0 and open_backfills == 0

    def _watch_failures(self, tag: str, repositories: list[str]) -> None:
        """Wall time each failed run's message reached the broker's queues (our own queue)."""
        with kombu.Connection(self.amqp_url, connect_timeout=5) as connection:
            queue = kombu.Queue(
                f"sheriff-play-watch-{tag}",
                bindings=[
                    kombu.binding(
                        kombu.Exchange(EXCHANGE_PREFIX + "task-failed", type="topic"),
                        routing_key=key,
                    )
                    for key in binding_keys(repositories)
                ],
                exclusive=True,
                auto_delete=True,
            )

            def received(body: Any, message: Any) -> None:
                task_id = json.loads(message.body)["status"]["taskId"]
                self._failed_at.setdefault(task_id, time.monotonic())
                message.ack()

            with connection.Consumer(queue, callbacks=[received], accept=None):
                while not self._stop.is_set():
                    try:
                        connection.drain_events(timeout=0.2)
                    except TimeoutError:
                        continue

    def _poll_requests(self, engine: sa.Engine) -> None:
        with engine.connect() as conn:
            # Ids grow, though two workers may commit theirs out of order: a margin below
            # the highest seen catches a late one.
            ids = conn.execute(
                sa.select(action_request.c.id).where(
                    action_request.c.id > max(self._request_seen, default=0) - 200
                )
            ).scalars()
            now = time.monotonic()
            for request_id in ids:
                self._request_seen.setdefault(request_id, now)

    def _latency(self, engine: sa.Engine) -> dict[str, Any]:
        """Failure message → the first retrigger request naming the case's label on its push."""
        with engine.connect() as conn:
            cases = conn.execute(
                sa.select(job.c.task_id, triage_case.c.label, job.c.push_id)
                .join(job, job.c.id == triage_case.c.job_id)
                .where(triage_case.c.retriggers_requested > 0)
            ).all()
            requests = [
                r
                for r in request_log.requests(conn)
                if r.strategy in ("retrigger", "retrigger-multiple")
            ]
            revisions = dict(
                conn.execute(sa.text("SELECT id, revision FROM push")).all()  # push id → rev
            )
        first: dict[tuple[str, str], float] = {}
        for r in requests:
            seen = self._request_seen.get(r.id)
            if seen is None:
                continue
            for label in r.labels:
                key = (r.revision, label)
                first[key] = min(first.get(key, seen), seen)
        delays = []
        for c in cases:
            failed = self._failed_at.get(c.task_id)
            asked = first.get((revisions.get(c.push_id, ""), c.label))
            if failed is not None and asked is not None and asked >= failed:
                delays.append(asked - failed)
        if not delays:
            return {"cases": 0}
        delays.sort()
        return {
            "cases": len(delays),
            "p50": round(statistics.median(delays), 2),
            "p95": round(delays[int(0.95 * (len(delays) - 1))], 2),
            "max": round(delays[-1], 2),
        }
