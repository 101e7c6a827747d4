"""The simulated CI: pushes, decision tasks, test runs and Treeherder, on a virtual clock.

Time moves only in `advance`. Every outcome is drawn from the scenario seed and the
entity it belongs to (push, label, copy, run), never from the order of requests, so two
plays of one scenario agree whatever their clients ask.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sheriff.errors import SheriffError
from sheriff.sim import draws, etl
from sheriff.sim.catalog import Catalog
from sheriff.sim.entities import (
    INFRA_EXCEPTION,
    INFRA_NO_SUMMARY,
    INFRA_STORM,
    Failure,
    Job,
    LabelSpec,
    Outcome,
    Push,
    Run,
    Task,
)
from sheriff.sim.scenario import Scenario

DECISION_LABEL = "Gecko Decision Task"
_AUTHORS = ("ahal", "jmaher", "aryx", "sylvestre", "emilio", "jrmuizel", "mstange", "nika")
_WORKER_GROUPS = {"linux": "us-central1-b", "windows": "us-east1-c", "macosx": "mdc1"}
Transition = Callable[["World", str, Task, Run], None]


class WorldError(SheriffError):
    """A request the simulated CI refuses (unknown task, bad action input)."""


def platform_os(platform: str) -> str:
    """Taskcluster's `tags.os` for a machine platform."""
    if platform.startswith("windows"):
        return "windows"
    if platform.startswith("macosx"):
        return "macosx"
    return "linux"


class World:
    """Everything the simulated CI knows, advanced by a virtual clock."""

    def __init__(
        self,
        scenario: Scenario,
        listeners: list[Transition] | None = None,
        *,
        push_id_offset: int = 0,
        job_id_offset: int = 0,
    ) -> None:
        self.scenario = scenario
        # Treeherder ids of one world among several behind one Treeherder (sim/multi.py).
        self._push_id_offset = push_id_offset
        self.seed = scenario.seed
        self.catalog = Catalog(scenario)
        self.start = scenario.start
        self.minutes = 0.0
        self.lock = threading.RLock()
        self.pushes: list[Push] = []
        self.tasks: dict[str, Task] = {}
        self.groups: dict[str, list[Task]] = {}
        self.group_versions: dict[str, int] = {}
        self.index: dict[str, str] = {}
        self.jobs: dict[int, Job] = {}
        self.jobs_by_task: dict[str, list[Job]] = {}
        self.th = etl.Ingested()
        self.transitions: list[Transition] = list(listeners or [])
        self.action_created: Counter[tuple[int, str, str]] = Counter()
        self.line_counts: Counter[str] = Counter()
        self.line_first_push: dict[str, int] = {}
        self.action_tasks_created = 0
        self.hook_triggered: list[str] = []  # action tasks created by triggerHook, in order
        self._events: list[tuple[float, int, str, Any]] = []
        self._sequence = 0
        self._next_job_id = 1 + job_id_offset
        self._static_chunks: dict[int, list[tuple[str, ...]]] = {}
        for i in range(scenario.pushes):
            self._at(i * scenario.push_interval_minutes, "push", i)
        self.advance(0)

    # -- the clock ---------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        """The virtual time."""
        return self.start + timedelta(minutes=self.minutes)

    def time_of(self, minutes: float) -> datetime:
        return self.start + timedelta(minutes=minutes)

    def iso(self, minutes: float) -> str:
        """Taskcluster's timestamp format (milliseconds, `Z`)."""
        return self.time_of(minutes).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def advance(self, minutes: float = 0.0) -> None:
        """Play every event up to `minutes` from now, in time order."""
        if minutes < 0:
            raise WorldError("the virtual clock only moves forward")
        with self.lock:
            target = self.minutes + minutes
            while self._events and self._events[0][0] <= target:
                when, _, kind, subject = heapq.heappop(self._events)
                self.minutes = max(self.minutes, when)
                getattr(self, f"_on_{kind.replace('-', '_')}")(subject)
            self.minutes = target

    def advance_to(self, when: datetime) -> None:
        """Advance the clock to a given time (no-op when it has passed)."""
        delta = (when.astimezone(UTC) - self.now).total_seconds() / 60
        self.advance(max(0.0, delta))

    @property
    def finished(self) -> bool:
        """True once every push has arrived and nothing is left to happen."""
        return not self._events

    def _at(self, when: float, kind: str, subject: Any) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (when, self._sequence, kind, subject))

    # -- pushes and decision tasks -------------------------------------------------------

    def _on_push(self, index: int) -> None:
        scenario = self.scenario
        revision = draws.revision(self.seed, "push", index)
        decision_id = draws.slug(self.seed, "decision", index)
        graph = self._full_graph(index)
        scheduled = [
            label
            for label in graph
            if draws.unit(self.seed, "scheduled", index, label) < scenario.schedule_fraction
        ]
        active = [
            i
            for i, r in enumerate(scenario.regressions)
            if r.push <= index and (r.fixed_at is None or index < r.fixed_at)
        ]
        author = _AUTHORS[int(draws.unit(self.seed, "author", index) * len(_AUTHORS))]
        push = Push(
            index=index,
            revision=revision,
            pushlog_id=160_000 + index,
            push_id=1_500_000 + self._push_id_offset + index,
            time=self.minutes,
            author=f"{author}@mozilla.com",
            decision_task_id=decision_id,
            graph=graph,
            scheduled=scheduled,
            regressions=active,
        )
        self.pushes.append(push)
        task = Task(
            task_id=decision_id,
            kind="decision-task",
            push=push,
            label=DECISION_LABEL,
            created=self.minutes,
            parent=decision_id,
        )
        duration = 3.0 + draws.unit(self.seed, "decision-time", index) * 3.0
        self._add_task(task, Outcome("completed", duration=duration, wait=0.5))

    def _on_decision_done(self, task: Task) -> None:
        push = task.push
        for label in push.scheduled:
            spec = push.graph[label]
            self.create_test_task(push, spec, parent=push.decision_task_id)
        repo = self.scenario.repository
        self.index[f"gecko.v2.{repo}.revision.{push.revision}.taskgraph.decision"] = task.task_id
        self.index[f"gecko.v2.{repo}.pushlog-id.{push.pushlog_id}.decision"] = task.task_id
        self.index[f"gecko.v2.{repo}.latest.taskgraph.decision"] = task.task_id

    def _full_graph(self, index: int) -> dict[str, LabelSpec]:
        graph: dict[str, LabelSpec] = {}
        for p, platform in enumerate(self.scenario.platforms):
            for s, catalog in enumerate(self.catalog.suites):
                suite = catalog.suite
                chunks = self._chunks(s, p, index)
                for c in range(1, suite.chunks + 1):
                    suffix = f"-{c}" if suite.chunks > 1 else ""
                    label = f"test-{platform.platform}/{platform.collection}-{suite.name}{suffix}"
                    graph[label] = LabelSpec(label, p, s, c, chunks[c - 1])
        return graph

    def _chunks(self, suite: int, platform: int, push: int) -> list[tuple[str, ...]]:
        catalog = self.catalog.suites[suite]
        if not self.scenario.dynamic_chunking:
            return self._chunks_static(suite)
        # Dynamic chunking deals afresh on every push: start from the static deal and
        # move a quarter of the manifests to other chunks (cheaper than a full shuffle).
        static = self._chunks_static(suite)
        chunks = [list(c) for c in static]
        count = len(chunks)
        if count > 1:
            rng = draws.rng(self.seed, "chunks", suite, platform, push)
            random = rng.random
            for _ in range(max(1, len(catalog.manifests) // 4)):
                a, b = int(random() * count), int(random() * count)
                if a != b and chunks[a] and chunks[b]:
                    i, j = int(random() * len(chunks[a])), int(random() * len(chunks[b]))
                    chunks[a][i], chunks[b][j] = chunks[b][j], chunks[a][i]
        return [tuple(sorted(c)) for c in chunks]

    def _chunks_static(self, suite: int) -> list[tuple[str, ...]]:
        cached = self._static_chunks.get(suite)
        if cached is None:
            catalog = self.catalog.suites[suite]
            rng = draws.rng(self.seed, "chunks", suite)
            cached = self._static_chunks[suite] = _deal(
                catalog.manifests, catalog.suite.chunks, rng
            )
        return cached

    # -- tasks and runs -----------------------------------------------------------------

    def create_test_task(
        self,
        push: Push,
        spec: LabelSpec,
        *,
        parent: str,
        action: str | None = None,
        action_tag: str | None = None,
        label: str | None = None,
        manifests: tuple[str, ...] | None = None,
        symbol_suffix: str = "",
        group_suffix: str = "",
        test_paths_env: str | None = None,
        confirm_paths_env: str | None = None,
    ) -> Task:
        """Create a test task of `spec`'s label (or `label`) on `push`, pending now.

        `action` is the callback that created it (None: the decision task), `action_tag`
        the `tags.action` Gecko gives such tasks (None: untagged).
        """
        label = label or spec.label
        copy = push.label_copies.get(label, 0)
        push.label_copies[label] = copy + 1
        task = Task(
            task_id=draws.slug(self.seed, "task", push.index, label, copy),
            kind="test",
            push=push,
            label=label,
            created=self.minutes,
            parent=parent,
            spec=spec,
            manifests=spec.manifests if manifests is None else manifests,
            copy=copy,
            action=action,
            action_tag=action_tag,
            symbol_suffix=symbol_suffix,
            group_suffix=group_suffix,
            test_paths_env=test_paths_env,
            confirm_paths_env=confirm_paths_env,
        )
        if action is None:
            task.classified = (
                draws.unit(self.seed, "classified", push.index, spec.label)
                < self.scenario.classified_fraction
            )
        else:
            self.action_created[(push.index, label, action)] += 1
        self._add_task(task, self._draw_outcome(task, 0))
        return task

    def _touch(self, task: Task) -> None:
        """Note that a task's status changed (its cached JSON and its group's pages are stale)."""
        task.status_json = None
        group = task.push.decision_task_id
        self.group_versions[group] = self.group_versions.get(group, 0) + 1

    def _add_task(self, task: Task, outcome: Outcome) -> None:
        self.tasks[task.task_id] = task
        self.groups.setdefault(task.push.decision_task_id, []).append(task)
        self._new_run(task, "scheduled", outcome)

    def _new_run(self, task: Task, reason: str, outcome: Outcome) -> None:
        run = Run(
            run_id=len(task.runs), reason_created=reason, scheduled=self.minutes, outcome=outcome
        )
        task.runs.append(run)
        self._touch(task)
        self._at(self.minutes + outcome.wait, "start", (task, run))
        self._emit("task-pending", task, run)
        etl.run_changed(self, task, run, "pending")

    def _on_start(self, subject: tuple[Task, Run]) -> None:
        task, run = subject
        if run.state != "pending":
            return  # cancelled meanwhile
        run.state = "running"
        run.started = self.minutes
        family = platform_os(self._platform_name(task))
        run.worker_group = _WORKER_GROUPS.get(family, "us-central1-b")
        run.worker_id = draws.slug(self.seed, "worker", task.task_id, run.run_id)[:12].lower()
        self._touch(task)
        self._at(self.minutes + run.outcome.duration, "resolve", (task, run))
        self._emit("task-running", task, run)
        etl.run_changed(self, task, run, "running")

    def _on_resolve(self, subject: tuple[Task, Run]) -> None:
        task, run = subject
        if run.state != "running":
            return
        outcome = run.outcome
        keys = (task.task_id, run.run_id)
        if task.kind == "decision-task":
            self._on_decision_done(task)
        elif task.kind == "action-callback":
            from sheriff.sim.actions import run_action_callback

            if not run_action_callback(self, task):
                outcome = Outcome("failed", outcome.duration, outcome.wait)
                run.outcome = outcome
        run.state = outcome.state
        run.resolved = self.minutes
        if outcome.state == "exception":
            pick = draws.unit(self.seed, "exception-reason", *keys) < 0.5
            run.reason_resolved = "worker-shutdown" if pick else "claim-expired"
        else:
            run.reason_resolved = outcome.state
        self._touch(task)
        self._emit(f"task-{outcome.state}", task, run)
        if outcome.state == "exception" and task.retries_left > 0:
            self._new_run(task, "retry", self._draw_outcome(task, run.run_id + 1))
        etl.run_changed(self, task, run, "completed")

    def cancel(self, task_id: str) -> Task:
        """Cancel a task as `queue.cancelTask` does: an unresolved run ends `exception`."""
        with self.lock:
            task = self.task(task_id)
            run = task.runs[-1] if task.runs else None
            if run is not None and run.state in ("pending", "running"):
                run.state = "exception"
                run.reason_resolved = "canceled"
                run.resolved = self.minutes
                self._touch(task)
                self._emit("task-exception", task, run)
                etl.run_changed(self, task, run, "completed")
            return task

    def rerun(self, task: Task) -> bool:
        """`queue.rerunTask`: a failed or exception task gets a new run (reasonCreated
        `rerun`); anything else is left alone (Gecko's `_rerun_task` checks the state)."""
        if task.kind != "test" or task.state not in ("failed", "exception"):
            return False
        self._new_run(task, "rerun", self._draw_outcome(task, len(task.runs)))
        return True

    def task(self, task_id: str) -> Task:
        task = self.tasks.get(task_id)
        if task is None:
            raise WorldError(f"no task {task_id}")
        return task

    def add_action_task(self, push: Push, task: Task) -> None:
        """Create an action task (from a triggered hook) that runs a few virtual minutes."""
        duration = 2.0 + draws.unit(self.seed, "action-time", task.task_id) * 2.0
        self.action_tasks_created += 1
        self._add_task(task, Outcome("completed", duration=duration, wait=0.5))

    def _platform_name(self, task: Task) -> str:
        if task.spec is None:
            return "gecko-decision"
        return self.scenario.platforms[task.spec.platform].platform

    # -- outcomes -----------------------------------------------------------------------

    def _draw_outcome(self, task: Task, run_id: int) -> Outcome:
        assert task.spec is not None
        seed = self.seed
        keys = (task.push.index, task.label, task.copy, run_id)
        suite = self.scenario.suites[task.spec.suite]
        low, high = suite.duration_minutes
        u_duration, u_wait, u_infra, u_kind, u_cut = draws.units(seed, 5, "run", *keys)
        duration = low + u_duration * (high - low)
        wait = 0.5 + u_wait * 4.5
        storm = self._storm(task, keys)
        if storm is not None:
            kind = INFRA_STORM if storm.errorsummary else INFRA_NO_SUMMARY
            return Outcome("failed", duration * u_cut, wait, infra=kind)
        if u_infra < self.scenario.infra_failure_rate:
            kind = INFRA_EXCEPTION if u_kind < 0.5 else INFRA_NO_SUMMARY
            state = "exception" if kind == INFRA_EXCEPTION else "failed"
            # An infrastructure failure cuts the run short.
            return Outcome(state, duration * u_cut, wait, infra=kind)
        failures: dict[str, Failure] = {}
        flaky, regressed = self._candidates(task.manifests)
        for test, rate in flaky:
            if draws.unit(seed, "flake", *keys, test) < rate:
                failures[test] = Failure(test, None)
        if regressed and task.push.regressions:
            platform = self.scenario.platforms[task.spec.platform].platform
            regressions = self.scenario.regressions
            for r, test in regressed:
                regression = regressions[r]
                if r not in task.push.regressions:
                    continue
                if regression.platforms != "all" and platform not in regression.platforms:
                    continue
                hit = draws.unit(seed, "regress", *keys, test) < regression.fail_rate
                # A flaky test broken on this push, failing with its own line (`failure:
                # same`), fails at one combined rate: which of the two draws hit tells
                # nothing anyone could see (same test, same line), and a sheriff files the
                # failure under the regression. The draws, and so the history, are the same.
                same_line = test in failures and regression.failure == "same"
                if hit or same_line:
                    failures[test] = Failure(test, r)
        state = "failed" if failures else "completed"
        return Outcome(state, duration, wait, failures=tuple(failures[t] for t in sorted(failures)))

    def _storm(self, task: Task, keys: tuple[object, ...]) -> Any:
        """The storm that fails this run, if its pool is in one when the run is scheduled."""
        if not self.scenario.storms or task.spec is None:
            return None
        queue = self.scenario.platforms[task.spec.platform].task_queue_id
        for i, storm in enumerate(self.scenario.storms):
            begin = storm.start_minutes
            if storm.task_queue_id != queue or not begin <= self.minutes < begin + storm.minutes:
                continue
            if draws.unit(self.seed, "storm", i, *keys) < storm.failure_rate:
                return storm
        return None

    def _candidates(
        self, manifests: tuple[str, ...]
    ) -> tuple[list[tuple[str, float]], list[tuple[int, str]]]:
        """The flaky tests and the (regression, test) pairs among a manifest set."""
        flaky_by_manifest = self.catalog.flaky
        regressed_by_manifest = self.catalog.regressed_by_manifest
        flaky = [pair for m in manifests if m in flaky_by_manifest for pair in flaky_by_manifest[m]]
        regressed = [
            pair
            for m in manifests
            if m in regressed_by_manifest
            for pair in regressed_by_manifest[m]
        ]
        return flaky, regressed

    # -- Treeherder (sheriff.sim.etl) ----------------------------------------------------

    def later(self, minutes: float, action: Callable[..., None], *args: Any) -> None:
        """Call `action(*args)` `minutes` from now on the virtual clock."""
        self._at(self.minutes + minutes, "call", (action, args))

    def _on_call(self, subject: tuple[Callable[..., None], tuple[Any, ...]]) -> None:
        action, args = subject
        action(*args)

    def next_job_id(self) -> int:
        job_id = self._next_job_id
        self._next_job_id += 1
        return job_id

    # -- listeners, truth and counters ----------------------------------------------------

    def _emit(self, exchange: str, task: Task, run: Run) -> None:
        for listener in self.transitions:
            listener(self, exchange, task, run)

    def push_by_revision(self, revision: str) -> Push | None:
        return next((p for p in self.pushes if p.revision == revision), None)

    def truth(self) -> dict[str, Any]:
        """Ground truth: every failed original test run (a case) and every regression's culprit."""
        from sheriff.sim.truth import ground_truth

        with self.lock:
            return ground_truth(self)

    def played_truth(self) -> dict[str, Any]:
        """`truth()` plus what clients made happen: the tasks actions created per (push,
        label), and the action tasks `triggerHook` created (one per hook call that got
        through, whether or not its answer reached the client)."""
        out = self.truth()
        out["action_tasks"] = self.action_counts()
        with self.lock:
            out["hook_triggers"] = list(self.hook_triggered)
        return out

    def action_counts(self) -> list[dict[str, Any]]:
        """Tasks created by actions per (push, label), in all and per action."""
        with self.lock:
            rows: dict[tuple[int, str], dict[str, Any]] = {}
            for (p, label, action), n in sorted(self.action_created.items()):
                row = rows.setdefault(
                    (p, label),
                    {
                        "push": self.pushes[p].revision,
                        "push_index": p,
                        "label": label,
                        "tasks": 0,
                        "by_action": {},
                    },
                )
                row["tasks"] += n
                row["by_action"][action] = n
            return list(rows.values())


def _deal(manifests: tuple[str, ...], chunks: int, rng: Any) -> list[tuple[str, ...]]:
    order = list(manifests)
    rng.shuffle(order)
    return [tuple(sorted(order[c::chunks])) for c in range(chunks)]
