"""One triage pass: ingest what changed → advance every open case → send what they asked for.

All state lives in the database, so a pass can stop anywhere and the next one continues;
two passes at once never ask twice (see `triage.cases`). A pass reads only what can
still change: a push whose jobs have all resolved and whose cases are all decided is not
listed again, a push still at work is listed again only when Treeherder's job list shows
news on it, and a run's finished observation is not fetched again. Cases are opened over
every push of the window, listed or not, so a run stored by a pass that then failed gets
its case in the next pass that succeeds; a task group or artifact that will not download
is asked again on the next pass (`PassSummary.deferred`) while the pass goes on with the
other pushes (only when no group at all can be listed does the pass fail). Network calls run in a
few threads while the main thread stores (the database is only used from it), and the
history policy's reads of earlier pushes are shared by all the pushes of a pass.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.actions import log as request_log
from sheriff.actions.protocol import ActionsProtocol
from sheriff.backfill import BackfillSettings, advance_backfills, open_report_for_case
from sheriff.backfill import from_settings as backfill_from_settings
from sheriff.backfill.reports import OPEN_RECORD_STATUSES
from sheriff.backfill.settings import backfill_settings
from sheriff.backfill.status import pushes_to_watch
from sheriff.ci.artifacts import artifact_json, read_whole
from sheriff.ci.taskcluster import (
    TaskclusterClients,
    TaskclusterError,
    TaskclusterNotFound,
    TaskclusterUnavailable,
)
from sheriff.ci.treeherder import Treeherder, TreeherderError
from sheriff.config import Settings
from sheriff.errors import ConfigError
from sheriff.ingest.taskgroup import GroupListing, find_decision_task, list_group
from sheriff.model.history import configured as history_policy
from sheriff.model.job import PushDetails, PushRef
from sheriff.model.policy import Policy, UnknownPolicyError, get_policy
from sheriff.model.task_shapes import (
    TaskShapeError,
    check_manifests_by_task,
    check_tests_by_manifest,
)
from sheriff.store.history import PassCache
from sheriff.store.loader import (
    Interner,
    describe_pushes,
    ensure_pushes,
    load_jobs,
    load_push_manifests,
    record_sources,
)
from sheriff.store.schema import (
    backfill_record,
    job,
    push,
    push_label_manifest_set,
    repository,
    triage_case,
)
from sheriff.triage.cases import OPEN_STATES, PushPlan, advance_push, open_cases
from sheriff.triage.observe import (
    Observer,
    RunRef,
    fetchers,
    latest_runs_of_pushes,
    observation_done,
    observations,
    refresh_classifications,
)
from sheriff.triage.regressions import file_case, follow_regressions, report_of, serve_by

log = logging.getLogger(__name__)

MANIFESTS_BY_TASK = "public/manifests-by-task.json.gz"
# Treeherder's marking looks 36 hours back (intermittents.py): an 8 sheriff wrote may be
# taken back that long, and is looked at again this often.
REASSERT_FOR = timedelta(hours=36)
REASSERT_EVERY = timedelta(minutes=30)
PROTOCOL_HOURS = 1.0
TESTS_BY_MANIFEST = "public/tests-by-manifest.json.gz"


@dataclass
class PassSummary:
    """What one pass did, for the CLI's progress line and the tests."""

    pushes: int = 0
    groups_listed: int = 0
    jobs_written: int = 0
    cases_opened: int = 0
    runs_observed: int = 0
    decided: Counter[str] = field(default_factory=Counter)
    retriggers_asked: int = 0
    requests_sent: int = 0
    requests_dry_run: int = 0
    cancelled: int = 0
    open_cases: int = 0
    backfill_requests: int = 0
    culprits: int = 0
    open_backfills: int = 0
    classifications_sent: int = 0
    alerts_sent: int = 0
    # Cases whose retriggers a budget cut short (docs/service.md, "Budgets").
    budget_limited: int = 0
    # Downloads that failed for one push and are asked again next pass (the pass went on).
    deferred: list[str] = field(default_factory=list)


def policy_named(name: str, settings: Settings | None = None) -> Policy:
    """The policy of that name, with its thresholds from the settings where it has any."""
    try:
        if name == "history" and settings is not None:
            return history_policy(
                upper=settings.history_upper,
                lower=settings.history_lower,
                min_clean_runs=settings.history_min_clean_runs,
                at_cap=settings.history_at_cap,
                min_clean_runs_with_bug=settings.history_min_clean_runs_with_bug,
                waiver_ceiling=settings.history_waiver_ceiling,
                extend_from=settings.history_extend_from,
            )
        return get_policy(name)
    except UnknownPolicyError as exc:
        raise ConfigError(str(exc)) from exc
    except ValueError as exc:
        raise ConfigError(f"policy {name}: {exc}") from exc


@dataclass
class PushState:
    push_id: int
    revision: str
    decision_task_id: str | None
    listing: GroupListing | None = None


class Triage:
    """Runs passes for one repository with one policy."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        clients: TaskclusterClients,
        treeherder: Treeherder,
        *,
        repo: str,
        live: bool = False,
        policy: str | None = None,
        backfill: str | None = None,
    ) -> None:
        self.engine = engine
        # The repository's `[repository.<name>]` overrides: its queues, tiers, policy, budgets.
        settings = settings.for_repository(repo)
        self.settings = settings
        self.clients = clients
        self.treeherder = treeherder
        self.repo = repo
        self.live = live
        self.policy = policy_named(policy or settings.policy, settings)
        self.observer = Observer(
            engine,
            treeherder,
            clients,
            repo,
            raw_log_after=timedelta(minutes=self.settings.raw_log_after_minutes),
        )
        self.backfill = backfill_settings_of(settings, backfill)
        # Status of every task as last stored by this process: unchanged tasks of a listed
        # group are not derived and written again. A new process starts empty and rewrites
        # once, which changes nothing.
        self._stored_status: dict[str, tuple] = {}
        self._treeherder_push_ids: dict[str, int] = {}  # revision → Treeherder's push id
        self._manifests_done: set[int] = set()  # pushes whose manifest artifacts are stored
        # Ids of interned strings and manifest sets committed during this pass (cleared at
        # each pass, so that expiry by `sheriff cycle` never leaves a stale id behind long).
        self._interned: dict[str, dict[tuple, int]] = {}
        # The last listing of each push's task group (its unfinished action tasks), reused
        # while Treeherder shows nothing new on the push.
        self._listings: dict[int, GroupListing] = {}
        self._listed_revisions: dict[str, int] = {}  # revision → push id, of `_listings`
        self.last_due_runs: frozenset[int] = frozenset()  # runs `due_revisions` waits on
        self.last_due_by_revision: dict[str, frozenset[int]] = {}  # the same, by push
        # Treeherder's job list of each push read this pass (push id → jobs).
        self._th_jobs: dict[int, list[dict]] = {}
        self._writer: Treeherder | None = None  # Treeherder with sheriff's token, for writes
        self._reasserted: dict[str, datetime] = {}  # revision → when its 8s were looked at
        self._protocol: ActionsProtocol | None = None
        self._protocol_since = 0.0
        # Treeherder's push records asked for by revision (passes on given pushes).
        self._th_pushes: dict[str, dict] = {}

    def run_pass(
        self,
        *,
        since: datetime,
        until: datetime,
        now: datetime | None = None,
        progress: Callable[[str], None] | None = None,
        revisions: Collection[str] | None = None,
        backfills: bool = True,
        relist: Collection[str] | None = None,
        treeherder: bool = True,
        quiet_since: datetime | None = None,
    ) -> PassSummary:
        """One pass over the pushes of [since, until] and those with open cases; or, with
        `revisions`, over those pushes alone (what a Pulse message names: the service).
        `backfills` False leaves open backfills to a later `advance_backfills`.

        The service's passes on Pulse messages know what moved: `relist` names the pushes
        whose task group is listed (a message named a task not stored; a push this
        process has not listed yet is listed too), the others keep their last listing and
        Treeherder is not asked whether they moved. `treeherder` False asks Treeherder
        nothing (classifications, observations: a run that just ended is not ingested
        yet); what waits on it is for the `open_cases` passes (`due_revisions`).

        `quiet_since` (the service's cheaper catch-up): Treeherder is asked whether a push
        moved only for pushes with open cases or with a run stored as resolved since then,
        and a push with no task stored yet is listed only when a case or a backfill waits
        on it; the others are left to a later full pass."""
        now = now or datetime.now(UTC)
        say = progress or (lambda _msg: None)
        summary = PassSummary()
        self._interned.clear()
        self._th_jobs = {}
        pushes = self._discover(since, until, revisions)
        summary.pushes = len(pushes)
        to_list = self._to_list(pushes, relist, quiet_since)
        # Listing is waiting on the network; storing is work on the database: the next
        # groups are fetched while one is stored.
        with fetchers() as pool:
            fetched = pool.map(lambda state: self._fetch_listing(state, summary), to_list)
            for state, listing in zip(to_list, fetched, strict=True):
                say(f"listing task group of {state.revision[:12]}")
                if listing is not None:
                    self._store_listing(state, listing, summary)
        if to_list and len(summary.deferred) == len(to_list):
            # Not one group could be listed: Taskcluster is down, and this pass says so.
            raise TaskclusterUnavailable(summary.deferred[0])
        # Every push of the window, listed this pass or not: a run stored by a pass that then
        # failed (an artifact that would not download, an outage) still gets its case now.
        self._load_missing_manifests(pushes, summary)
        with self.engine.begin() as conn:
            summary.cases_opened = open_cases(conn, list(pushes), self.policy.name, now)
        # A push this process has not listed yet (its first case was just opened) waits for
        # the next pass, which lists it: its in-flight action tasks must be counted first.
        with_cases = [
            state
            for state in self._pushes_with_open_cases(pushes)
            if state.listing is not None or state.decision_task_id is None
        ]
        say(f"observing runs of {len(with_cases)} pushes with open cases")
        # Classifications first: the job lists they read serve the observations too.
        if treeherder:
            self._refresh_classifications(with_cases, now)
        summary.runs_observed = self.observer.observe(
            self._runs_to_observe(with_cases),
            now,
            push_jobs=self._th_jobs_by_push(pushes),
            treeherder=treeherder,
        )
        plans: list[PushPlan] = []
        history_cache = PassCache()
        for state in with_cases:
            with self.engine.begin() as conn:
                plan = advance_push(
                    conn,
                    push_id=state.push_id,
                    repo=self.repo,
                    revision=state.revision,
                    decision_task_id=state.decision_task_id,
                    policy=self.policy,
                    queue_prefixes=self.settings.queue_prefixes,
                    runs_to_come=state.listing.runs_to_come() if state.listing else {},
                    seen_action_tasks=(
                        {a.task_id for a in state.listing.action_tasks} if state.listing else ()
                    ),
                    now=now,
                    runs_wanted=self.settings.runs_wanted,
                    runs_most=max(self.settings.runs_most, self.settings.runs_wanted),
                    min_reproductions=self.settings.regression_min_reproductions,
                    count_dry_runs=not self.live,
                    on_regression=self._file_regression,
                    history_cache=history_cache,
                    tiers=self.settings.tiers,
                    retriggers_per_push=self.settings.retriggers_per_push,
                    retriggers_per_day=self.settings.retriggers_per_repository_per_day,
                )
            plans.append(plan)
            summary.budget_limited += plan.budget_limited
            summary.decided.update(plan.decided)
            summary.retriggers_asked += sum(plan.retriggers.values())
        if backfills:
            say("advancing backfills")
            self.advance_backfills(now, summary)
        with self.engine.begin() as conn:
            follow_regressions(conn, now)
        self.send(summary, now)
        self._cancel([t for plan in plans for t in plan.cancel], summary)
        self._write_back(summary, now)
        self._count_open(summary)
        return summary

    def advance_backfills(self, now: datetime, summary: PassSummary) -> None:
        """Move every open backfill record a step (requests go out with `send`)."""
        if not self.backfill.enabled:
            return
        backfills = advance_backfills(
            self.engine,
            now=now,
            observe=lambda ids: self._observe_jobs(ids, now),
            settings=self.backfill,
            task_definition=self.clients.queue.task,
        )
        summary.backfill_requests += backfills.requests
        summary.culprits += len(backfills.culprits)

    def _count_open(self, summary: PassSummary) -> None:
        with self.engine.connect() as conn:
            summary.open_cases = conn.execute(
                sa.select(sa.func.count())
                .select_from(triage_case)
                .where(triage_case.c.state.in_(OPEN_STATES))
            ).scalar_one()
            summary.open_backfills = conn.execute(
                sa.select(sa.func.count())
                .select_from(backfill_record)
                .where(backfill_record.c.status.in_(OPEN_RECORD_STATUSES))
            ).scalar_one()

    # -- ingest ---------------------------------------------------------------------------

    def _discover(
        self, since: datetime, until: datetime, revisions: Collection[str] | None = None
    ) -> dict[int, PushState]:
        """Pushes in the window (from Treeherder) and every push with an open case; or the
        pushes of `revisions` alone, those Treeherder knows."""
        if revisions is not None:
            found = self._pushes_of(revisions)
        else:
            found = list(
                self.treeherder.pushes(
                    self.repo, since=int(since.timestamp()), until=int(until.timestamp())
                )
            )
        self._treeherder_push_ids.update({p["revision"]: int(p["id"]) for p in found})
        with self.engine.begin() as conn:
            interner = Interner(conn)
            refs = {
                PushRef(self.repo, p["revision"], None): (
                    datetime.fromtimestamp(p["push_timestamp"], UTC),
                    None,
                )
                for p in found
            }
            ids = ensure_pushes(conn, interner, refs) if refs else {}
            if refs:
                record_sources(
                    conn,
                    self.repo,
                    self.settings.taskcluster_root_url,
                    self.settings.treeherder_url,
                )
            by_revision = {ref.revision: push_id for ref, push_id in ids.items()}
            describe_pushes(
                conn,
                {by_revision[p["revision"]]: PushDetails.from_treeherder(p) for p in found},
            )
            chosen = (
                sa.or_(
                    push.c.id.in_(list(ids.values())),
                    push.c.id.in_(
                        sa.select(triage_case.c.push_id).where(triage_case.c.state.in_(OPEN_STATES))
                    ),
                    push.c.id.in_(sorted(backfill_pushes(conn))),
                )
                if revisions is None
                else push.c.id.in_(list(ids.values()))
            )
            rows = conn.execute(
                sa.select(push.c.id, push.c.revision, push.c.decision_task_id)
                .join(repository, repository.c.id == push.c.repository_id)
                .where(repository.c.name == self.repo, chosen)
            ).all()
        return {r.id: PushState(r.id, r.revision, r.decision_task_id) for r in rows}

    def _pushes_of(self, revisions: Collection[str]) -> list[dict]:
        """Treeherder's records of these pushes, each asked for once per process (a push
        record does not change); a push Treeherder does not know yet is left out."""
        for revision in sorted(set(revisions) - set(self._th_pushes)):
            page = self.treeherder.get(f"/api/project/{self.repo}/push/", revision=revision)
            for found in page.get("results", []):
                if found["revision"] == revision:
                    self._th_pushes[revision] = found
        return [self._th_pushes[r] for r in revisions if r in self._th_pushes]

    def due_revisions(self) -> list[str]:
        """Revisions of pushes with an open case that waits on Treeherder or an artifact: a
        run of its label that has resolved and is not fully observed (its original's
        ingestion, errorsummary, log parsing; a retrigger's failure lines). A case waiting
        only for runs still running is not due: their Pulse messages say when they end."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(push.c.id, push.c.revision, push.c.decision_task_id)
                .join(repository, repository.c.id == push.c.repository_id)
                .where(
                    repository.c.name == self.repo,
                    push.c.id.in_(
                        sa.select(triage_case.c.push_id).where(triage_case.c.state.in_(OPEN_STATES))
                    ),
                )
            ).all()
        states = [PushState(r.id, r.revision, r.decision_task_id) for r in rows]
        refs = self._runs_to_observe(states)
        with self.engine.connect() as conn:
            known = observations(conn, (r.job_id for r in refs))
            push_of_job = dict(
                conn.execute(
                    sa.select(job.c.id, job.c.push_id).where(job.c.id.in_([r.job_id for r in refs]))
                ).all()
            )
        waiting = {
            r.job_id for r in refs if not observation_done(known.get(r.job_id), r.errorsummary)
        }
        self.last_due_runs = frozenset(waiting)
        by_push: dict[int, set[int]] = {}
        for j in waiting:
            by_push.setdefault(push_of_job[j], set()).add(j)
        self.last_due_by_revision = {
            s.revision: frozenset(by_push[s.push_id]) for s in states if s.push_id in by_push
        }
        return [s.revision for s in states if s.push_id in by_push]

    def unlisted(self, tasks: Collection[tuple[str, str]]) -> set[str]:
        """Revisions of the pushes whose last listing in this process lacks one of these
        (revision, task id): a task created since (an action task, the runs an action
        made) or a push this process has not listed. Against this process's listing, not
        the store: another worker may have stored the task, and this process's count of
        the runs an action has still to make is only right once it has seen the action."""
        return {
            revision
            for revision, task_id in tasks
            if self._lacks(self._listed_revisions.get(revision), task_id)
        }

    def _lacks(self, push_id: int | None, task_id: str) -> bool:
        """Whether this process's last listing of the push lacks the task (or it has none)."""
        listing = self._listings.get(push_id) if push_id is not None else None
        return listing is None or task_id not in listing.labels

    def watched_revisions(self) -> list[str]:
        """Revisions of this repository's pushes a backfill waits for runs on."""
        with self.engine.connect() as conn:
            watched = sorted(backfill_pushes(conn))
            if not watched:
                return []
            return list(
                conn.execute(
                    sa.select(push.c.revision)
                    .join(repository, repository.c.id == push.c.repository_id)
                    .where(repository.c.name == self.repo, push.c.id.in_(watched))
                ).scalars()
            )

    def open_labels(self, revisions: Collection[str]) -> dict[str, set[str]]:
        """The labels of the open cases of these pushes, by revision (pushes with some)."""
        if not revisions:
            return {}
        found: dict[str, set[str]] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(push.c.revision, triage_case.c.label)
                .join(push, push.c.id == triage_case.c.push_id)
                .join(repository, repository.c.id == push.c.repository_id)
                .where(
                    repository.c.name == self.repo,
                    push.c.revision.in_(list(revisions)),
                    triage_case.c.state.in_(OPEN_STATES),
                )
            )
            for revision, label in rows:
                found.setdefault(revision, set()).add(label)
        return found

    def _to_list(
        self,
        pushes: dict[int, PushState],
        relist: Collection[str] | None = None,
        quiet_since: datetime | None = None,
    ) -> list[PushState]:
        """Pushes whose task group can still change what sheriff knows (with `relist`:
        those it names, and those that must be listed)."""
        if not pushes:
            return []
        ids = list(pushes)
        with self.engine.connect() as conn:
            unresolved = set(
                conn.execute(
                    sa.select(job.c.push_id)
                    .distinct()
                    .where(job.c.push_id.in_(ids), job.c.state != "completed")
                ).scalars()
            )
            with_jobs = set(
                conn.execute(
                    sa.select(job.c.push_id).distinct().where(job.c.push_id.in_(ids))
                ).scalars()
            )
            open_ = set(
                conn.execute(
                    sa.select(triage_case.c.push_id)
                    .distinct()
                    .where(triage_case.c.push_id.in_(ids), triage_case.c.state.in_(OPEN_STATES))
                ).scalars()
            )
            searched = backfill_pushes(conn)
            stirring = (
                set(
                    conn.execute(
                        sa.select(job.c.push_id)
                        .distinct()
                        .where(job.c.push_id.in_(ids), job.c.end_time >= quiet_since)
                    ).scalars()
                )
                if quiet_since is not None
                else None
            )
        # A push with open cases keeps the action tasks of its last listing in memory; a
        # process that has none (just started) lists it again.
        must = {
            p
            for p in ids
            if p not in with_jobs or p in searched or (p in open_ and p not in self._listings)
        }
        if stirring is not None:
            # A push Pulse has named no task of yet (its decision task still at work, or
            # every message of it lost) is Pulse's to announce: the full pass lists it. What
            # is left of `must` is what a case or a backfill waits on.
            must &= searched | open_
        if relist is None:
            # A pass over the window: what it does not cover is not kept. (A pass on given
            # pushes keeps the others' listings: the next message may be theirs.)
            for gone in set(self._listings) - set(ids):
                del self._listings[gone]
            kept = set(self._listings)
            self._listed_revisions = {
                revision: p for revision, p in self._listed_revisions.items() if p in kept
            }
        maybe = [p for p in ids if p not in must and (p in unresolved or p in open_)]
        for p in maybe:
            pushes[p].listing = self._listings.get(p)
        if stirring is not None:
            # Pulse told of nothing on the others since `quiet_since`: if it lost a message
            # there, the next full pass finds it (a delay, never a loss).
            maybe = [p for p in maybe if p in open_ or p in stirring]
        if relist is not None:
            # Also a push whose stored tasks this process's listing lacks: another worker
            # listed it since, and the runs its actions have still to make are counted
            # from the action tasks of the listing.
            stale = self._listed_before_others(maybe)
            return [
                pushes[p] for p in ids if p in must or p in stale or pushes[p].revision in relist
            ]
        th_pushes = [self._treeherder_push_ids.get(pushes[p].revision) for p in maybe]
        read = self._jobs_of_pushes(th_pushes)
        th_jobs = [read.get(th_push) if th_push is not None else None for th_push in th_pushes]
        self._th_jobs = {p: jobs for p, jobs in zip(maybe, th_jobs, strict=True) if jobs}
        moved = {p for p, jobs in zip(maybe, th_jobs, strict=True) if self._moved(pushes[p], jobs)}
        return [pushes[p] for p in ids if p in must or p in moved]

    def _listed_before_others(self, push_ids: Collection[int]) -> set[int]:
        """Those of these pushes with a stored task their listing here does not have."""
        if not push_ids:
            return set()
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(job.c.push_id, job.c.task_id)
                .distinct()
                .where(job.c.push_id.in_(list(push_ids)))
            ).all()
        return {p for p, task_id in rows if self._lacks(p, task_id)}

    def _jobs_of_pushes(
        self, treeherder_push_ids: Iterable[int | None]
    ) -> dict[int, list[dict[str, Any]]]:
        """Treeherder's job lists of pushes (by its push id), in as few calls as it takes; a
        push it does not know (None) is not asked about, and none is read when it does not
        answer (then the groups are listed, and classifications are read on a later pass)."""
        ids = {p for p in treeherder_push_ids if p is not None}
        if not ids:
            return {}
        try:
            return self.treeherder.jobs_of_pushes(ids)
        except TreeherderError as exc:
            log.warning("Treeherder's jobs of %d pushes not read: %s", len(ids), exc)
            return {}

    def _moved(self, state: PushState, th_jobs: Sequence[dict] | None) -> bool:
        """Whether a push's task group may hold news: a task or run sheriff does not know,
        or a run Treeherder shows completed that is stored unresolved. Treeherder's job list
        of the push (`th_jobs`; None when Treeherder does not know the push) answers at a
        fraction of the cost of listing the group. It lists pending and running runs too
        (result `unknown`): one still pending or running is no news, or a busy push would
        be listed again on every pass."""
        if th_jobs is None:
            return True
        with self.engine.connect() as conn:
            stored = {
                (r.task_id, r.run_id): r.state
                for r in conn.execute(
                    sa.select(job.c.task_id, job.c.run_id, job.c.state).where(
                        job.c.push_id == state.push_id
                    )
                )
            }
        for j in th_jobs:
            was = stored.get((j["task_id"], int(j.get("retry_id", 0))))
            if was is None or (j.get("state") == "completed" and was != "completed"):
                return True
        return False

    def _th_jobs_by_push(self, pushes: dict[int, PushState]) -> dict[int, list[dict]]:
        """Treeherder's job lists read this pass (all of the pass's pushes), by Treeherder's
        push id."""
        th_push = {p: self._treeherder_push_ids.get(pushes[p].revision) for p in self._th_jobs}
        return {th_push[p]: jobs for p, jobs in self._th_jobs.items() if th_push[p]}

    def _refresh_classifications(self, states: Sequence[PushState], now: datetime) -> None:
        """Treeherder's classification of every open case's original, as it stands now.

        It changes after sheriff first reads it: Treeherder sets 6, sets and unsets 8, mozci
        adds 7, and a person may classify (2, 4, …) while sheriff is still deciding, which
        then ends the case. The push's job list was read this pass already to see whether
        the push moved; only pushes listed in full are asked for it here.
        """
        missing = [
            s
            for s in states
            if s.push_id not in self._th_jobs and s.revision in self._treeherder_push_ids
        ]
        read = self._jobs_of_pushes(self._treeherder_push_ids[s.revision] for s in missing)
        for s in missing:
            found = read.get(self._treeherder_push_ids[s.revision])
            if found is not None:
                self._th_jobs[s.push_id] = found
        with self.engine.begin() as conn:
            for state in states:
                refresh_classifications(conn, state.push_id, self._th_jobs.get(state.push_id), now)

    def _fetch_listing(self, state: PushState, summary: PassSummary) -> GroupListing | None:
        """The push's task group as Taskcluster lists it (network only: runs in a fetcher
        thread); None while its decision task is not indexed yet, or when Taskcluster
        failed to answer for this push (the next pass lists it again; the others go on)."""
        try:
            if state.decision_task_id is None:
                found = find_decision_task(self.clients, self.repo, state.revision)
                if found is None:
                    return None
                state.decision_task_id = found
            return list_group(self.clients, state.decision_task_id, self._stored_status)
        except TaskclusterError as exc:
            summary.deferred.append(f"task group of {state.revision[:12]}: {exc}")
            return None

    def _store_listing(self, state: PushState, listing: GroupListing, summary: PassSummary) -> None:
        summary.groups_listed += 1
        state.listing = listing
        if listing.decision_task is not None:
            # Its scopes are what sending an action checks: read here, not asked again.
            self._actions_protocol().remember_task(state.decision_task_id, listing.decision_task)
            listing.decision_task = None
        self._listings[state.push_id] = listing
        self._listed_revisions[state.revision] = state.push_id
        with self.engine.begin() as conn:
            interner = Interner(conn, self._interned)
            stats = load_jobs(conn, listing.jobs, interner)
            conn.execute(
                push.update()
                .where(push.c.id == state.push_id, push.c.decision_task_id.is_(None))
                .values(decision_task_id=state.decision_task_id)
            )
        # Only once the jobs are committed:
        listing.jobs = []  # stored; the listing is kept for its action tasks only
        self._stored_status.update(listing.status_keys)
        interner.publish(self._interned)
        summary.jobs_written += stats.jobs_inserted + stats.jobs_updated

    def _load_missing_manifests(self, pushes: dict[int, PushState], summary: PassSummary) -> None:
        """The decision task's manifests-by-task and tests-by-manifest, once per push with
        stored jobs. A download that fails is not fatal to the pass: it is asked again on
        the next one (the push is found here again until its manifests are stored)."""
        candidates = [
            p
            for p in pushes.values()
            if p.push_id not in self._manifests_done and p.decision_task_id is not None
        ]
        if not candidates:
            return
        ids = [p.push_id for p in candidates]
        with self.engine.connect() as conn:
            done = set(
                conn.execute(
                    sa.select(push_label_manifest_set.c.push_id)
                    .distinct()
                    .where(push_label_manifest_set.c.push_id.in_(ids))
                ).scalars()
            )
            with_jobs = set(
                conn.execute(
                    sa.select(job.c.push_id).distinct().where(job.c.push_id.in_(ids))
                ).scalars()
            )
        self._manifests_done.update(done)
        for state in candidates:
            if state.push_id in done or state.push_id not in with_jobs:
                continue
            try:
                by_label = check_manifests_by_task(
                    self._artifact_json(state.decision_task_id, MANIFESTS_BY_TASK)
                )
                by_manifest = check_tests_by_manifest(
                    self._artifact_json(state.decision_task_id, TESTS_BY_MANIFEST)
                )
            except TaskclusterNotFound:
                continue  # not uploaded yet (decision task running), or never: asked again
            except (TaskclusterError, TaskShapeError) as exc:
                # A failed download (no answer, garbage, a cut gzip, the wrong shape) is not
                # an answer: nothing is stored, and the next pass asks again.
                summary.deferred.append(f"manifests of {state.revision[:12]}: {exc}")
                continue
            with self.engine.begin() as conn:
                load_push_manifests(conn, state.push_id, by_label, by_manifest)
            self._manifests_done.add(state.push_id)

    def _artifact_json(self, task_id: str, name: str) -> object:
        return read_whole(
            lambda: self.clients.latest_artifact(task_id, name),
            lambda raw: artifact_json(raw, name),
        )

    def _pushes_with_open_cases(self, pushes: dict[int, PushState]) -> list[PushState]:
        with self.engine.connect() as conn:
            ids = set(
                conn.execute(
                    sa.select(triage_case.c.push_id)
                    .distinct()
                    .where(
                        triage_case.c.push_id.in_(list(pushes)),
                        triage_case.c.state.in_(OPEN_STATES),
                    )
                ).scalars()
            )
        return [pushes[i] for i in sorted(ids)]

    def _runs_to_observe(self, states: Sequence[PushState]) -> list[RunRef]:
        """The runs the open cases of these pushes wait on: each case's original, and the
        completed test runs of the labels of cases past `new`. Read for all the pushes in
        two queries: the service asks this every `open_cases` period, over every push with
        an open case (a query per push made the skipped passes cost as much as a pass)."""
        by_id = {state.push_id: state for state in states}
        if not by_id:
            return []
        with self.engine.connect() as conn:
            cases = conn.execute(
                sa.select(
                    triage_case.c.push_id,
                    triage_case.c.job_id,
                    triage_case.c.label,
                    triage_case.c.state,
                ).where(
                    triage_case.c.push_id.in_(list(by_id)),
                    triage_case.c.state.in_(OPEN_STATES),
                )
            ).all()
            labels_of: dict[int, set[str]] = {}
            for c in cases:
                labels_of.setdefault(c.push_id, set()).add(c.label)
            runs = latest_runs_of_pushes(conn, labels_of)
        originals = {c.job_id for c in cases}
        waited_on = {(c.push_id, c.label) for c in cases if c.state != "new"}
        refs: list[RunRef] = []
        for r in runs:
            state = by_id[r["push_id"]]
            ref = RunRef(
                r["id"],
                r["task_id"],
                r["run_id"],
                True,
                self._treeherder_push_ids.get(state.revision),
                r["result"],
                r["end_time"] if r["state"] == "completed" else None,
            )
            if r["id"] in originals:
                refs.append(ref)
            elif (
                (r["push_id"], r["label"]) in waited_on
                and r["state"] == "completed"
                and r["job_kind"] == "test"
            ):
                refs.append(replace(ref, errorsummary=False))
        return refs

    def _observe_jobs(self, job_ids: Sequence[int], now: datetime) -> None:
        """Observations of any runs (backfilled ones): the callback backfills use."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    job.c.id, job.c.task_id, job.c.run_id, job.c.result, job.c.end_time
                ).where(job.c.id.in_(list(job_ids)), job.c.state == "completed")
            ).all()
        self.observer.observe(
            [RunRef(r.id, r.task_id, r.run_id, result=r.result, ended=r.end_time) for r in rows],
            now,
        )

    # -- backfills ------------------------------------------------------------------------

    def _file_regression(self, conn: sa.Connection, case_id: int, now: datetime) -> None:
        """A regression verdict: file the case in its regression record, and give that
        regression one backfill search (the one it has, else a new one)."""
        regression_id = file_case(conn, case_id, now)
        if not self.backfill.enabled:
            return
        serving = report_of(conn, regression_id) if regression_id is not None else None
        report_id = open_report_for_case(conn, case_id, now, self.backfill, serving=serving)
        if regression_id is not None:
            serve_by(conn, regression_id, report_id)

    # -- actions --------------------------------------------------------------------------

    def send(self, summary: PassSummary, now: datetime) -> None:
        """Send what the request log holds (each request once, whoever else sends)."""
        protocol = self._actions_protocol()
        lease = request_log.lease_of(self.settings)
        rows = request_log.dispatch(
            self.engine, protocol, dry_run=not self.live, lease=lease, now=now
        )
        for row in rows:
            if row.state == "sent":
                summary.requests_sent += 1
            elif row.state == "dry-run":
                summary.requests_dry_run += 1

    def _write_back(self, summary: PassSummary, now: datetime) -> None:
        """Classifications and alerts, decided from the store, applied through the log.

        Dry-run unless the pass is live and holds the credentials for each side (a
        Treeherder token; a configured alert channel)."""
        from sheriff.actions.effects import dispatch_effects
        from sheriff.actions.writeback import CLASSIFY, TreeherderWriter
        from sheriff.notify import ALERT, AlertSender, channels_from_settings
        from sheriff.triage.alerts import plan_alerts
        from sheriff.triage.writeback import plan_writeback

        writes_live = self.live and bool(self.settings.treeherder_token)
        if writes_live:
            # Extra reads from Treeherder only for writes that will be sent; a dry run
            # records what the runs already read say.
            self._observe_near_regressions(now)
        channels = channels_from_settings(self.settings)
        alerts_live = self.live and bool(channels)
        with self.engine.begin() as conn:
            plan_writeback(
                conn, self.repo, public_url=self.settings.public_url, live=writes_live, now=now
            )
            plan_alerts(
                conn,
                self.repo,
                public_url=self.settings.public_url,
                live=alerts_live,
                now=now,
                settings=self.settings,
            )
        if writes_live:
            self._reassert_needs_bug(now)
        lease = request_log.lease_of(self.settings)
        if self._writer is None:
            self._writer = Treeherder(
                self.settings.treeherder_url, token=self.settings.treeherder_token
            )
        writes = dispatch_effects(
            self.engine,
            {CLASSIFY: TreeherderWriter(self._writer)},
            dry_run=not writes_live,
            lease=lease,
            now=now,
        )
        alerts = dispatch_effects(
            self.engine,
            {ALERT: AlertSender(channels)},
            dry_run=not alerts_live,
            lease=lease,
            now=now,
        )
        summary.classifications_sent += writes.sent
        summary.alerts_sent += alerts.sent

    def _reassert_needs_bug(self, now: datetime) -> None:
        """Treeherder's own marking (`intermittents.py`) takes an 8 back to 6 or 1 when
        new runs nearby fail the same groups, whoever set it, a note or not. sheriff's
        verdict did not change: a push where it wrote 8 is looked at again every half hour
        for 36 hours, and a job taken back gets the note again (`MAX_REASSERTIONS`)."""
        from sheriff.triage.writeback import needs_bug_writes, reassert

        with self.engine.connect() as conn:
            written = needs_bug_writes(conn, self.repo, since=now - REASSERT_FOR)
        due = {
            revision
            for revision in written
            if now - self._reasserted.get(revision, now - REASSERT_EVERY) >= REASSERT_EVERY
            and revision in self._treeherder_push_ids
        }
        read = self._jobs_of_pushes(self._treeherder_push_ids[r] for r in due)
        for revision in sorted(due):
            th_jobs = read.get(self._treeherder_push_ids[revision])
            if th_jobs is None:
                continue  # Treeherder did not answer: looked at again next pass
            self._reasserted[revision] = now
            shown = {int(j["id"]): int(j.get("failure_classification_id") or 1) for j in th_jobs}
            with self.engine.begin() as conn:
                reassert(conn, self.repo, written[revision], shown, now=now)

    def _observe_near_regressions(self, now: datetime) -> None:
        """Read the failure lines write-back needs: of sheriff's own failed runs, and of
        failed runs on queues it does not triage on the pushes where a regression fails
        (one showing the regression's line is its failure too, and is noted as such
        rather than left to Treeherder's marking)."""
        from sheriff.triage.writeback import runs_to_read

        with self.engine.connect() as conn:
            rows = runs_to_read(conn, self.repo)
        if rows:
            self.observer.observe(
                [RunRef(r.id, r.task_id, r.run_id, result=r.result) for r in rows], now
            )

    def _actions_protocol(self) -> ActionsProtocol:
        """One protocol for the passes of an hour: what it reads (actions.json, task
        definitions, a decision task's expanded scopes) is asked once, not once per pass;
        renewed hourly so that a role's change is seen and the caches stay small."""
        if (
            self._protocol is None
            or time.monotonic() - self._protocol_since > PROTOCOL_HOURS * 3600
        ):
            self._protocol = ActionsProtocol(self.clients)
            self._protocol_since = time.monotonic()
        return self._protocol

    def _cancel(self, task_ids: Sequence[str], summary: PassSummary) -> None:
        if not self.live:
            return
        for task_id in task_ids:
            try:
                self.clients.queue.cancelTask(task_id)
                summary.cancelled += 1
            except TaskclusterError as exc:
                log.info("could not cancel %s: %s", task_id, exc)


def backfill_settings_of(settings: Settings, strategy: str | None) -> BackfillSettings:
    """The backfill settings; `strategy` "off" turns backfills off, a name picks one."""
    chosen = backfill_from_settings(settings)
    if strategy is None:
        return chosen
    if strategy == "off":
        return chosen.model_copy(update={"enabled": False})
    # Validated like a setting: an unknown name is refused in one line, never played.
    return backfill_settings(**{**chosen.model_dump(), "enabled": True, "strategy": strategy})


def backfill_pushes(conn: sa.Connection) -> set[int]:
    """Pushes whose task groups gain backfilled runs that open backfill records wait for."""
    return {watched["push_id"] for watched in pushes_to_watch(conn)}
