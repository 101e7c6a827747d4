"""The Celery application and its tasks: what a Pulse batch implies, and the catch-up passes.

Every task is acknowledged late and given back when its worker dies, so a task whose
worker is killed midway runs again on another; each is safe to repeat (the passes read
their state from the store and from CI, and the request log sends each action once).

- `sheriff.events(repo, messages)`: store the runs of a batch of Pulse messages, then pass
  the pushes they name that can move a case: a push with a failed or exception test run
  (a case may open) or with open cases or a backfill watching it (open and advance the
  cases, ask for retriggers, read the originals' errorsummaries). A push's task group is
  listed only when a message names a task not stored yet (the push's first, an action
  task, the runs an action made); Treeherder is not asked (a run that just ended is not
  ingested yet). A push that has moved a backfill also advances the backfills.
- `sheriff.open_cases(repo)`: the pushes with open cases that wait on Treeherder
  (ingestion, log parsing, classifications), which Pulse does not tell, and the backfills;
  no group is listed again (Pulse said what moved).
- `sheriff.catch_up(repo)`: the polling pass over the window (`sheriff triage`), for what
  Pulse never delivered: a lost message delays a verdict, never loses it. Between full
  passes (`catch_up_full_every_seconds` of CI time) it asks Treeherder only about the
  pushes Pulse told of something since the last pass and those with open cases.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery import Celery

from sheriff.config import Settings, settings
from sheriff.errors import ServiceError
from sheriff.ingest.pulse import TaskEvent, event_of, store_events
from sheriff.model.job import TaskShapeError
from sheriff.service.runtime import Runtime
from sheriff.triage.engine import PassSummary, Triage

log = logging.getLogger(__name__)

TEST_KINDS = (None, "test")  # None: a message without the task's tags


def make_app(config: Settings) -> Celery:
    app = Celery("sheriff", broker=config.celery_broker_url, set_as_current=True)
    app.conf.update(
        task_default_queue=config.celery_queue,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        # A task is acknowledged only when it has run, and given back when its worker is
        # killed: nothing a message implies is lost with a worker.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        # `sheriff listen` acknowledges Pulse only after the broker confirmed the task.
        broker_transport_options={"confirm_publish": True},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        beat_schedule={
            # No expiry: the worker drops a task that expired in the queue, so while
            # events tasks stood in the queue longer than one period every open_cases
            # pass was dropped, and new cases waited for Treeherder's news until the
            # backlog cleared (tens of seconds on a busy machine). A pass that comes late
            # behind another is cheap: `open_cases` skips one within the period that
            # waits on no new run.
            "open-cases": {
                "task": "sheriff.open_cases",
                "schedule": config.open_cases_every_seconds,
            },
            "catch-up": {
                "task": "sheriff.catch_up",
                "schedule": config.catch_up_every_seconds,
                "options": {"expires": config.catch_up_every_seconds},
            },
        },
    )
    return app


app = make_app(settings())
_runtime: Runtime | None = None
LIVE = {"live": False}  # `sheriff worker --live` sets it before the worker starts


def runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        _runtime = Runtime.from_settings(settings(), live=LIVE["live"])
    return _runtime


def _events(repo: str, messages: list[dict[str, Any]]) -> list[TaskEvent]:
    events = []
    for m in messages:
        try:
            event = event_of(m["exchange"], m["payload"], m.get("routes", []))
        except (TaskShapeError, KeyError, TypeError) as exc:
            log.warning("a Pulse message refused: %s", exc)
            continue
        if event.repo == repo:
            events.append(event)
    return events


# An outage of CI or the store: the same batch again a little later (then the catch-up).
RETRY = {"autoretry_for": (ServiceError,), "retry_backoff": 2, "max_retries": 5}


@app.task(name="sheriff.events", **RETRY)
def events(repo: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    rt = runtime()
    triage = rt.triage(repo)
    batch = _events(repo, messages)
    stored = store_events(rt.engine, batch)
    revisions = sorted(pushes_to_pass(triage, batch))
    summary = PassSummary()
    if revisions:
        now = rt.now()
        # The messages stored the runs of known tasks: a push's group is listed again only
        # for a task its last listing lacks (an action task, the runs an action made).
        # Treeherder has not ingested a run that just ended: `open_cases` waits for it.
        summary = triage.run_pass(
            since=now,
            until=now,
            now=now,
            revisions=revisions,
            backfills=False,
            relist=triage.unlisted({(e.revision, e.task_id) for e in batch}),
            treeherder=False,
        )
        if summary.decided.get("regression"):
            triage.advance_backfills(now, summary)  # a report opened: its first step now
            triage.send(summary, now)
    return _report(summary, messages=len(messages), runs=stored.jobs_updated, pushes=revisions)


def pushes_to_pass(triage: Triage, batch: list[TaskEvent]) -> set[str]:
    """The pushes of a batch whose pass can move a case or a backfill: a failed test run
    (a case may open), a resolved run of a label with an open case on its push (a
    retrigger's result), any resolved run on a push a backfill watches."""
    failed = {e.revision for e in batch if e.failed and e.kind in TEST_KINDS}
    watched = set(triage.watched_revisions())
    open_labels = triage.open_labels({e.revision for e in batch} - failed - watched)
    return (
        failed
        | {e.revision for e in batch if e.revision in watched}
        | {
            e.revision
            for e in batch
            if e.revision in open_labels and (e.label is None or e.label in open_labels[e.revision])
        }
    )


# This process's `open_cases` passes per repository: the CI time of the last full one, and
# the runs waited on that a pass has asked about since.
_OPEN_CASES_PASSED: dict[str, tuple[datetime, frozenset[int]]] = {}


@app.task(name="sheriff.open_cases", **RETRY)
def open_cases(repo: str | None = None) -> dict[str, Any]:
    rt = runtime()
    reports = {}
    every = timedelta(seconds=rt.settings.open_cases_every_seconds)
    for name in [repo] if repo else rt.settings.watched_repositories:
        triage = rt.triage(name)
        now = rt.now()
        due = triage.due_revisions()
        last = _OPEN_CASES_PASSED.get(name)
        within = last is not None and last[0] <= now < last[0] + every
        if last is not None and within:
            # What this pass waits for comes with CI's time (Treeherder ingests and parses
            # minutes after a run): within one period of CI time (a simulator's clock held
            # while the service catches up) only a push with a run no pass has waited on
            # yet is asked about; asking about the others would only ask Treeherder the
            # same again. (Every pass used to take them all: on the three-repository world
            # with a held clock, most of a worker's time and of its Treeherder reads.)
            due = [r for r in due if triage.last_due_by_revision[r] - last[1]]
            if not due:
                reports[name] = {"skipped": "passed within the period, in CI time"}
                continue
        # Pulse stored what moved and listed the groups that have new tasks: these passes
        # list none again (the catch-up does, for what Pulse missed).
        summary = triage.run_pass(since=now, until=now, now=now, revisions=due, relist=())
        # Only once it passed: a retried one runs again. A pass within the period keeps the
        # period's start (the next full pass comes one period after the last full one).
        _OPEN_CASES_PASSED[name] = (
            (last[0], last[1] | triage.last_due_runs)
            if last is not None and within
            else (now, triage.last_due_runs)
        )
        reports[name] = _report(summary, full=not within)
    return reports


# This process's catch-up passes per repository: CI time of the last one, and of the last
# full one.
_CAUGHT_UP: dict[str, tuple[datetime, datetime]] = {}


@app.task(name="sheriff.catch_up")
def catch_up(repo: str | None = None) -> dict[str, Any]:
    rt = runtime()
    window = timedelta(hours=rt.settings.catch_up_window_hours)
    full_every = timedelta(seconds=rt.settings.catch_up_full_every_seconds)
    reports = {}
    for name in [repo] if repo else rt.settings.watched_repositories:
        now = rt.now()
        last = _CAUGHT_UP.get(name)
        quiet_since = catch_up_quiet_since(last, now, full_every)
        summary = rt.triage(name).run_pass(
            since=now - window, until=now, now=now, quiet_since=quiet_since
        )
        # Only once it passed: a failed pass is not a pass to count from.
        _CAUGHT_UP[name] = (now, now if quiet_since is None or last is None else last[1])
        reports[name] = _report(summary, full=quiet_since is None)
    return reports


def catch_up_quiet_since(
    last: tuple[datetime, datetime] | None, now: datetime, full_every: timedelta
) -> datetime | None:
    """The catch-up pass's `quiet_since`; None: a full pass. `last`: CI time of this
    process's last catch-up pass and of its last full one.

    When Pulse delivers, a catch-up pass finds nothing: it asks Treeherder whether a push
    moved only where Pulse told of something since the last pass (a lost message there
    shows) or a case is open. A push gone quiet whose last message was lost waits for the
    full pass, at most `full_every` of CI time later. A process's first pass is full, and
    so is one whose clock went back."""
    if last is None or now - last[1] >= full_every or now < last[0]:
        return None
    return last[0] - CATCH_UP_MARGIN


# A run stored as resolved shortly before the last pass may have been stored after it
# looked (two workers, a clock read before the pass): the margin counts it as news again.
CATCH_UP_MARGIN = timedelta(minutes=10)


def _report(summary: PassSummary, **extra: Any) -> dict[str, Any]:
    return {
        **extra,
        "cases_opened": summary.cases_opened,
        "decided": dict(summary.decided),
        "retriggers_asked": summary.retriggers_asked,
        "requests_sent": summary.requests_sent,
        "budget_limited": summary.budget_limited,
        "open_cases": summary.open_cases,
    }
