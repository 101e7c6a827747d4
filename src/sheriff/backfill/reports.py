"""Opening reports and their records: from a regression verdict, or a person's request.

A regression usually fails many runs (every platform, every push until the backout), and
triage gives each its own case; they are one regression with one culprit. A case whose
failing tests overlap those of a recent report of the same repository (or whose line
that names no test is the report's, in the same chunk or manifest) joins it instead of
opening another, and while that report is still maturing the record moves to the
oldest failing push seen, which is nearest the culprit.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sheriff.backfill.evidence import reproduces, test_of
from sheriff.backfill.settings import STRATEGIES, BackfillSettings
from sheriff.errors import InputError
from sheriff.model.actions import BACKFILL_TAG
from sheriff.model.backfill import ONSET_MISSED, estimate_fail_rate, other_onset_odds
from sheriff.model.failure_lines import crash_lines, with_crash_lines
from sheriff.model.history import regression_lines
from sheriff.model.policy import run_lines_known
from sheriff.model.regressions import names_a_test, suite_of
from sheriff.store.queries import job_manifests, platform_config, recent_push_ids
from sheriff.store.regressions import move_cases
from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    job,
    job_type,
    manifest,
    manifest_set_member,
    manifest_test,
    platform,
    push,
    run_observation,
    test_path,
    triage_case,
)

PRELIMINARY, READY, BACKFILLED, SUCCESSFUL, FAILED = (
    "preliminary",
    "ready",
    "backfilled",
    "successful",
    "failed",
)
RECORD_STATUSES = (PRELIMINARY, READY, BACKFILLED, SUCCESSFUL, FAILED)
OPEN_RECORD_STATUSES = (PRELIMINARY, READY, BACKFILLED)
OPEN, CULPRIT, REPORT_FAILED = "open", "culprit", "failed"


@dataclass(frozen=True)
class Regression:
    """What a backfill looks for: the failure lines and tests, and how often they fail."""

    lines: list[str]
    tests: list[str]
    fail_rate: float
    # Per kept line, how many retriggers showed it (empty: none observed).
    shown_by: dict[str, int] = field(default_factory=dict)


def _observed_lines(conn: sa.Connection, job_id: int, crashes: bool = False) -> list[str] | None:
    """The run's lines naming a failing test, else its crash lines; with `crashes` both
    (its crashes between tests too)."""
    seen = _run_lines(conn, job_id)
    if seen is None:
        return None
    named, crashed = seen
    return _with_crashes_between(named, crashed) if crashes else named or crashed


def _run_lines(conn: sa.Connection, job_id: int) -> tuple[list[str], list[str]] | None:
    """(lines naming a failing test, normalised crash lines) of the run, once read."""
    row = conn.execute(
        sa.select(run_observation.c.failure_lines, run_observation.c.raw_failure_lines).where(
            run_observation.c.job_id == job_id
        )
    ).first()
    if row is None or row.failure_lines is None:
        return None
    return [line for line in row.failure_lines if test_of(line)], crash_lines(row.raw_failure_lines)


def _with_crashes_between(named: list[str], crashed: list[str]) -> list[str]:
    # A crash between tests names no test: its PROCESS-CRASH line is what to look for.
    return named + [line for line in crashed if not names_a_test(line)]


def regression_of(
    conn: sa.Connection, job_id: int, only: Sequence[str] | None = None
) -> Regression:
    """The original run's failure lines that its retriggers reproduced, and their rate.

    Lines no retrigger showed are the run's own intermittents and are left out, unless no
    retrigger has been observed (a manual request): then every line is kept. `only`: these
    of the run's lines instead (a second regression failing in the same run).
    """
    original = conn.execute(
        sa.select(
            job.c.push_id,
            job.c.machine_platform_id,
            job.c.option_collection,
            job_type.c.name.label("label"),
        )
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(job.c.id == job_id)
    ).one()
    named, crashed = _run_lines(conn, job_id) or ([], [])
    every = _with_crashes_between(named, crashed)
    if only is not None:
        lines = [line for line in every if line in only]
    else:
        # The lines the case's policy judged the regression's (history: each line on its
        # own, or a crash between tests judged beside them): a flaky test that failed
        # beside them, and happened to fail again in a retrigger, is not what the search
        # must find on earlier pushes, nor what groups cases.
        judged = set(regression_lines(_case_evidence(conn, job_id)))
        lines = [line for line in every if line in judged] or named or crashed
    retriggers = conn.execute(
        sa.select(*_RUN_SEEN)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
        .where(
            job.c.push_id == original.push_id,
            job_type.c.name == original.label,
            job.c.machine_platform_id == original.machine_platform_id,
            job.c.option_collection == original.option_collection,
            # Retriggers only: backfills of other records on this push ran other manifests.
            job.c.action.is_distinct_from(BACKFILL_TAG),
            job.c.id != job_id,
            job.c.state == "completed",
            job.c.result.in_(["success", "testfailed"]),
        )
    ).all()
    seen = [lines for lines in map(_lines_seen, retriggers) if lines is not None]
    shown = [line for line in lines if any(line in run for run in seen)]
    kept = shown or lines
    tests = sorted({t for t in (test_of(line) for line in kept) if t})
    reproduced = sum(1 for run in seen if reproduces(run, kept, tests))
    return Regression(
        lines=sorted(set(kept)),
        tests=tests,
        fail_rate=estimate_fail_rate(reproduced, len(seen)),
        shown_by={line: sum(line in run for run in seen) for line in set(kept)},
    )


# What a run showed: its result and, for a failed one, its lines once read (`_lines_seen`).
_RUN_SEEN = (
    job.c.result,
    run_observation.c.parse_status,
    run_observation.c.failure_lines,
    run_observation.c.raw_failure_lines,
)


def _lines_seen(row: Any) -> list[str] | None:
    """The lines a finished run (selected with `_RUN_SEEN`) showed: none when it passed,
    None while a failed run's lines are not read."""
    if row.result == "success":
        return []
    if run_lines_known(row.parse_status, row.failure_lines):
        return with_crash_lines(row.failure_lines, row.raw_failure_lines)
    return None


def _case_evidence(conn: sa.Connection, job_id: int) -> Any:
    return conn.execute(
        sa.select(triage_case.c.evidence).where(triage_case.c.job_id == job_id)
    ).scalar()


def _manifests_holding(conn: sa.Connection, job_id: int, tests: Sequence[str]) -> set[str]:
    """The manifests the job ran that hold any of `tests`."""
    if not tests:
        return set()
    return set(
        conn.execute(
            sa.select(manifest.c.path)
            .distinct()
            .join(manifest_test, manifest_test.c.manifest_id == manifest.c.id)
            .join(test_path, test_path.c.id == manifest_test.c.test_path_id)
            .join(manifest_set_member, manifest_set_member.c.manifest_id == manifest.c.id)
            .join(job, job.c.manifest_set_id == manifest_set_member.c.manifest_set_id)
            .where(job.c.id == job_id, test_path.c.path.in_(list(tests)))
        ).scalars()
    )


def _failing_manifests(conn: sa.Connection, job_id: int, tests: Sequence[str]) -> list[str]:
    """The manifests of the job that hold the failing tests, or for a failure that names
    no test those whose group failed without a named test; all of them when unknown."""
    found = _manifests_holding(conn, job_id, tests) or _unnamed_failure_groups(conn, job_id)
    return sorted(found) or job_manifests(conn, job_id)


def _unnamed_failure_groups(conn: sa.Connection, job_id: int) -> set[str]:
    """The manifests (mozlog groups) of the run whose `group_result` did not pass while no
    failing test the errorsummary names belongs to them: where a line that names no test
    (a crash between tests, a harness timeout) happened."""
    stored = conn.execute(
        sa.select(run_observation.c.structured_failures).where(run_observation.c.job_id == job_id)
    ).scalar()
    if not stored:
        return set()
    ran = set(job_manifests(conn, job_id))
    # Stored as (test, subtest, status): a group's entry is the manifest itself.
    groups = {entry[0] for entry in stored if entry[0] in ran and entry[1] is None}
    if not groups:
        return set()
    named = [entry[0] for entry in stored if entry[0] and entry[0] not in ran]
    return groups - _manifests_holding(conn, job_id, named)


def _unnamed_meet(
    conn: sa.Connection, report: Any, label: str, case_groups: Callable[[], set[str]]
) -> bool:
    """Whether a line naming no test in a case's run (of `label`; `case_groups`: its
    manifests that failed with no named test) can be the same failure as `report`'s: it
    happened in the same suite chunk, or in a manifest that failed with no named test in
    both runs (chunks deal manifests differently per platform and build type, so one
    test's timeouts move between chunk numbers; the manifest stays)."""
    if suite_of(report.label) == suite_of(label):
        return True
    return bool(case_groups() & _unnamed_failure_groups(conn, report.job_id))


def _unnamed_items(report: Any, regression: Regression) -> set[str]:
    """The tests and lines naming no test that a report and a case's regression share."""
    return {
        item
        for item in (set(report.tests) & set(regression.tests))
        | (set(report.failure_lines) & set(regression.lines))
        if not names_a_test(item)
    }


def _record_values(
    conn: sa.Connection, report_id: int, job_id: int, regression: Regression, now: datetime
) -> dict[str, Any]:
    row = conn.execute(
        sa.select(
            job.c.task_id,
            job.c.push_id,
            job.c.tier,
            job.c.option_collection,
            job.c.manifest_set_id,
            job_type.c.name.label("label"),
            platform.c.platform,
        )
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(platform, platform.c.id == job.c.machine_platform_id)
        .where(job.c.id == job_id)
    ).one()
    config = platform_config(conn, job_id)
    assert config is not None
    context = {
        "task_id": row.task_id,
        "push_id": row.push_id,
        "label": row.label,
        "config": {
            "repository_id": config.repository_id,
            "build_platform_id": config.build_platform_id,
            "machine_platform_id": config.machine_platform_id,
            "option_collection": config.option_collection,
        },
        "test_manifests": job_manifests(conn, job_id),
        "manifests": _failing_manifests(conn, job_id, regression.tests),
        "lines": regression.lines,
        "tests": regression.tests,
        "fail_rate": regression.fail_rate,
        "window": [],
        "extensions": 0,
        "requested": {},
        "untestable": [],
        "outcomes": {},
    }
    return {
        "report_id": report_id,
        "job_id": job_id,
        "label": row.label,
        "platform": row.platform,
        "option_collection": row.option_collection,
        "tier": row.tier,
        "manifest_set_id": row.manifest_set_id,
        "context": context,
        "status": PRELIMINARY,
        "created_at": now,
        "updated_at": now,
    }


def _open(
    conn: sa.Connection,
    *,
    job_id: int,
    case_id: int | None,
    source: str,
    regression: Regression,
    now: datetime,
    settings: BackfillSettings,
    strategy: str,
    same_manifests: bool,
    mature_at: datetime,
    case_ids: Sequence[int] = (),
) -> int:
    row = conn.execute(
        sa.select(job.c.push_id, job.c.repository_id, job_type.c.name.label("label"))
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(job.c.id == job_id)
    ).one()
    report_id = conn.execute(
        sa.insert(backfill_report)
        .values(
            repository_id=row.repository_id,
            push_id=row.push_id,
            job_id=job_id,
            case_id=case_id,
            source=source,
            label=row.label,
            strategy=strategy,
            same_manifests=same_manifests,
            tests=regression.tests,
            failure_lines=regression.lines,
            fail_rate=regression.fail_rate,
            case_ids=list(case_ids) or ([case_id] if case_id is not None else []),
            status=OPEN,
            opened_at=now,
            mature_at=mature_at,
            updated_at=now,
        )
        .returning(backfill_report.c.id)
    ).scalar_one()
    values = _record_values(conn, report_id, job_id, regression, now)
    values["context"]["same_manifests"] = same_manifests
    values["context"]["strategy"] = strategy
    conn.execute(sa.insert(backfill_record).values(**values))
    return report_id


def open_report_for_case(
    conn: sa.Connection,
    case_id: int,
    now: datetime,
    settings: BackfillSettings | None = None,
    serving: int | None = None,
) -> int | None:
    """Open (or join) the report for a `regression` case; its id, or None when off / not one.

    `serving` is the report that already serves the case's regression record: the case
    joins that search rather than opening another (one search per regression). Safe to
    call again for the same case: it finds the report the case is already in. Runs inside
    the caller's transaction.
    """
    settings = settings or BackfillSettings()
    if not settings.enabled:
        return None
    case = conn.execute(
        sa.select(triage_case.c.id, triage_case.c.job_id, triage_case.c.verdict).where(
            triage_case.c.id == case_id
        )
    ).first()
    if case is None:
        raise InputError(f"no triage case {case_id}")
    if case.verdict != "regression":
        return None
    regression = regression_of(conn, case.job_id)
    if not regression.lines:
        return None  # no failure line to look for: a backfill could not tell pushes apart
    repository_id, push_id, push_time, label = conn.execute(
        sa.select(job.c.repository_id, job.c.push_id, push.c.push_time, job_type.c.name)
        .join(push, push.c.id == job.c.push_id)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(job.c.id == case.job_id)
    ).one()
    recent = conn.execute(
        sa.select(backfill_report, push.c.push_time)
        .join(push, push.c.id == backfill_report.c.push_id)
        .where(
            backfill_report.c.repository_id == repository_id,
            backfill_report.c.opened_at >= now - settings.merge_window,
        )
        .order_by(backfill_report.c.id)
    ).all()
    for report in recent:
        if case_id in (report.case_ids or []):
            return report.id
    if serving is not None:
        served = conn.execute(
            sa.select(backfill_report, push.c.push_time)
            .join(push, push.c.id == backfill_report.c.push_id)
            .where(backfill_report.c.id == serving)
        ).first()
        if served is not None:
            if case_id not in (served.case_ids or []):
                _join(conn, served, case_id, case.job_id, push_time, regression, now)
                _second_regression(
                    conn, served, case_id, case.job_id, regression, recent, now, settings
                )
            return served.id
    case_groups = functools.cache(lambda: _unnamed_failure_groups(conn, case.job_id))
    for report in recent:
        # A failed report joins too: its failure was already there on the oldest push
        # searched (an older regression, or an intermittent), and searching again from a
        # later push would spend the same runs to learn the same. An open search of the
        # same label on the same push already runs what this case's search would.
        same_search = report.status == OPEN and (report.push_id, report.label) == (push_id, label)
        shared = {t for t in set(report.tests) & set(regression.tests) if names_a_test(t)}
        # A line that names no test (a timeout's `Last test finished`, a crash between
        # tests) is the same failure only where it happened (`_unnamed_meet`).
        unnamed = set() if same_search or shared else _unnamed_items(report, regression)
        if unnamed and _unnamed_meet(conn, report, label, case_groups):
            shared = unnamed
        if same_search or shared:
            _join(conn, report, case_id, case.job_id, push_time, regression, now)
            _second_regression(
                conn, report, case_id, case.job_id, regression, recent, now, settings
            )
            return report.id
    try:
        with conn.begin_nested():
            return _open(
                conn,
                job_id=case.job_id,
                case_id=case_id,
                source="regression",
                regression=regression,
                now=now,
                settings=settings,
                strategy=settings.strategy,
                same_manifests=settings.same_manifests,
                mature_at=now + settings.maturity,
            )
    except sa.exc.IntegrityError:
        # A concurrent pass opened it for this very case first.
        return conn.execute(
            sa.select(backfill_report.c.id).where(backfill_report.c.case_id == case_id)
        ).scalar_one()


def _second_regression(
    conn: sa.Connection,
    joined: Any,
    case_id: int,
    job_id: int,
    regression: Regression,
    recent: Sequence[Any],
    now: datetime,
    settings: BackfillSettings,
) -> None:
    """A search of their own for the lines of a joining case that no search looks for,
    when they began failing after the search the case joined.

    A regression that is not backed out fails every later run of its chunk; a test broken
    by a later push then fails beside it, and every case of the new regression shares the
    old one's test and joins its search: the new one would never be searched for. Only
    lines the policy judged a regression's on their own are split off (a flaky test beside
    it is not), and only when the runs of the case's chunk since the joined search's push
    showed the searched lines often enough without the new ones: one regression's tests
    fail from the same push. Lines another open search looks for join that one instead.
    """
    judged = set(regression_lines(_case_evidence(conn, job_id)))
    searched = [joined, *(r for r in recent if r.id != joined.id)]
    old: set[str] = set()
    # A crash between tests is no line the policy judges; beside another regression's
    # lines it is not searched for at all. Its later onset, below, is what tells.
    between = [
        line for line in _observed_lines(conn, job_id, crashes=True) or [] if not names_a_test(line)
    ]
    lines = [*regression.lines, *between]
    new = [line for line in regression.lines if line in judged and names_a_test(line)] + between
    case_groups = functools.cache(lambda: _unnamed_failure_groups(conn, job_id))
    case_push, label, repository_id = conn.execute(
        sa.select(push.c.push_time, job_type.c.name, job.c.repository_id)
        .join(push, push.c.id == job.c.push_id)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(job.c.id == job_id)
    ).one()
    for report in searched:
        covered = [
            line
            for line in lines
            if line in (report.failure_lines or []) or test_of(line) in (report.tests or [])
        ]
        # A line that names no test (a timeout's `Last test finished`) is another search's
        # only where the two met: on world 20261223-1 a timeout beginning on push 18 beside
        # a regression never backed out was taken for the timeout of another chunk's
        # search, whose regression had stopped on push 16, and joined it.
        unnamed = [line for line in covered if not names_a_test(line)]
        if (
            unnamed
            and report.id != joined.id
            and not _unnamed_meet(conn, report, label, case_groups)
        ):
            covered = [line for line in covered if line not in unnamed]
        if not covered:
            continue
        old.update(covered)
        new = [line for line in new if line not in covered]
        if report.id != joined.id and case_id not in (report.case_ids or []):
            _join(
                conn, report, case_id, job_id, case_push, regression_of(conn, job_id, covered), now
            )
    if not new:
        return
    # `regression_of` keeps the lines a retrigger showed again, or, when none did, all of
    # them: then they are this run's own.
    second = regression_of(conn, job_id, only=new)
    if not any(second.shown_by.values()):
        return
    pushed = (joined.push_time, case_push)
    if not _began_later(conn, repository_id, label, pushed, second, old):
        return
    _open(
        conn,
        job_id=job_id,
        case_id=None,
        source="regression",
        regression=second,
        now=now,
        settings=settings,
        strategy=joined.strategy,
        same_manifests=joined.same_manifests,
        mature_at=now + settings.maturity,
        case_ids=[case_id],
    )


def split_off(
    conn: sa.Connection,
    report_id: int,
    lines: Sequence[str],
    now: datetime,
    settings: BackfillSettings,
) -> int | None:
    """A search of its own for `lines` of a report whose search named a culprit they began
    failing after (`model.backfill.began_after`); its id, or None when the report's run
    keeps none of them. The report keeps the rest of its lines and tests; the new search
    starts at once from the same run, with the same cases to pool configurations from."""
    report = conn.execute(sa.select(backfill_report).where(backfill_report.c.id == report_id)).one()
    second = regression_of(conn, report.job_id, only=lines)
    if not second.lines:
        return None
    kept = [line for line in report.failure_lines if line not in second.lines]
    moved = set(second.tests) - {test_of(line) for line in kept}
    conn.execute(
        sa.update(backfill_report)
        .where(backfill_report.c.id == report_id)
        .values(
            failure_lines=kept,
            tests=[t for t in report.tests if t not in moved],
            updated_at=now,
        )
    )
    return _open_apart(conn, report, report.job_id, second, report.case_ids, now, settings)


def _open_apart(
    conn: sa.Connection,
    report: Any,
    job_id: int,
    regression: Regression,
    case_ids: Sequence[int],
    now: datetime,
    settings: BackfillSettings,
) -> int:
    """A search split from `report`'s, as it searches, starting at once."""
    return _open(
        conn,
        job_id=job_id,
        case_id=None,
        source="regression",
        regression=regression,
        now=now,
        settings=settings,
        strategy=report.strategy,
        same_manifests=report.same_manifests,
        mature_at=now,
        case_ids=case_ids,
    )


def _began_later(
    conn: sa.Connection,
    repository_id: int,
    label: str,
    between: tuple[datetime, datetime],
    second: Regression,
    old: set[str],
) -> bool:
    """Whether `second`'s lines began failing after the joined search's push: the runs of
    the case's suite chunk (`label`'s) pushed `between` it and the case's push never
    showed them, and showed the `old` lines often enough that one regression of both
    would have shown them too."""
    since, case_push = between
    runs = conn.execute(
        sa.select(
            job_type.c.name,
            run_observation.c.parse_status,
            run_observation.c.failure_lines,
            run_observation.c.raw_failure_lines,
        )
        .select_from(job)
        .join(push, push.c.id == job.c.push_id)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(run_observation, run_observation.c.job_id == job.c.id)
        .where(
            job.c.repository_id == repository_id,
            push.c.push_time >= since,
            push.c.push_time < case_push,
            job.c.state == "completed",
            job.c.result == "testfailed",
        )
    ).all()
    showed_old = 0
    for run in runs:
        if suite_of(run.name) != suite_of(label):
            continue  # another chunk: it does not run the new lines' tests
        if not run_lines_known(run.parse_status, run.failure_lines):
            continue
        seen = set(with_crash_lines(run.failure_lines, run.raw_failure_lines))
        if seen & set(second.lines):
            return False  # they failed before this case's push: no later onset shown
        showed_old += bool(seen & old)
    # Each of one regression's tests fails on its own draw: in the runs that showed the
    # old lines, the new ones would have shown by now were they the same regression.
    return (1.0 - second.fail_rate) ** showed_old <= ONSET_MISSED


def _join(
    conn: sa.Connection,
    report: Any,
    case_id: int,
    job_id: int,
    push_time: datetime,
    regression: Regression,
    now: datetime,
) -> None:
    values: dict[str, Any] = {"case_ids": [*report.case_ids, case_id], "updated_at": now}
    record = conn.execute(
        sa.select(backfill_record.c.id, backfill_record.c.status, backfill_record.c.context)
        .where(backfill_record.c.report_id == report.id)
        .order_by(backfill_record.c.id)
    ).first()
    older = push_time < report.push_time
    retarget = older and report.status == OPEN and record is not None
    retarget = retarget and record.status == PRELIMINARY
    new: dict[str, Any] | None = None
    if retarget:
        # Not acted on yet: search from the older failing push, which is nearer the culprit.
        new = _record_values(conn, report.id, job_id, regression, now)
        for key in ("same_manifests", "strategy"):
            new["context"][key] = record.context[key]
        values.update(
            push_id=new["context"]["push_id"],
            job_id=job_id,
            label=new["label"],
            # The tests it was for stay: a case joins a search by a test it shares, or
            # by tests that began failing with the regression it serves.
            tests=sorted(set(report.tests) | set(regression.tests)),
            failure_lines=regression.lines,
            fail_rate=regression.fail_rate,
        )
    changed = conn.execute(
        sa.update(backfill_report)
        .where(backfill_report.c.id == report.id, backfill_report.c.updated_at == report.updated_at)
        .values(**values)
    ).rowcount
    if not changed:
        return  # another pass changed the report first; the next call joins the case again
    if new is not None and record is not None:
        conn.execute(sa.delete(backfill_record).where(backfill_record.c.id == record.id))
        conn.execute(sa.insert(backfill_record).values(**new))


def request_backfill(
    conn: sa.Connection,
    task_id: str,
    now: datetime,
    *,
    strategy: str = "linear",
    depth: int | None = None,
    same_manifests: bool = True,
    settings: BackfillSettings | None = None,
) -> int:
    """Open a manual report for the latest run of `task_id`, to act on at once; its id."""
    settings = settings or BackfillSettings()
    if strategy not in STRATEGIES:
        known = ", ".join(sorted(STRATEGIES))
        raise InputError(f"unknown backfill strategy {strategy!r}; known: {known}")
    found = conn.execute(
        sa.select(job.c.id, job.c.push_id, job_type.c.name.label("label"))
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(job.c.task_id == task_id)
        .order_by(job.c.run_id.desc())
    ).first()
    if found is None:
        raise InputError(f"task {task_id} is not in the database: ingest its push first")
    job_id = found.id
    # An open search of this label on this push (a triage regression's, or an earlier
    # request for this or another run of the label) is the one to follow, not a second.
    existing = conn.execute(
        sa.select(backfill_report.c.id)
        .where(
            backfill_report.c.push_id == found.push_id,
            backfill_report.c.label == found.label,
            backfill_report.c.status == OPEN,
        )
        .order_by(backfill_report.c.id)
    ).scalar()
    if existing is not None:
        return existing
    report_id = _open(
        conn,
        job_id=job_id,
        case_id=None,
        source="manual",
        regression=regression_of(conn, job_id),
        now=now,
        settings=settings,
        strategy=strategy,
        same_manifests=same_manifests,
        mature_at=now,
    )
    if depth is not None:
        _update_context(conn, report_id, depth=depth)
    return report_id


def _update_context(conn: sa.Connection, report_id: int, **values: Any) -> None:
    """Set `values` in the context of a report's record, before it is first acted on."""
    record = conn.execute(
        sa.select(backfill_record.c.id, backfill_record.c.context).where(
            backfill_record.c.report_id == report_id
        )
    ).one()
    conn.execute(
        sa.update(backfill_record)
        .where(backfill_record.c.id == record.id)
        .values(context={**record.context, **values})
    )


@dataclass(frozen=True)
class _JoinedCase:
    """A case of a report: its original run, what and where it ran, and its regression."""

    case_id: int
    job_id: int
    runs_of: tuple[str, int, str]  # label, machine platform id, option collection
    regression: Regression


def check_unsearched(
    conn: sa.Connection,
    report_id: int,
    searched: Sequence[str],
    window: Sequence[int],
    culprit: int,
    now: datetime,
    settings: BackfillSettings,
) -> list[int]:
    """Searches of their own for the tests of the report that its search, about to name
    the push at `window[culprit]`, never looked for, unless their own runs show they began
    there; the ids of the reports opened.

    A case joins a regression's search when its tests began failing on the same push
    (`model.regressions.Group.landed_with`): two regressions on neighbouring pushes then
    share one search, which looks for one of them and names its push for both. On held-out
    seed 20261234, 7 of 9 wrong reports were such a claim: a mochitest broken on push 17
    whose chunk did not run there rode with a web-platform test broken on push 18. A test
    is the culprit's without a search of its own when it failed on no push before, when
    another push breaking it just before (as often as pushes here break tests) with its
    own chunks' clean runs there all missing it is unlikely, and when it did not run
    clean from the culprit on so often that it began later (`_began_on`). Otherwise its
    cases take a search of their own from two pushes before the culprit, and a regression
    record of their own (`store.regressions.move_cases`), so that write-back and alerts
    claim no culprit nobody checked.
    """
    report = conn.execute(sa.select(backfill_report).where(backfill_report.c.id == report_id)).one()
    looked_for = {test_of(line) for line in searched}
    unsearched = [t for t in report.tests if names_a_test(t) and t not in looked_for]
    if not unsearched or culprit < 1:
        return []
    cases = _joined_cases(conn, report.case_ids or [])
    landing = _landing_rate(conn, report.repository_id, window[culprit])
    apart: dict[str, list[_JoinedCase]] = {}
    for test in unsearched:
        holding = [c for c in cases if test in c.regression.tests]
        if holding and not _began_on(conn, test, holding, window, culprit, landing):
            apart[test] = holding
    opened = []
    for first, tests in _by_oldest_case(apart):
        lines = [line for line in first.regression.lines if test_of(line) in tests]
        second = regression_of(conn, first.job_id, only=lines)
        if not second.lines:
            continue
        moved = sorted({c.case_id for t in tests for c in apart[t]})
        new_id = _open_apart(conn, report, first.job_id, second, moved, now, settings)
        # From two pushes before the culprit: the push just before it may be the test's
        # own culprit (two regressions on neighbouring pushes), and is nameable only
        # beside a push searched before it.
        _start_window_at(conn, new_id, window[max(culprit - 2, 0)], settings)
        # A case that failed a test the search looked for too stays in its record (two
        # regressions in one run); the new search pools its configuration all the same.
        only_these = [
            c.case_id for c in cases if c.case_id in moved and set(c.regression.tests) <= set(tests)
        ]
        move_cases(conn, report_id, new_id, only_these, second.tests, second.lines, now)
        opened.append((new_id, set(tests), set(only_these)))
    if not opened:
        return []
    gone = set().union(*(tests for _, tests, _ in opened))
    left = set().union(*(moved for _, _, moved in opened))
    conn.execute(
        sa.update(backfill_report)
        .where(backfill_report.c.id == report_id)
        .values(
            tests=[t for t in report.tests if t not in gone],
            case_ids=[c for c in report.case_ids if c not in left],
            updated_at=now,
        )
    )
    return [new_id for new_id, _, _ in opened]


def _joined_cases(conn: sa.Connection, case_ids: Sequence[int]) -> list[_JoinedCase]:
    if not case_ids:
        return []
    rows = conn.execute(
        sa.select(
            triage_case.c.id,
            triage_case.c.job_id,
            job_type.c.name,
            job.c.machine_platform_id,
            job.c.option_collection,
        )
        .join(job, job.c.id == triage_case.c.job_id)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(push, push.c.id == job.c.push_id)
        .where(triage_case.c.id.in_(list(case_ids)))
        .order_by(push.c.push_time, triage_case.c.id)
    ).all()
    return [
        _JoinedCase(
            case_id=r.id,
            job_id=r.job_id,
            runs_of=(r.name, r.machine_platform_id, r.option_collection),
            regression=regression_of(conn, r.job_id),
        )
        for r in rows
    ]


def _began_on(
    conn: sa.Connection,
    test: str,
    holding: Sequence[_JoinedCase],
    window: Sequence[int],
    culprit: int,
    landing_rate: float,
) -> bool:
    """Whether `test` (failing in the `holding` cases) began failing on `window[culprit]`
    as far as its own chunks' runs in the window show, at the rate its oldest case's
    retriggers gave: that another push broke it (each as likely as a push here breaks
    tests, `landing_rate`) is at most `ONSET_MISSED` likely (`other_onset_odds`)."""
    where = {c.runs_of for c in holding}
    rows = conn.execute(
        sa.select(
            job.c.push_id,
            job_type.c.name,
            job.c.machine_platform_id,
            job.c.option_collection,
            *_RUN_SEEN,
        )
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
        .where(
            job.c.push_id.in_(list(window)),
            job_type.c.name.in_(sorted({label for label, _, _ in where})),
            job.c.state == "completed",
            job.c.result.in_(["success", "testfailed"]),
        )
    ).all()
    position = {p: i for i, p in enumerate(window)}
    clean: Counter[int] = Counter()
    first = len(window)
    for r in rows:
        if (r.name, r.machine_platform_id, r.option_collection) not in where:
            continue
        seen = _lines_seen(r)
        if seen is None:
            continue  # not read yet: says nothing either way
        if any(test_of(line) == test for line in seen):
            first = min(first, position[r.push_id])
        else:
            clean[position[r.push_id]] += 1
    oldest = holding[0]
    lines = [line for line in oldest.regression.lines if test_of(line) == test]
    missed = 1.0 - regression_of(conn, oldest.job_id, only=lines).fail_rate
    runs = [clean[i] for i in range(len(window))]
    odds = other_onset_odds(runs, culprit, first, missed, landing_rate)
    return odds / (1.0 + odds) <= ONSET_MISSED


def _landing_rate(conn: sa.Connection, repository_id: int, up_to: int) -> float:
    """How often a push of the repository breaks tests, as far as its searches have named
    culprits among the pushes up to `up_to` (`up_to` one of them): (culprits + 1) /
    (pushes + 2)."""
    until = sa.select(push.c.push_time).where(push.c.id == up_to).scalar_subquery()
    pushes = conn.execute(
        sa.select(sa.func.count())
        .select_from(push)
        .where(push.c.repository_id == repository_id, push.c.push_time <= until)
    ).scalar_one()
    named = set(
        conn.execute(
            sa.select(backfill_report.c.culprit_push_id)
            .join(push, push.c.id == backfill_report.c.culprit_push_id)
            .where(backfill_report.c.repository_id == repository_id, push.c.push_time <= until)
        ).scalars()
    )
    return (len(named | {up_to}) + 1) / (pushes + 2)


def _by_oldest_case(apart: dict[str, list[_JoinedCase]]) -> list[tuple[_JoinedCase, list[str]]]:
    """The tests to search for apart, by the oldest case failing them: one search each."""
    out: dict[int, tuple[_JoinedCase, list[str]]] = {}
    for test, holding in sorted(apart.items()):
        out.setdefault(holding[0].case_id, (holding[0], []))[1].append(test)
    return list(out.values())


def _start_window_at(
    conn: sa.Connection, report_id: int, start: int, settings: BackfillSettings
) -> None:
    """The new search looks from `start` (before the culprit the claim was about) up to
    its own push, when that is within its usual depth: whether the test began on that
    culprit or next to it is the question, and older pushes come in by extension if it
    failed on `start` too."""
    own = conn.execute(
        sa.select(backfill_report.c.push_id).where(backfill_report.c.id == report_id)
    ).scalar_one()
    pushes = list(reversed(recent_push_ids(conn, own, settings.depth + 1)))
    if start in pushes[:-1]:
        _update_context(conn, report_id, window=pushes[pushes.index(start) :])
