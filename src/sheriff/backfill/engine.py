"""The backfill pass: moves every open record one step, statelessly, from the database.

Each record is read, judged and written in its own transaction, and the write only lands
if nobody changed the record meanwhile (a conditional UPDATE on `updated_at`), so passes
can repeat, stop anywhere and run concurrently. Runs are asked for only through the
action request log, with idempotency keys derived from the record and the push, so two
passes that reach the same decision ask once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sheriff.actions.usage import backfill_runs
from sheriff.backfill.evidence import (
    WindowEvidence,
    classify,
    configurations_showing,
    window_evidence,
)
from sheriff.backfill.reports import (
    BACKFILLED,
    CULPRIT,
    FAILED,
    OPEN_RECORD_STATUSES,
    PRELIMINARY,
    READY,
    REPORT_FAILED,
    SUCCESSFUL,
    check_unsearched,
    split_off,
)
from sheriff.backfill.settings import BackfillSettings
from sheriff.backfill.strategies import Decision, RunRequest, Search, backfill_strategy
from sheriff.errors import SheriffError
from sheriff.model.backfill import Outcome, PushRuns, began_after, outcome
from sheriff.model.failure_lines import failing_test
from sheriff.model.job import TaskShapeError, mozharness_test_paths
from sheriff.model.regressions import names_a_test
from sheriff.store.queries import (
    PlatformConfig,
    by_platform,
    case_configurations,
    recent_push_ids,
)
from sheriff.store.schema import backfill_record, backfill_report, push, repository

# A push asked this many times that still says nothing is given up on.
MAX_ROUNDS_PER_PUSH = 3


class Enqueue(Protocol):
    """`sheriff.actions.log.enqueue`: record an action request inside the caller's transaction."""

    def __call__(
        self,
        conn: sa.Connection,
        key: str,
        strategy_name: str,
        *,
        repository: str,
        revision: str,
        task_id: str | None,
        input: Any,
        labels: Sequence[str] = (),
        decision_task_id: str | None = None,
        now: datetime | None = None,
    ) -> Any: ...


Observe = Callable[[Sequence[int]], Any]
"""Bring the run observations of these job ids up to date (triage's `observe_runs`)."""

TaskDefinition = Callable[[str], Mapping[str, Any]]
"""A task's definition (`queue.task`): where a record learns the original's
MOZHARNESS_TEST_PATHS, which `backfill-task` passes on as `test_manifests`."""


@dataclass
class BackfillSummary:
    """What one pass did."""

    examined: int = 0
    statuses: Counter[str] = field(default_factory=Counter)  # records by new status
    requests: int = 0  # action requests enqueued
    culprits: list[tuple[int, str]] = field(default_factory=list)  # (report id, revision)
    conflicts: int = 0  # records another pass changed first
    errors: list[str] = field(default_factory=list)  # records held back by an error

    def as_dict(self) -> dict[str, Any]:
        return {
            "examined": self.examined,
            "statuses": dict(self.statuses),
            "requests": self.requests,
            "culprits": [{"report": r, "revision": rev} for r, rev in self.culprits],
            "conflicts": self.conflicts,
            "errors": self.errors,
        }


def _default_enqueue() -> Enqueue:
    from sheriff.actions.log import enqueue

    return enqueue


def advance_backfills(
    engine: Engine,
    *,
    now: datetime,
    actions: Enqueue | None = None,
    observe: Observe | None = None,
    settings: BackfillSettings | None = None,
    task_definition: TaskDefinition | None = None,
) -> BackfillSummary:
    """Move every open backfill record one step; safe to repeat, interrupt and run concurrently.

    Without `task_definition` a record that has not learnt the original's manifests yet
    asks `backfill-task` for the label alone (Gecko's own backfill does the same for a task
    without MOZHARNESS_TEST_PATHS).
    """
    settings = settings or BackfillSettings()
    enqueue = actions or _default_enqueue()
    summary = BackfillSummary()
    with engine.connect() as conn:
        record_ids = list(
            conn.execute(
                sa.select(backfill_record.c.id)
                .where(backfill_record.c.status.in_(OPEN_RECORD_STATUSES))
                .order_by(backfill_record.c.id)
            ).scalars()
        )
    for record_id in record_ids:
        summary.examined += 1
        try:
            advance_record(
                engine,
                record_id,
                now=now,
                enqueue=enqueue,
                observe=observe,
                settings=settings,
                summary=summary,
                task_definition=task_definition,
            )
        except SheriffError as exc:
            # An outage or a refused request holds this record back, not the others; its
            # transaction rolled back, so the next pass takes it up from the same state.
            summary.errors.append(f"record {record_id}: {exc}")
    return summary


def advance_record(
    engine: Engine,
    record_id: int,
    *,
    now: datetime,
    enqueue: Enqueue,
    observe: Observe | None,
    settings: BackfillSettings,
    summary: BackfillSummary | None = None,
    task_definition: TaskDefinition | None = None,
) -> str | None:
    """One step of one record; its status afterwards (None: changed by another pass)."""
    summary = summary if summary is not None else BackfillSummary()
    # Network first, outside the record's transaction.
    with engine.connect() as conn:
        record = _record(conn, record_id)
    test_paths: Any = _UNKNOWN
    if record is not None and record.status in OPEN_RECORD_STATUSES:
        if observe is not None and record.context["window"]:
            with engine.connect() as conn:
                evidence = window_evidence(
                    conn,
                    record.context,
                    record.context["window"],
                    others=_pooled_configurations(conn, record),
                )
            unobserved = evidence.unobserved()
            if unobserved:
                observe(unobserved)
        if task_definition is not None and _needs_test_paths(record, now):
            test_paths = _test_paths_of(task_definition(record.context["task_id"]))
    with engine.begin() as conn:
        record = _record(conn, record_id)
        if record is None or record.status not in OPEN_RECORD_STATUSES:
            return record.status if record else None
        step = _Step(conn, record, now=now, enqueue=enqueue, settings=settings)
        if test_paths is not _UNKNOWN:
            step.context.setdefault("test_paths", test_paths)
        step.run()
        if step.context != record.context:
            step.values["context"] = step.context
        changed = conn.execute(
            sa.update(backfill_record)
            .where(
                backfill_record.c.id == record_id,
                backfill_record.c.updated_at == record.updated_at,
            )
            .values(**step.values, updated_at=_later(now, record.updated_at))
        ).rowcount
        if not changed:
            conn.rollback()
            summary.conflicts += 1
            return None
        if step.report_values:
            conn.execute(
                sa.update(backfill_report)
                .where(backfill_report.c.id == record.report_id)
                .values(**step.report_values, updated_at=now)
            )
        status = step.values.get("status", record.status)
        summary.statuses[status] += 1
        summary.requests += step.enqueued
        if step.culprit_revision:
            summary.culprits.append((record.report_id, step.culprit_revision))
        return status


_UNKNOWN = object()


def _needs_test_paths(record: Any, now: datetime) -> bool:
    """A record about to ask for same-manifest runs that has not read the original's yet."""
    context = record.context
    if not context.get("same_manifests") or "test_paths" in context:
        return False
    return record.status != PRELIMINARY or now >= record.mature_at


def _test_paths_of(definition: Mapping[str, Any]) -> dict[str, list[str]] | None:
    try:
        return mozharness_test_paths(definition)
    except TaskShapeError:
        return None  # not JSON: Gecko's backfill could not pass it on either


def _later(now: datetime, previous: datetime) -> datetime:
    # The optimistic check needs every write to change `updated_at`, even at one `now`.
    previous = previous or now
    return now if now > previous else previous + timedelta(microseconds=1)


def _pooled_configurations(conn: sa.Connection, record: Any) -> list[PlatformConfig]:
    """The configurations whose runs a strategy that weighs every run reads beside the
    record's own: those where the report's regression cases failed, and those where a run
    in the window showed the searched failure (a case there called intermittent, or one
    never filed into this report, failed it all the same)."""
    name = record.context.get("strategy") or record.strategy
    if not backfill_strategy(name).pools_configurations:
        return []
    context = record.context
    showing = configurations_showing(conn, context["window"], context["lines"], context["tests"])
    return by_platform({*case_configurations(conn, record.case_ids or []), *showing})


def _named_culprits(conn: sa.Connection, record: Any, window: Sequence[int]) -> frozenset[int]:
    """Window indices of the pushes other reports of the repository named as culprits."""
    named = conn.execute(
        sa.select(backfill_report.c.culprit_push_id).where(
            backfill_report.c.repository_id == record.repository_id,
            backfill_report.c.status == CULPRIT,
            backfill_report.c.id != record.report_id,
            backfill_report.c.culprit_push_id.in_(list(window)),
        )
    ).scalars()
    return frozenset(window.index(p) for p in named)


def _record(conn: sa.Connection, record_id: int) -> Any:
    return conn.execute(
        sa.select(
            backfill_record,
            backfill_report.c.mature_at,
            backfill_report.c.repository_id.label("repository_id"),
            backfill_report.c.strategy,
            backfill_report.c.case_ids,
        )
        .join(backfill_report, backfill_report.c.id == backfill_record.c.report_id)
        .where(backfill_record.c.id == record_id)
    ).first()


class _Step:
    """The decision for one record inside one transaction; collects the values to write."""

    def __init__(
        self,
        conn: sa.Connection,
        record: Any,
        *,
        now: datetime,
        enqueue: Enqueue,
        settings: BackfillSettings,
    ) -> None:
        self.conn = conn
        self.record = record
        self.now = now
        self.enqueue = enqueue
        self.settings = settings
        self.context: dict[str, Any] = {**record.context}
        self.values: dict[str, Any] = {}
        self.report_values: dict[str, Any] = {}
        self.enqueued = 0
        self.culprit_revision: str | None = None
        self.strategy = backfill_strategy(self.context.get("strategy") or record.strategy)

    def run(self) -> None:
        record = self.record
        if self.now - record.created_at > self.settings.timeout:
            self._fail(f"timed out after {self.settings.timeout_hours:g} h")
            return
        status = record.status
        if status == PRELIMINARY:
            if self.now < record.mature_at:
                return
            status = self.values["status"] = READY
        if status == READY:
            if self._over_daily_limit():
                self.values["reason"] = (
                    f"waiting: {self.settings.max_per_platform_per_day} backfills a day "
                    f"on {record.platform} reached"
                )
                return
            self.values["reason"] = None
            if not self.context["window"]:
                depth = int(self.context.get("depth") or self.settings.depth)
                self.context["window"] = list(
                    reversed(recent_push_ids(self.conn, self.context["push_id"], depth + 1))
                )
        self._search()
        self.values["context"] = self.context

    # -- limits ------------------------------------------------------------------------

    def _over_daily_limit(self) -> bool:
        used = self.conn.execute(
            sa.select(sa.func.count())
            .select_from(backfill_record)
            .where(
                backfill_record.c.platform == self.record.platform,
                backfill_record.c.triggered_at >= self.now - timedelta(days=1),
                backfill_record.c.id != self.record.id,
            )
        ).scalar_one()
        return used >= self.settings.max_per_platform_per_day

    def _over_repository_budget(self, requests: list[RunRequest]) -> bool:
        """Whether these runs would pass the repository's daily backfill budget; the record
        then waits, saying so, until the budget pays (or it times out on what it has)."""
        cap = self.settings.runs_per_repository_per_day
        if cap is None:
            return False
        repo = self._push(self.context["push_id"]).name
        wanted = sum(r.times * len(r.pushes) for r in requests)
        used = backfill_runs(self.conn, repo, since=self.now - timedelta(days=1))
        if used + wanted <= cap:
            return False
        self.values["reason"] = (
            f"waiting: backfill budget of {repo} spent ({used} of {cap} runs in 24 hours; "
            f"{wanted} more wanted)"
        )
        return True

    # -- the search --------------------------------------------------------------------

    def _search(self) -> None:
        for _ in range(self.settings.max_extensions + 1):
            search, evidence = self._state()
            decision = self.strategy.decide(search)
            self._count(evidence)
            if not decision.extend:
                break
            self._extend()
        else:  # pragma: no cover - can_extend is false after the last extension
            decision = Decision(fail="the failure reproduces on the oldest push searched")
        if decision.culprit is not None:
            self._split_later_lines(evidence, decision.culprit)
            check_unsearched(
                self.conn,
                self.record.report_id,
                self.context["lines"],
                self.context["window"],
                decision.culprit,
                self.now,
                self.settings,
            )
            self._found(decision.culprit)
        elif decision.fail:
            self._fail(decision.fail)
        elif decision.requests and not self._over_repository_budget(decision.requests):
            self._request(decision.requests)

    def _state(self) -> tuple[Search, WindowEvidence]:
        window: list[int] = self.context["window"]
        evidence = window_evidence(
            self.conn,
            self.context,
            window,
            exclude_job_id=self.record.job_id,
            others=_pooled_configurations(self.conn, self.record),
        )
        pooled = self.strategy.pools_configurations
        needed = self.strategy.runs_per_push(self.context["fail_rate"], self.settings)
        lines, tests = self.context["lines"], self.context["tests"]
        outcomes: list[Outcome] = []
        clean_runs: list[int] = []
        reproduced_runs: list[int] = []
        waiting: set[int] = set()
        untestable = set(self.context["untestable"])
        requested = self.context["requested"]
        recorded: dict[str, str] = {}
        for index, push_id in enumerate(window):
            runs = evidence.push_runs(push_id, lines, tests, pooled=pooled)
            result = outcome(runs, needed)
            if index == len(window) - 1:
                result = Outcome.FAILING  # the regression's own push, by its verdict
            outcomes.append(result)
            clean_runs.append(runs.clean)
            reproduced_runs.append(runs.reproduced)
            recorded[str(push_id)] = result.value
            asks = requested.get(str(push_id))
            if not asks or (result is Outcome.FAILING and not self.strategy.waits_for_every_run):
                continue
            expected = sum(a["times"] for a in asks)
            last_at = datetime.fromisoformat(asks[-1]["at"])  # written aware, by `_request`
            coming = evidence.backfilled(push_id) < expected and (
                self.now - last_at < self.settings.runs_appear  # type: ignore[operator]
            )
            if evidence.waiting(push_id) or coming:
                waiting.add(index)
            elif result is Outcome.UNKNOWN and (
                evidence.backfilled(push_id) == 0 or len(asks) >= MAX_ROUNDS_PER_PUSH
            ):
                untestable.add(push_id)
        self.context["untestable"] = sorted(untestable)
        self.context["outcomes"] = recorded
        search = Search(
            outcomes=outcomes,
            clean_runs=clean_runs,
            requested={i for i, p in enumerate(window) if str(p) in requested},
            waiting=waiting,
            untestable=frozenset(i for i, p in enumerate(window) if p in untestable),
            needed=needed,
            same_manifests=bool(self.context["same_manifests"]),
            can_extend=self.context["extensions"] < self.settings.max_extensions,
            reproduced_runs=tuple(reproduced_runs),
            fail_rate=float(self.context["fail_rate"]),
            asked_runs=tuple(sum(a["times"] for a in requested.get(str(p), [])) for p in window),
            likely=(
                _named_culprits(self.conn, self.record, window)
                if self.strategy.weighs_named_culprits
                else frozenset()
            ),
        )
        return search, evidence

    def _extend(self) -> None:
        window: list[int] = self.context["window"]
        older = recent_push_ids(self.conn, window[0], self.settings.depth + 1)[1:]
        self.context["window"] = list(reversed(older)) + window
        self.context["extensions"] += 1

    def _count(self, evidence: WindowEvidence) -> None:
        lines, tests = self.context["lines"], self.context["tests"]
        counts: Counter[str] = Counter()
        for runs in evidence.runs.values():
            for run in runs:
                if run.backfilled and run.own:
                    counts[classify(run, lines, tests)] += 1
        self.values["runs_in_progress"] = counts["running"] + sum(
            1
            for rs in evidence.runs.values()
            for r in rs
            if r.own and r.backfilled and r.needs_observation
        )
        self.values["runs_successful"] = counts["clean"]
        self.values["runs_failed"] = counts["reproduced"]

    def _push(self, push_id: int) -> Any:
        return self.conn.execute(
            sa.select(push.c.id, push.c.revision, push.c.decision_task_id, repository.c.name)
            .join(repository, repository.c.id == push.c.repository_id)
            .where(push.c.id == push_id)
        ).one()

    def _request(self, requests: list[RunRequest]) -> None:
        from sheriff.actions.strategies import strategy as action_strategy

        window: list[int] = self.context["window"]
        original = self._push(self.context["push_id"])
        label = self.context["label"]
        at = self.now.isoformat()
        for request in requests:
            targets = [window[i] for i in request.pushes]
            if request.action == "backfill":
                self.enqueue(
                    self.conn,
                    f"backfill:{self.record.id}:linear",
                    "backfill",
                    repository=original.name,
                    revision=original.revision,
                    task_id=self.context["task_id"],
                    input=action_strategy("backfill").build_input(
                        depth=len(targets), times=request.times
                    ),
                    labels=[label],
                    decision_task_id=original.decision_task_id,
                    now=self.now,
                )
            else:
                target = self._push(targets[0])
                rounds = len(self.context["requested"].get(str(target.id), []))
                # The original's MOZHARNESS_TEST_PATHS, as Gecko's backfill passes it on.
                manifests = self.context.get("test_paths") if request.with_manifests else None
                self.enqueue(
                    self.conn,
                    f"backfill:{self.record.id}:{target.id}:{rounds}",
                    "backfill-task",
                    repository=target.name,
                    revision=target.revision,
                    task_id=None,
                    input=action_strategy("backfill-task").build_input(
                        label=label,
                        revision=original.revision,
                        test_manifests=manifests,
                        times=request.times,
                    ),
                    labels=[label],
                    decision_task_id=target.decision_task_id,
                    now=self.now,
                )
            self.enqueued += 1
            for push_id in targets:
                self.context["requested"].setdefault(str(push_id), []).append(
                    {"times": request.times, "at": at}
                )
        self.values.update(
            status=BACKFILLED,
            actions_triggered=self.record.actions_triggered + self.enqueued,
            iterations=self.record.iterations + 1,
            last_push_id=min(
                (window[i] for r in requests for i in r.pushes),
                key=window.index,
            ),
        )
        if self.record.triggered_at is None:
            self.values["triggered_at"] = self.now

    def _split_later_lines(self, evidence: WindowEvidence, culprit: int) -> None:
        """Lines of the search that began failing after the culprit it names get a search
        of their own (`model.backfill.began_after`, `reports.split_off`): the push names
        the culprit of the others only. Lines that name no test are left as they are."""
        window: list[int] = self.context["window"]
        pooled = self.strategy.pools_configurations
        runs_by_line: dict[str, list[PushRuns]] = {}
        for line in self.context["lines"]:
            test = failing_test(line)
            if not test or not names_a_test(test):
                continue
            runs = [evidence.push_runs(p, [line], [test], pooled=pooled) for p in window]
            # The original run, left out of the evidence, showed every line.
            runs[-1] = PushRuns(runs[-1].reproduced + 1, runs[-1].clean)
            runs_by_line[line] = runs
        later = began_after(runs_by_line, culprit)
        if not later or len(later) == len(self.context["lines"]):
            return
        if split_off(self.conn, self.record.report_id, later, self.now, self.settings):
            self.context["lines"] = [x for x in self.context["lines"] if x not in later]

    def _found(self, index: int) -> None:
        culprit = self._push(self.context["window"][index])
        self.culprit_revision = culprit.revision
        self.values.update(status=SUCCESSFUL, reason=f"culprit {culprit.revision[:12]}")
        self.report_values.update(
            status=CULPRIT,
            culprit_push_id=culprit.id,
            culprit_revision=culprit.revision,
            reason=None,
            closed_at=self.now,
        )

    def _fail(self, reason: str) -> None:
        self.values.update(status=FAILED, reason=reason)
        self.values["context"] = self.context
        others = self.conn.execute(
            sa.select(sa.func.count())
            .select_from(backfill_record)
            .where(
                backfill_record.c.report_id == self.record.report_id,
                backfill_record.c.id != self.record.id,
                backfill_record.c.status != FAILED,
            )
        ).scalar_one()
        if not others:
            self.report_values.update(status=REPORT_FAILED, reason=reason, closed_at=self.now)
