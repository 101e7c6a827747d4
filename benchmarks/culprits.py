"""Culprit search compared: linear, linear by label (no same manifests), and bisect.

Plays a scenario (default: the bundled autoland-day, dynamic chunking) end to
end through `sheriff.triage.simrun.play` once per backfill configuration and prints, side
by side, the regressions, the culprits named and how many were right, and the backfilled
runs spent. Target: bisect names >= 90 % of culprits correctly with fewer runs than
linear. Prints figures; never fails on them.

Accuracy is given twice: over every true regression, and over those in scope, the ones
that failed at least one run on a queue sheriff is configured to triage (SPEC §3 rule 5;
`--queue-prefixes`, default the setting, `gecko-t/t-linux-`). A regression that shows
only on other queues never gets a verdict, so no backfill looks for its culprit.

    .venv/bin/python benchmarks/culprits.py [SCENARIO] [--policy history]
        [--queue-prefixes gecko-t/t-linux-,gecko-t/win] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

SCENARIO = Path("autoland-day")  # a file, or a bundled scenario by name

CONFIGURATIONS = (
    ("linear", "linear", True),
    ("linear by label", "linear", False),
    ("bisect", "bisect", True),
)


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=SCENARIO)
    parser.add_argument("--policy", help="verdict policy (default: the setting)")
    parser.add_argument(
        "--queue-prefixes",
        help="comma-separated queue prefixes sheriff triages (default: the setting)",
    )
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="drive sheriff.backfill on the simulated world in process (seed triage rule, "
        "no HTTP) instead of the end-to-end sheriff.triage.simrun.play",
    )
    args = parser.parse_args()

    options: dict[str, Any] = {}
    if args.queue_prefixes:
        options["queue_prefixes"] = [p for p in args.queue_prefixes.split(",") if p]
    if args.isolated:
        play = play_isolated
    else:
        from sheriff.triage.simrun import play

    rows: list[dict[str, Any]] = []
    for name, backfill, same_manifests in CONFIGURATIONS:
        started = time.perf_counter()
        metrics = play(
            args.scenario,
            policy=args.policy,
            backfill=backfill,
            same_manifests=same_manifests,
            **options,
        )
        culprits = metrics["culprits"]
        in_scope = culprits.get("in_scope", culprits["regressions"])
        rows.append(
            {
                "configuration": name,
                "regressions": culprits["regressions"],
                "in_scope": in_scope,
                "found": culprits["found"],
                "correct": culprits["correct"],
                "accuracy": _ratio(culprits["correct"], culprits["regressions"]),
                "accuracy_in_scope": _ratio(culprits["correct"], in_scope),
                "precision": _ratio(culprits["correct"], culprits["found"]),
                "backfill_runs": culprits["backfill_runs"],
                "wall_seconds": time.perf_counter() - started,
            }
        )
        # Each line as soon as it is known: a long play interrupted keeps what it measured.
        print(
            f"played {args.scenario.name} with {name}: {rows[-1]['wall_seconds']:.1f} s: "
            f"{json.dumps(culprits, sort_keys=True)}",
            flush=True,
        )

    header = (
        f"{'backfill':<16} {'regr.':>5} {'in scope':>8} {'found':>5} {'correct':>7} "
        f"{'accuracy':>8} {'in scope':>8} {'runs':>6}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['configuration']:<16} {row['regressions']:>5} {row['in_scope']:>8} "
            f"{row['found']:>5} {row['correct']:>7} {row['accuracy']:>8.2f} "
            f"{row['accuracy_in_scope']:>8.2f} {row['backfill_runs']:>6}"
        )
    linear = next(r for r in rows if r["configuration"] == "linear")
    bisect = next(r for r in rows if r["configuration"] == "bisect")
    print(
        f"bisect: accuracy {bisect['accuracy']:.2f}, {bisect['accuracy_in_scope']:.2f} over the "
        f"{bisect['in_scope']} regressions in scope (target >= 0.90), "
        f"{bisect['backfill_runs']} runs vs linear {linear['backfill_runs']} "
        f"({_ratio(bisect['backfill_runs'], linear['backfill_runs']):.2f}x; target < 1)"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


# -- isolated: sheriff.backfill against the simulated world, without HTTP ------------------


class _Isolated:
    """Plays a scenario's world in process and drives sheriff.backfill on top of it.

    Triage is the seed rule played from the world's own runs (5 retriggers, a regression
    when at least 2 show a failure line of the original), and the actions a request asks
    for are created as Gecko's callbacks would create them, without the action task in
    between. Everything sheriff.backfill sees comes through the store: jobs from the
    world's task definitions and runs, observations from its parsed failure lines.
    """

    RETRIGGERS = 5

    def __init__(
        self,
        scenario_path: Path,
        settings: Any,
        tick_minutes: float = 10.0,
        details: bool = False,
        queue_prefixes: tuple[str, ...] = ("gecko-t/t-linux-",),
    ) -> None:
        from sheriff.sim.scenario import load_scenario
        from sheriff.sim.world import World
        from sheriff.store.db import open_database

        self.scenario = load_scenario(scenario_path)
        self.world = World(self.scenario)
        self.settings = settings
        self.tick = tick_minutes
        self.tmp = tempfile.TemporaryDirectory()
        self.engine = open_database(f"sqlite:///{self.tmp.name}/culprits.db")
        self.changed: set[str] = set()
        self.world.transitions.append(lambda _w, _ex, task, _run: self.changed.add(task.task_id))
        self.unparsed: set[tuple[str, int]] = set()
        self.failed_originals: set[str] = set()
        self.cases: dict[str, list[str]] = {}  # original task → retrigger task ids
        self.decided: set[str] = set()
        self.requests: list[dict[str, Any]] = []
        self.backfill_runs = 0
        self.tests_loaded = False
        self.details = details
        self.queue_prefixes = queue_prefixes

    def play(self) -> dict[str, Any]:
        end = self.scenario.pushes * self.scenario.push_interval_minutes + 12 * 60
        while self.world.minutes < end:
            self.world.advance(self.tick)
            self._sync()
            self._triage()
            self._advance_backfills()
        return self._metrics()

    # -- the store -------------------------------------------------------------------------

    def _sync(self) -> None:
        from sheriff.model.job import job_from_task
        from sheriff.sim import tasks as sim_tasks
        from sheriff.store.loader import load_jobs, load_push_manifests
        from sheriff.store.schema import push

        jobs = []
        for task_id in sorted(self.changed):
            task = self.world.tasks[task_id]
            if task.kind != "test":
                continue
            definition = sim_tasks.definition(self.world, task)
            for run in task.runs:
                jobs.append(
                    job_from_task(
                        task_id, definition, run.run_id, sim_tasks.run_dict(self.world, run)
                    )
                )
                if run.state == "failed":
                    self.unparsed.add((task_id, run.run_id))
                    if task.action is None:
                        self.failed_originals.add(task_id)
        self.changed.clear()
        with self.engine.begin() as conn:
            load_jobs(conn, jobs)
            if not self.tests_loaded and jobs:
                push_id = conn.execute(sa.select(push.c.id)).scalars().first()
                load_push_manifests(conn, push_id, {}, self.world.catalog.manifest_tests)
                self.tests_loaded = True
            self._observe(conn)

    def _observe(self, conn: sa.Connection) -> None:
        from sheriff.model.failure_lines import normalise_failure_line
        from sheriff.sim.artifacts import failure_lines
        from sheriff.store.schema import job, run_observation

        for task_id, run_id in sorted(self.unparsed):
            th_jobs = [j for j in self.world.jobs_by_task.get(task_id, []) if j.run_id == run_id]
            if not th_jobs or th_jobs[0].parsed > self.world.minutes:
                continue
            task = self.world.tasks[task_id]
            lines = [
                normalise_failure_line(line.text)
                for line in failure_lines(self.world, task, task.runs[run_id])
                if line.text.startswith("TEST-UNEXPECTED-")
            ]
            job_id = conn.execute(
                sa.select(job.c.id).where(job.c.task_id == task_id, job.c.run_id == run_id)
            ).scalar_one()
            conn.execute(
                sa.insert(run_observation).values(
                    job_id=job_id,
                    treeherder_job_id=th_jobs[0].job_id,
                    parse_status="failed" if th_jobs[0].parse_failed else "parsed",
                    failure_lines=None if th_jobs[0].parse_failed else lines,
                    updated_at=self.world.now,
                )
            )
            self.unparsed.discard((task_id, run_id))

    # -- triage (the seed rule, from the store's observations) ------------------------------

    def _lines(self, conn: sa.Connection, task_id: str) -> list[str] | None:
        from sheriff.store.schema import job, run_observation

        row = conn.execute(
            sa.select(
                job.c.state,
                job.c.result,
                run_observation.c.parse_status,
                run_observation.c.failure_lines,
            )
            .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
            .where(job.c.task_id == task_id)
            .order_by(job.c.run_id.desc())
        ).first()
        if row is None or row.state != "completed":
            return None
        if row.result == "success":
            return []
        if row.result != "testfailed" or row.parse_status is None:
            return None
        return list(row.failure_lines or [])

    def _triage(self) -> None:
        from sheriff.backfill import open_report_for_case
        from sheriff.store.schema import job, triage_case

        world = self.world
        for task_id in self.failed_originals:
            task = world.tasks[task_id]
            if task.task_id in self.cases or task.classified:
                continue
            if task.state != "failed" or not task.runs[-1].outcome.failures:
                continue  # exceptions and runs without errorsummary are infra
            platform = self.scenario.platforms[task.spec.platform]
            if not platform.task_queue_id.startswith(self.queue_prefixes):
                continue
            self.cases[task.task_id] = [
                world.create_test_task(
                    task.push,
                    task.spec,
                    parent=task.task_id,
                    action="retrigger-multiple",
                    manifests=task.manifests,
                ).task_id
                for _ in range(self.RETRIGGERS)
            ]
        self.failed_originals.clear()
        with self.engine.begin() as conn:
            for original, retriggers in self.cases.items():
                if original in self.decided:
                    continue
                lines = self._lines(conn, original)
                seen = [self._lines(conn, r) for r in retriggers]
                if lines is None or any(s is None for s in seen):
                    continue
                self.decided.add(original)
                shown = sum(1 for s in seen if set(s or []) & set(lines))
                if shown < 2:
                    continue
                job_id, push_id = conn.execute(
                    sa.select(job.c.id, job.c.push_id).where(job.c.task_id == original)
                ).first()
                now = self.world.now
                case_id = conn.execute(
                    sa.insert(triage_case)
                    .values(
                        job_id=job_id,
                        push_id=push_id,
                        label=world.tasks[original].label,
                        state="decided",
                        verdict="regression",
                        policy="seed",
                        opened_at=now,
                        decided_at=now,
                        updated_at=now,
                    )
                    .returning(triage_case.c.id)
                ).scalar_one()
                open_report_for_case(conn, case_id, now, self.settings)

    # -- actions, as Gecko's callbacks create their tasks ---------------------------------

    def _enqueue(self, conn: sa.Connection, key: str, strategy_name: str, **request: Any) -> None:
        if any(r["key"] == key for r in self.requests):
            return
        self.requests.append({"key": key, "strategy": strategy_name, **request})
        world = self.world
        inp = request["input"]
        if strategy_name == "backfill":
            target = world.tasks[request["task_id"]]
            for index in range(
                target.push.index - 1, max(-1, target.push.index - inp["depth"] - 1), -1
            ):
                self._create(world.pushes[index], target.label, target.manifests, inp["times"])
        else:
            push = world.push_by_revision(request["revision"])
            spec = push.graph.get(inp["label"])
            # As mozharness reads MOZHARNESS_TEST_PATHS: the suite's entry, else the default.
            paths = inp.get("test_manifests")
            suite = world.scenario.suites[spec.suite].name if spec else ""
            chosen = paths.get(suite) if isinstance(paths, dict) else None
            manifests = tuple(chosen or ()) or (spec.manifests if spec else ())
            self._create(push, inp["label"], manifests, inp["times"])

    def _create(self, push: Any, label: str, manifests: tuple[str, ...], times: int) -> None:
        spec = push.graph.get(label)
        if spec is None:
            return  # the label does not exist on that push: Gecko schedules nothing
        for _ in range(times):
            self.world.create_test_task(
                push,
                spec,
                parent=push.decision_task_id,
                action="backfill-task",
                action_tag="backfill-task",
                manifests=tuple(manifests),
            )
            self.backfill_runs += 1

    def _advance_backfills(self) -> None:
        from sheriff.backfill import advance_backfills
        from sheriff.sim.tasks import definition

        advance_backfills(
            self.engine,
            now=self.world.now,
            actions=self._enqueue,
            settings=self.settings,
            task_definition=lambda task_id: definition(self.world, self.world.tasks[task_id]),
        )

    def _metrics(self) -> dict[str, Any]:
        from sheriff.backfill import culprit_metrics, reports
        from sheriff.triage.simrun import regressions_in_scope

        world_truth = self.world.truth()
        truth = world_truth["regressions"]
        with self.engine.connect() as conn:
            in_scope = regressions_in_scope(conn, world_truth["cases"], self.queue_prefixes)
            culprits = culprit_metrics(conn, truth, len(in_scope))
            if self.details:
                index = {p.revision: p.index for p in self.world.pushes}
                for t in truth:
                    print(
                        f"truth {t['index']}: push {t['culprit_push']} rate {t['fail_rate']} "
                        f"platforms {t['platforms']} tests {t['tests']}"
                    )
                for r in reversed(reports(conn)):
                    rec = r["records"][0] if r["records"] else {}
                    print(
                        f"report {r['id']}: push {index[r['revision']]} cases {r['cases']} "
                        f"rate {r['fail_rate']:.2f} {r['status']} culprit "
                        f"{index.get(r['culprit_revision'] or '', '-')} rounds "
                        f"{rec.get('iterations')} runs "
                        f"{rec.get('runs_failed', 0) + rec.get('runs_successful', 0)} "
                        f"{rec.get('platform')} {r['tests']} {rec.get('reason') or ''}"
                    )
        self.engine.dispose()
        self.tmp.cleanup()
        return {"culprits": culprits}


def play_isolated(
    scenario_path: Path,
    *,
    policy: str | None = None,
    backfill: str,
    same_manifests: bool = True,
    queue_prefixes: list[str] | None = None,
    details: bool = False,
) -> dict[str, Any]:
    """`play`'s culprit figures from the isolated harness (policy: always the seed rule)."""
    from sheriff.backfill import BackfillSettings
    from sheriff.config import settings as configured

    settings = BackfillSettings(strategy=backfill, same_manifests=same_manifests)
    prefixes = tuple(queue_prefixes or configured().queue_prefixes)
    return _Isolated(scenario_path, settings, details=details, queue_prefixes=prefixes).play()


if __name__ == "__main__":
    main()
