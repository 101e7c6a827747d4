"""Treeherder's ingestion of the simulated CI: jobs from Pulse, log parsing, classifications.

Each behaviour follows a file of mozilla/treeherder (docs/simulator.md lists them):

- `etl/taskcluster_pulse/handler.py`: a run is a job from its first message on, pending
  or running with result `unknown`; an exception run gets no log references.
- `log_parser/parsers.py`: at most `MAX_ERROR_LINES` (40) error lines per log.
- `etl/artifact.py` (`store_text_log_summary_artifact`): a job whose parsed log shows a
  line never seen before (counter 0, or new in this revision) becomes 6.
- `log_parser/intermittents.py` (`check_and_mark_intermittent`, after each errorsummary):
  failed jobs whose failing groups passed in at least half of their runs over the push and
  the ones before it become 8, and an 8 that new data contradicts goes back to 6 or 1.
- `etl/classification_loader.py`: mozci's push classification adds a note "autoclassified
  intermittent" (7) to failures whose tests have a single tracking bug.
- People classify later (2 fixed by commit, 4 intermittent, 5 infra), with a note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sheriff.sim import draws
from sheriff.sim.entities import Job, Run, Task

if TYPE_CHECKING:
    from sheriff.sim.world import World

MAX_ERROR_LINES = 40
STATE_RANK = {"pending": 1, "running": 2, "completed": 3}
# intermittents.py: how far back it looks on autoland (repository 77), and elsewhere.
WINDOW_HOURS = 36
WINDOW_PUSHES = {77: 20}
DEFAULT_WINDOW_PUSHES = 3
REPOSITORY_ID = 77
# The classifications intermittents.py reads, and those it may change.
_READ = frozenset({1, 4, 6, 8})
_MARKABLE = frozenset({1, 6, 8})
# mozci classifies a push once its tasks are done; it autoclassifies about half of the
# intermittent failures it is sure of.
MOZCI_DELAY_MINUTES = (45.0, 90.0)
MOZCI_AUTOCLASSIFY = 0.5
SHERIFFS = ("aryx@mozilla.com", "csabou@mozilla.com", "imoraru@mozilla.com", "smolnar@mozilla.com")


@dataclass
class Ingested:
    """Treeherder's indexes of the world's jobs."""

    by_run: dict[tuple[str, int], Job] = field(default_factory=dict)
    # Parsed test jobs with group results per job family and push; the failed ones; and
    # those that ran each group, per (family, group) and push.
    family: dict[str, dict[int, list[Job]]] = field(default_factory=dict)
    failing: dict[str, dict[int, list[Job]]] = field(default_factory=dict)
    by_group: dict[tuple[str, str], dict[int, list[Job]]] = field(default_factory=dict)
    # The latest push on which a failed job of the family failed each group.
    last_failed: dict[str, dict[str, int]] = field(default_factory=dict)


def run_changed(world: World, task: Task, run: Run, state: str) -> None:
    """A run moved (pending, running, completed): Treeherder learns it a little later."""
    low, high = world.scenario.treeherder.ingest_delay_minutes
    delay = low + draws.unit(world.seed, "ingest", task.task_id, run.run_id, state) * (high - low)
    world.later(delay, _learn, world, task, run, state)


def _learn(world: World, task: Task, run: Run, state: str) -> None:
    index = world.th
    job = index.by_run.get((task.task_id, run.run_id))
    if job is None:
        job = Job(world.next_job_id(), task, run.run_id, world.minutes, state, world.minutes)
        index.by_run[(task.task_id, run.run_id)] = job
        world.jobs[job.job_id] = job
        world.jobs_by_task.setdefault(task.task_id, []).append(job)
        task.push.jobs.append(job)
    elif STATE_RANK[state] <= STATE_RANK[job.state]:
        return  # Treeherder never moves a job back (a late message)
    job.state = state
    job.last_modified = world.minutes
    if state == "completed":
        job.completed = world.minutes
        _completed(world, job)


def has_logs(job: Job) -> bool:
    """Whether Treeherder lists logs for the job: a completed run that did not end in
    exception (handler.py gives exception runs none)."""
    run = job.task.runs[job.run_id]
    return job.state == "completed" and run.state in ("completed", "failed")


def _completed(world: World, job: Job) -> None:
    task = job.task
    run = task.runs[job.run_id]
    keys = (task.task_id, job.run_id)
    th = world.scenario.treeherder
    if has_logs(job):
        low, high = th.parse_delay_minutes
        parse = low + draws.unit(world.seed, "parse", *keys) * (high - low)
        # `faults.log_parse_failures` adds to the scenario's own rate, on the same draw, so
        # that a faulty play's failed parses are a superset of the clean play's.
        failure_rate = min(1.0, th.parse_failure_rate + world.scenario.faults.log_parse_failures)
        job.parse_failed = draws.unit(world.seed, "parse-failed", *keys) < failure_rate
        job.parsed = world.minutes + parse
        if task.kind == "test" and not job.parse_failed:
            world.later(parse, _parse, world, job)
    if task.kind != "test" or run.state != "failed":
        return
    if task.classified:
        low, high = th.classification_delay_minutes
        after = (job.parsed or world.minutes) - world.minutes
        after += low + draws.unit(world.seed, "classify-delay", *keys) * (high - low)
        world.later(after, _person_classifies, world, job)
    failures = run.outcome.failures
    known = world.catalog.known_bug
    sure = draws.unit(world.seed, "mozci", *keys) < MOZCI_AUTOCLASSIFY
    if sure and failures and all(f.regression is None and f.test in known for f in failures):
        low, high = MOZCI_DELAY_MINUTES
        delay = low + draws.unit(world.seed, "mozci-delay", *keys) * (high - low)
        world.later(delay, _mozci_classifies, world, job)


def _person_classifies(world: World, job: Job) -> None:
    from sheriff.sim.truth import case_truth

    truth = case_truth(job.task)
    job.classification = {"regression": 2, "infra": 5}.get(truth, 4)
    who = SHERIFFS[int(draws.unit(world.seed, "sheriff", job.task.task_id) * len(SHERIFFS))]
    job.note = (who, "", world.minutes)
    job.classified_by = "person"
    job.last_modified = world.minutes


def _mozci_classifies(world: World, job: Job) -> None:
    if job.note is not None or job.api_notes:
        return  # a note exists already: mozci leaves the job alone
    job.classification = 7
    job.classified_by = "mozci"
    job.note = ("mozci", "Autoclassified by mozci bot as an intermittent failure", world.minutes)
    job.last_modified = world.minutes


# -- parsing ---------------------------------------------------------------------------


def _parse(world: World, job: Job) -> None:
    """Count the job's error lines as Treeherder's line cache does, in parse order; then
    artifact.py's new-failure rule and intermittents.py's marking."""
    from sheriff.sim.artifacts import errorsummary_listed, failure_lines
    from sheriff.sim.treeherder import cache_clean_line

    task = job.task
    run = task.runs[job.run_id]
    history = []
    if run.outcome.failures or run.outcome.infra:
        for line in failure_lines(world, task, run)[:MAX_ERROR_LINES]:
            key = cache_clean_line(line.text)
            seen = world.line_counts[key]
            first = world.line_first_push.setdefault(key, task.push.index)
            history.append((seen, first == task.push.index))
            world.line_counts[key] += 1
    job.line_history = history
    failed = run.state == "failed"
    if failed and any(counter == 0 or new for counter, new in history):
        job.new_failure = True
        if job.classification == 1:
            job.classification = 6
    if not errorsummary_listed(world, task, run):
        return  # no errorsummary: no group results
    job.groups = frozenset(task.manifests)
    test_manifest = world.catalog.test_manifest
    job.error_groups = frozenset(test_manifest[f.test] for f in run.outcome.failures)
    family = job_family(task.label)
    push = task.push.index
    world.th.family.setdefault(family, {}).setdefault(push, []).append(job)
    by_group = world.th.by_group
    for group in job.groups:
        key = (family, group)
        pushes = by_group.get(key)
        if pushes is None:
            pushes = by_group[key] = {}
        pushes.setdefault(push, []).append(job)
    if failed:
        world.th.failing.setdefault(family, {}).setdefault(push, []).append(job)
        last = world.th.last_failed.setdefault(family, {})
        for group in job.error_groups:
            last[group] = max(last.get(group, push), push)
    mark_intermittents(world, job)


def job_family(label: str) -> str:
    """intermittents.py's job type name: `-cf` characters stripped, the chunk number dropped."""
    name = label.strip("-cf")
    head, _, tail = name.rpartition("-")
    return head if head and tail.isdigit() else name


def _window(world: World, push: int) -> list[int]:
    """The job's push and the ones before it that intermittents.py looks at, newest first."""
    depth = WINDOW_PUSHES.get(REPOSITORY_ID, DEFAULT_WINDOW_PUSHES)
    start = world.pushes[push].time - WINDOW_HOURS * 60
    earlier = [p for p in range(push - 1, max(-1, push - depth - 1), -1)]
    return [push] + [p for p in earlier if world.pushes[p].time >= start]


def mark_intermittents(world: World, job: Job) -> None:
    """intermittents.py after `job`'s errorsummary: mark (8) and unmark failed jobs.

    Only failed jobs can change, and only through their failing groups, so the groups'
    pass rates are counted for those groups alone, and only after a job that ran one of
    them (or is one of the failed jobs).
    """
    family = job_family(job.task.label)
    window = _window(world, job.task.push.index)
    last = world.th.last_failed.get(family)
    if not last:
        return
    oldest = window[-1]
    for group in job.groups:
        if last.get(group, -1) >= oldest:
            break
    else:
        return  # no failed job nearby failed a group this job ran
    failing_by_push = world.th.failing.get(family, {})
    failing = [
        f
        for p in window
        for f in failing_by_push.get(p, ())
        if f.classification in _MARKABLE and f.task.runs[f.run_id].state == "failed"
    ]
    if not failing:
        return
    watched = frozenset().union(*(f.error_groups for f in failing))
    if all(f is not job for f in failing) and not (job.groups & watched):
        return
    by_push = world.th.family.get(family, {})
    if sum(len(by_push.get(p, ())) for p in window) <= 1:
        return  # one job alone: intermittents.py only checks infra then
    current = job.task.push.index
    every: dict[str, list[bool]] = {}
    here: dict[str, list[bool]] = {}
    for group in watched:
        ran = world.th.by_group.get((family, group), {})
        for p in window:
            for other in ran.get(p, ()):
                if other.classification not in _READ:
                    continue
                ok = group not in other.error_groups
                every.setdefault(group, []).append(ok)
                if p == current:
                    here.setdefault(group, []).append(ok)
    # Only groups the current push ran can change (as in intermittents.py).
    changed = {g for g in here if _pass_rate(every[g]) >= 0.5}
    current_changed = {g for g in here if _pass_rate(here[g]) >= 0.5}
    for f in failing:
        on_current = f.task.push.index == current
        green = f.error_groups <= (current_changed if on_current else changed)
        if green and (on_current or len(window) > 1):
            if f.classification in (1, 6):
                f.classification = 8
                f.classified_by = "treeherder"
                f.last_modified = world.minutes
        elif f.classification == 8:
            f.classification = 6 if f.new_failure else 1
            f.classified_by = None
            f.last_modified = world.minutes


def _pass_rate(statuses: Iterable[bool]) -> float:
    values = list(statuses)
    return sum(values) / len(values) if values else 0.0
