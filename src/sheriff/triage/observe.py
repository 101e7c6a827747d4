"""What Treeherder and the artifacts say about runs, fetched until it can no longer change.

For a run (job row): Treeherder's job id and classification once it has ingested the run
(an open case's classification is read again every pass: `refresh_classifications`),
the parse status of its log until it is `parsed` or `failed` (an exception run has no log:
`no-log` at once), then its bug suggestions (the failure lines, normalised, and the open
intermittent bugs among what the bug search found) once; for original runs also the
errorsummary artifact of that very run (`getArtifact`; an `error` artifact, 424, counts as
none), judged missing or incomplete only once Taskcluster says the run resolved (`status`).
Everything is kept in `run_observation`; a finished observation is not fetched again.

When Treeherder cannot help — its parse failed, or it has not parsed the log (or not even
ingested the job, or not answered) `raw_log_after` after the run ended — sheriff reads the
run's `public/logs/live_backing.log` itself (`sheriff.model.failure_lines.log_error_lines`):
parse status `raw-log`, the same failure lines, no bug suggestions (those come from
Treeherder's bug search).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.ci.artifacts import errorsummary_text, gunzipped, read_whole
from sheriff.ci.taskcluster import (
    ArtifactNotUploaded,
    TaskclusterClients,
    TaskclusterError,
    TaskclusterNotFound,
    paginate,
)
from sheriff.ci.treeherder import Treeherder, TreeherderError, parse_status
from sheriff.errors import InputError
from sheriff.model.bugs import intermittent_bugs
from sheriff.model.case import ErrorSummaryState, errorsummary_artifact
from sheriff.model.errorsummary import parse_errorsummary
from sheriff.model.failure_lines import (
    failure_lines,
    failure_lines_from_bug_suggestions,
    log_error_lines,
)
from sheriff.model.policy import (
    FINAL_PARSE_STATUSES,
    LINES_READ,
    NO_LOG,
    RAW_LOG,
    READ_IT_YOURSELF,
    run_lines_known,
    run_lines_never,
)
from sheriff.model.task_shapes import TaskShapeError, check_status
from sheriff.store.loader import insert_ignoring_conflicts
from sheriff.store.schema import job, job_type, run_observation, triage_case

log = logging.getLogger(__name__)

# Runs Treeherder lists no log for: exception runs (taskcluster_pulse/handler.py).
NO_LOG_RESULTS = frozenset({"exception", "retry", "usercancel", "superseded"})
# Requests in flight at once while a pass fetches: enough to keep the network (or the
# simulator's core) busy while this process parses and stores, few enough to be polite.
FETCHERS = 4
LIVE_LOG = "public/logs/live_backing.log"
# Statuses after which nobody has any more to read of the log's lines.
NOTHING_TO_READ = LINES_READ | {NO_LOG}
# Taskcluster run states after which a worker uploads nothing more.
RESOLVED_RUN_STATES = frozenset({"completed", "failed", "exception"})
# What an errorsummary read says that only a resolved run's artifacts can tell.
NOT_THERE = frozenset({ErrorSummaryState.MISSING.value, ErrorSummaryState.INCOMPLETE.value})


def fetchers() -> ThreadPoolExecutor:
    """Threads for a pass's network calls; the database is only used from the caller's."""
    return ThreadPoolExecutor(max_workers=FETCHERS, thread_name_prefix="sheriff-fetch")


@dataclass(frozen=True)
class RunRef:
    """A run to observe; `errorsummary` says whether its artifact must be read too."""

    job_id: int
    task_id: str
    run_id: int
    errorsummary: bool = False
    treeherder_push_id: int | None = None  # lets one call find all the push's jobs
    result: str | None = None  # the run's result as stored (exception runs have no log)
    ended: datetime | None = None  # when the run resolved (None: not yet)

    @property
    def has_log(self) -> bool:
        return self.result not in NO_LOG_RESULTS


def observation_done(row: Any, want_errorsummary: bool) -> bool:
    """Nothing more will be learnt about this run."""
    if row is None:
        return False
    status, lines = row["parse_status"], row["failure_lines"]
    lines_done = run_lines_known(status, lines) or run_lines_never(status, lines)
    # A log sheriff read itself still wants Treeherder's job (its id and classification).
    job_done = status != RAW_LOG or row["treeherder_job_id"] is not None
    return lines_done and job_done and (not want_errorsummary or row["errorsummary"] is not None)


def observations(conn: sa.Connection, job_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    ids = sorted(set(job_ids))
    found: dict[int, dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        rows = conn.execute(
            sa.select(run_observation).where(run_observation.c.job_id.in_(ids[start : start + 500]))
        ).mappings()
        found.update({r["job_id"]: dict(r) for r in rows})
    return found


@dataclass
class Ingested:
    """What one round learnt from Treeherder in bulk: jobs by push, log parse statuses."""

    jobs: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    pushes: set[int] = field(default_factory=set)
    parse_statuses: dict[int, str] = field(default_factory=dict)  # Treeherder job id → status
    unreachable: bool = False  # Treeherder did not answer this round: ask it nothing more
    # Treeherder is not asked this round by choice (the service's passes on Pulse messages:
    # a run that just ended is not ingested yet); nor is a raw log read in its stead.
    skipped: bool = False


class Observer:
    """Fetches what is still missing about runs, one service call at a time."""

    def __init__(
        self,
        engine: Engine,
        treeherder: Treeherder,
        clients: TaskclusterClients,
        repo: str,
        *,
        raw_log_after: timedelta = timedelta(minutes=30),
    ) -> None:
        self.engine = engine
        self.treeherder = treeherder
        self.clients = clients
        self.repo = repo
        self.raw_log_after = raw_log_after
        # A run that passed has no failure lines: the service does not ask Treeherder for
        # its bug suggestions (an empty list). `sheriff triage` keeps asking, as it did.
        self.ask_passed_runs_for_lines = True

    def observe(
        self,
        runs: Sequence[RunRef],
        now: datetime,
        push_jobs: Mapping[int, Sequence[dict[str, Any]]] | None = None,
        *,
        treeherder: bool = True,
    ) -> int:
        """Bring the observations of `runs` up to date; returns how many changed.

        `push_jobs`: Treeherder's job lists of pushes (by its push id) read already this
        pass; a run found there is not asked for again (one that is not, is). `treeherder`
        False: only what Taskcluster says (the errorsummary) is fetched."""
        with self.engine.connect() as conn:
            known = observations(conn, (r.job_id for r in runs))
        pending = [r for r in runs if not observation_done(known.get(r.job_id), r.errorsummary)]
        ingested = Ingested(skipped=not treeherder)
        if ingested.skipped:
            pending = [r for r in pending if r.errorsummary]
        else:
            try:
                ingested = self._ingested_jobs(
                    [
                        r
                        for r in pending
                        if (known.get(r.job_id) or {}).get("treeherder_job_id") is None
                    ],
                    push_jobs or {},
                )
                ingested.parse_statuses = self._parse_statuses(
                    [
                        job_id
                        for r in pending
                        if r.has_log
                        and (job_id := _job_id(known.get(r.job_id), ingested, r)) is not None
                        and (known.get(r.job_id) or {}).get("parse_status")
                        not in FINAL_PARSE_STATUSES
                    ]
                )
            except TreeherderError as exc:
                # Treeherder is down: what it would say waits, and the raw logs of runs that
                # ended long enough ago are read meanwhile.
                log.warning("Treeherder did not answer while observing runs: %s", exc)
                ingested.unreachable = True
        changed = 0
        # Fetching is network only and runs in threads; storing stays on this thread.
        with fetchers() as pool:
            updates = pool.map(
                lambda run: self._fetch(run, dict(known.get(run.job_id) or {}), ingested, now),
                pending,
            )
            for run, update in zip(pending, updates, strict=True):
                if update is None:
                    continue
                self._store(run.job_id, update, now)
                changed += 1
        return changed

    def _ingested_jobs(
        self, runs: Sequence[RunRef], push_jobs: Mapping[int, Sequence[dict[str, Any]]]
    ) -> Ingested:
        """Treeherder's jobs of these runs: the job lists of their pushes in one call."""
        ingested = Ingested()
        read = {
            p
            for p in {r.treeherder_push_id for r in runs}
            if p is not None and push_jobs.get(p) is not None
        }
        for push_id in read:
            for th_job in push_jobs[push_id]:
                ingested.jobs[(th_job["task_id"], int(th_job.get("retry_id", 0)))] = th_job
        # A push whose job list was read this pass answers for all its runs: one missing
        # from it is not ingested yet, and asking again (its list, or the task's jobs)
        # would only say so again.
        ingested.pushes |= read
        runs = [
            r
            for r in runs
            if (r.task_id, r.run_id) not in ingested.jobs and r.treeherder_push_id not in read
        ]
        by_push = Counter(r.treeherder_push_id for r in runs if r.treeherder_push_id is not None)
        # One run on one push: its task's jobs are the smaller answer. Anything more: the
        # job lists of all those pushes, in one call (`push_id__in`).
        if len(by_push) > 1 or any(count > 1 for count in by_push.values()):
            for push_id, th_jobs in self.treeherder.jobs_of_pushes(by_push).items():
                ingested.pushes.add(push_id)
                for th_job in th_jobs:
                    ingested.jobs[(th_job["task_id"], int(th_job.get("retry_id", 0)))] = th_job
        return ingested

    def _parse_statuses(self, job_ids: Sequence[int]) -> dict[int, str]:
        """Log parse statuses of many jobs, a hundred per call (`job_id` may repeat)."""
        statuses: dict[int, str] = {}
        ids = sorted(set(job_ids))
        for start in range(0, len(ids), 100):
            entries = self.treeherder.log_urls(self.repo, ids[start : start + 100])
            by_job: dict[int, list[dict[str, Any]]] = {}
            for entry in entries:
                by_job.setdefault(int(entry["job_id"]), []).append(entry)
            for job_id, urls in by_job.items():
                statuses[job_id] = parse_status(urls) or "pending"
        return statuses

    def _fetch(
        self,
        run: RunRef,
        row: dict[str, Any],
        ingested: Ingested,
        now: datetime,
    ) -> dict[str, Any] | None:
        update: dict[str, Any] = {}
        if ingested.skipped:
            return (self._errorsummary(run) or None) if row.get("errorsummary") is None else None
        if not ingested.unreachable:
            try:
                self._from_treeherder(run, row, ingested, update)
            except TreeherderError as exc:
                log.warning("Treeherder on task %s run %s: %s", run.task_id, run.run_id, exc)
        status = update.get("parse_status", row.get("parse_status"))
        unread = row.get("failure_lines") is None and "failure_lines" not in update
        if run.has_log and unread and self._read_it_yourself(run, status, now):
            update.update(self._raw_log(run, status))
        if run.errorsummary and row.get("errorsummary") is None:
            update.update(self._errorsummary(run))
        return update or None

    def _read_it_yourself(self, run: RunRef, status: str | None, now: datetime) -> bool:
        """Treeherder could not parse the log, or has not parsed it long after the run."""
        if status in READ_IT_YOURSELF:
            return True
        if status in NOTHING_TO_READ:
            return False
        return run.ended is not None and now - run.ended >= self.raw_log_after

    def _raw_log(self, run: RunRef, status: str | None) -> dict[str, Any]:
        """The run's failure lines from its live_backing.log (nothing when it would not
        download: the next pass tries again)."""
        try:
            text = read_whole(
                lambda: self.clients.artifact(run.task_id, run.run_id, LIVE_LOG),
                lambda raw: gunzipped(raw).decode("utf-8", "replace"),
            )
        except (ArtifactNotUploaded, TaskclusterNotFound):
            # No log to read: Treeherder's verdict on it stands (or, if it has none yet,
            # it may still come).
            return {"failure_lines": []} if status in READ_IT_YOURSELF else {}
        except (TaskclusterError, InputError) as exc:
            log.warning("%s of task %s run %s not read: %s", LIVE_LOG, run.task_id, run.run_id, exc)
            return {}
        lines = log_error_lines(text)
        return {
            "parse_status": RAW_LOG,
            "failure_lines": failure_lines(lines),
            "raw_failure_lines": lines,
        }

    def _from_treeherder(
        self, run: RunRef, row: dict[str, Any], ingested: Ingested, update: dict[str, Any]
    ) -> None:
        """What Treeherder says of the run (its job, parse status, bug suggestions) into
        `update`."""
        if row.get("treeherder_job_id") is None:
            th_job = ingested.jobs.get((run.task_id, run.run_id))
            # Absent from a push listed this round means: not ingested yet. Ask only
            # about runs whose push was not listed.
            if th_job is None and run.treeherder_push_id not in ingested.pushes:
                th_job = next(
                    (
                        j
                        for j in self.treeherder.jobs_of_task(run.task_id)
                        if int(j.get("retry_id", 0)) == run.run_id
                    ),
                    None,
                )
            if th_job is not None:
                update["treeherder_job_id"] = int(th_job["id"])
                update["classification_id"] = int(th_job.get("failure_classification_id") or 1)
        job_id = update.get("treeherder_job_id", row.get("treeherder_job_id"))
        status = row.get("parse_status")
        if job_id is not None and status not in FINAL_PARSE_STATUSES:
            # An exception run has no log to parse: waiting for one would be forever.
            status = ingested.parse_statuses.get(job_id, "pending") if run.has_log else NO_LOG
            update["parse_status"] = status
        if job_id is not None and status == "parsed" and row.get("failure_lines") is None:
            passed = run.result == "success" and not self.ask_passed_runs_for_lines
            suggestions = [] if passed else self.treeherder.bug_suggestions(self.repo, job_id)
            update["failure_lines"] = failure_lines_from_bug_suggestions(suggestions)
            update["raw_failure_lines"] = [
                search
                for search in (str(s.get("search", "")) for s in suggestions)
                if "TEST-UNEXPECTED-" in search or "PROCESS-CRASH" in search
            ]
            update["bug_suggestions"] = _trimmed(suggestions)

    def _errorsummary(self, run: RunRef) -> dict[str, Any]:
        """The run's errorsummary state and structured failures; nothing when not known yet.

        A worker uploads a run's artifacts before it resolves the run: a resolved run's
        listing is final (what it lacks is missing), an unresolved run's is not (it lists
        nothing yet). The stored run may be ahead of Taskcluster, as a Pulse message is a
        hint (in a play, one from another simulator on the same broker and scenario), so
        a missing or incomplete errorsummary, an infra verdict never recomputed (SPEC §3
        step 4), is stored only once Taskcluster's own status says the run resolved: one
        more call, for those runs alone. Until then the next pass reads it again. A
        complete one is complete whenever it is read."""
        found = self._read_errorsummary(run)
        if found.get("errorsummary") in NOT_THERE and not self._resolved(run):
            return {}
        return found

    def _resolved(self, run: RunRef) -> bool:
        """Taskcluster's status says this run resolved (no answer: not known, so no)."""
        try:
            answer = self.clients.queue.status(run.task_id)
            runs = check_status(answer.get("status") if isinstance(answer, dict) else None).get(
                "runs", []
            )
        except (TaskclusterError, TaskShapeError) as exc:
            log.warning("status of task %s not read: %s", run.task_id, exc)
            return False
        return run.run_id < len(runs) and runs[run.run_id]["state"] in RESOLVED_RUN_STATES

    def _read_errorsummary(self, run: RunRef) -> dict[str, Any]:
        missing = {"errorsummary": ErrorSummaryState.MISSING.value, "structured_failures": []}
        try:
            names = [
                a["name"]
                for a in paginate(
                    self.clients.queue.listArtifacts, run.task_id, str(run.run_id), key="artifacts"
                )
                if isinstance(a, dict) and isinstance(a.get("name"), str)
            ]
        except TaskclusterError:
            return {}  # artifacts of a run still being uploaded: look again next pass
        name = errorsummary_artifact(names)
        if name is None:
            return missing
        try:
            # This run's file: the latest run's may be another run's, or not there yet.
            text = read_whole(
                lambda: self.clients.artifact(run.task_id, run.run_id, name), errorsummary_text
            )
        except ArtifactNotUploaded:
            return missing  # the worker could not upload it: infrastructure, as if absent
        except (TaskclusterError, InputError) as exc:
            # A failed download is never evidence (only a file read whole and found
            # incomplete is): nothing is stored, and the next pass reads it again.
            log.warning("%s of task %s run %s not read: %s", name, run.task_id, run.run_id, exc)
            return {}
        summary = parse_errorsummary(text)
        return {
            "errorsummary": (
                ErrorSummaryState.COMPLETE if summary.complete else ErrorSummaryState.INCOMPLETE
            ).value,
            "structured_failures": [[f.test, f.subtest, f.status] for f in summary.failures],
        }

    def _store(self, job_id: int, update: dict[str, Any], now: datetime) -> None:
        with self.engine.begin() as conn:
            insert_ignoring_conflicts(
                conn, run_observation, [{"job_id": job_id, "updated_at": now}]
            )
            conn.execute(
                run_observation.update()
                .where(run_observation.c.job_id == job_id)
                .values(updated_at=now, **update)
            )


def _trimmed(suggestions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What sheriff keeps of bug suggestions: the line, and the open bugs that really are
    the failing test's intermittent bugs (not every bug the search found)."""
    return [{"search": s.get("search"), "open_bugs": intermittent_bugs(s)} for s in suggestions]


def refresh_classifications(
    conn: sa.Connection,
    push_id: int,
    th_jobs: Sequence[Mapping[str, Any]] | None,
    now: datetime,
) -> int:
    """Store Treeherder's classification, as `th_jobs` (the push's job list) shows it now,
    of every open case's original run on the push; returns how many changed."""
    from sheriff.triage.cases import OPEN_STATES

    if not th_jobs:
        return 0
    shown = {
        (str(j["task_id"]), int(j.get("retry_id") or 0)): j.get("failure_classification_id")
        for j in th_jobs
    }
    rows = conn.execute(
        sa.select(job.c.id, job.c.task_id, job.c.run_id, run_observation.c.classification_id)
        .join(triage_case, triage_case.c.job_id == job.c.id)
        .join(run_observation, run_observation.c.job_id == job.c.id)
        .where(triage_case.c.push_id == push_id, triage_case.c.state.in_(OPEN_STATES))
    ).all()
    changed = 0
    for row in rows:
        now_shown = shown.get((str(row.task_id), row.run_id))
        if now_shown is None or row.classification_id is None:
            continue  # not ingested yet: the first observation reads it
        if int(now_shown) != row.classification_id:
            conn.execute(
                run_observation.update()
                .where(run_observation.c.job_id == row.id)
                .values(classification_id=int(now_shown), updated_at=now)
            )
            changed += 1
    return changed


def latest_runs(
    conn: sa.Connection, push_id: int, labels: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """The latest run of every task of a push (of these labels only, when given), as job
    rows (mappings) with the task's `label` added."""
    later = sa.alias(job)
    stmt = (
        sa.select(job, job_type.c.name.label("label"))
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(
            job.c.push_id == push_id,
            ~sa.exists().where(later.c.task_id == job.c.task_id, later.c.run_id > job.c.run_id),
        )
    )
    if labels is not None:
        stmt = stmt.where(job_type.c.name.in_(sorted(set(labels))))
    return [dict(r) for r in conn.execute(stmt).mappings()]


def latest_runs_of_pushes(
    conn: sa.Connection, labels_by_push: Mapping[int, Collection[str]]
) -> list[dict[str, Any]]:
    """`latest_runs` of many pushes in one query, each push's of its own labels only; in
    push order, then as the database returns them."""
    if not labels_by_push:
        return []
    labels = sorted({label for wanted in labels_by_push.values() for label in wanted})
    later = sa.alias(job)
    stmt = (
        sa.select(job, job_type.c.name.label("label"))
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(
            job.c.push_id.in_(sorted(labels_by_push)),
            job_type.c.name.in_(labels),
            ~sa.exists().where(later.c.task_id == job.c.task_id, later.c.run_id > job.c.run_id),
        )
        .order_by(job.c.push_id)
    )
    wanted = {p: set(ls) for p, ls in labels_by_push.items()}
    return [dict(r) for r in conn.execute(stmt).mappings() if r["label"] in wanted[r["push_id"]]]


def _job_id(row: Mapping[str, Any] | None, ingested: Ingested, run: RunRef) -> int | None:
    """The run's Treeherder job id, stored or found in this round's push listings."""
    if row is not None and row.get("treeherder_job_id") is not None:
        return int(row["treeherder_job_id"])
    found = ingested.jobs.get((run.task_id, run.run_id))
    return int(found["id"]) if found is not None else None
