"""Reading reports and records back: for `sheriff backfill status`, the API and the metrics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from sheriff.backfill.evidence import window_evidence
from sheriff.model.actions import BACKFILL_TAG
from sheriff.model.failure_lines import crashed_test
from sheriff.model.regressions import names_a_test
from sheriff.store.schema import backfill_record, backfill_report, job, push, repository

# The actions whose tasks are backfill runs: Gecko's `backfill` creates them through
# `backfill-task`, which tags them only when it passes test_manifests (ingest names the
# untagged ones from their parent action task).
BACKFILL_ACTIONS = (BACKFILL_TAG, "backfill")

RECORD_FIELDS = (
    "id",
    "job_id",
    "label",
    "platform",
    "option_collection",
    "tier",
    "status",
    "actions_triggered",
    "runs_in_progress",
    "runs_successful",
    "runs_failed",
    "iterations",
    "reason",
)


def _iso(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


def reports(
    conn: sa.Connection,
    *,
    repository_name: str | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Reports, newest first, each with its records, as plain JSON-ready dicts."""
    original = push.alias("original")
    last = push.alias("last")
    query = (
        sa.select(
            backfill_report,
            repository.c.name.label("repository"),
            original.c.revision.label("revision"),
        )
        .join(repository, repository.c.id == backfill_report.c.repository_id)
        .join(original, original.c.id == backfill_report.c.push_id)
        .order_by(backfill_report.c.id.desc())
        .limit(limit)
    )
    if repository_name is not None:
        query = query.where(repository.c.name == repository_name)
    if status is not None:
        query = query.where(backfill_report.c.status == status)
    rows = conn.execute(query).mappings().all()
    ids = [row["id"] for row in rows]
    records: dict[int, list[dict[str, Any]]] = {}
    if ids:
        found = conn.execute(
            sa.select(
                backfill_record,
                last.c.revision.label("last_revision"),
            )
            .outerjoin(last, last.c.id == backfill_record.c.last_push_id)
            .where(backfill_record.c.report_id.in_(ids))
            .order_by(backfill_record.c.id)
        ).mappings()
        for rec in found:
            item = {name: rec[name] for name in RECORD_FIELDS}
            item["last_push_examined"] = rec["last_revision"]
            item["manifests"] = rec["context"].get("test_manifests", [])
            item["context"] = _context_points(conn, rec["context"], rec["job_id"])
            item["triggered_at"] = _iso(rec["triggered_at"])
            records.setdefault(rec["report_id"], []).append(item)
    return [
        {
            "id": row["id"],
            "repository": row["repository"],
            "revision": row["revision"],
            "label": row["label"],
            "source": row["source"],
            "strategy": row["strategy"],
            "same_manifests": row["same_manifests"],
            "tests": row["tests"],
            "fail_rate": row["fail_rate"],
            "cases": len(row["case_ids"] or []),
            "status": row["status"],
            "culprit_revision": row["culprit_revision"],
            "reason": row["reason"],
            "opened_at": _iso(row["opened_at"]),
            "closed_at": _iso(row["closed_at"]),
            "records": records.get(row["id"], []),
        }
        for row in rows
    ]


def _context_points(
    conn: sa.Connection, context: dict[str, Any], job_id: int
) -> list[dict[str, Any]]:
    """The record's window oldest first, one point per push as Treeherder's record context."""
    window = context.get("window") or []
    if not window:
        return []
    found = window_evidence(conn, context, window)
    pushes = {
        row.id: row
        for row in conn.execute(
            sa.select(push.c.id, push.c.revision, push.c.push_time).where(push.c.id.in_(window))
        )
    }
    outcomes = context.get("outcomes") or {}
    points = []
    for push_id in window:
        runs = found.runs.get(push_id, [])
        backfilled = [r.job_id for r in runs if r.backfilled]
        points.append(
            {
                "push_id": push_id,
                "push__revision": pushes[push_id].revision,
                "push_timestamp": _iso(pushes[push_id].push_time),
                "job_id": job_id
                if push_id == context.get("push_id")
                else (backfilled or [r.job_id for r in runs] or [None])[0],
                "runs": len(runs),
                "outcome": outcomes.get(str(push_id), "unknown"),
            }
        )
    return points


def tests_named(tests: Iterable[str] | None, lines: Iterable[str] | None) -> list[str]:
    """A report's tests, and the tests its `PROCESS-CRASH` lines name: a crash that the
    run's TEST-UNEXPECTED lines did not account for is searched by its line alone, yet it
    still names the test it crashed in, and the report is about that test's regression
    (scored as test-less, it was counted against a timeout regression failing on its push:
    world 20261227-23)."""
    named = list(tests or [])
    for line in lines or ():
        test = crashed_test(line)
        if test is not None and test not in named:
            named.append(test)
    return named


def named_culprits(conn: sa.Connection) -> list[dict[str, Any]]:
    """Every report that named a culprit: its failing tests (`tests_named`), original and
    culprit revisions."""
    original = push.alias("original")
    rows = conn.execute(
        sa.select(
            backfill_report.c.id,
            backfill_report.c.tests,
            backfill_report.c.failure_lines,
            backfill_report.c.label,
            original.c.revision,
            backfill_report.c.culprit_revision,
        )
        .join(original, original.c.id == backfill_report.c.push_id)
        .where(backfill_report.c.culprit_revision.is_not(None))
        .order_by(backfill_report.c.id)
    ).all()
    return [
        {
            "report": r.id,
            "tests": tests_named(r.tests, r.failure_lines),
            "label": r.label,
            "revision": r.revision,
            "culprit_revision": r.culprit_revision,
        }
        for r in rows
    ]


def culprit_metrics(
    conn: sa.Connection, regressions: list[dict[str, Any]], in_scope: int | None = None
) -> dict[str, Any]:
    """The `culprits` figures of the sim metrics, against the simulator's true regressions.

    Every report that names a push counts: a regression is `found` when a report about one
    of its tests named a push, and `correct` only when every such report named its true
    culprit revision (one wrong report makes it wrong, however many right ones it also
    has). `reports_named` / `reports_correct` count the reports themselves; `wrong` lists
    each wrong one by name, and `false_culprits` the reports that named a push for tests
    no regression broke (a range of flakes alone). `backfill_runs` counts the test runs
    backfills created that sheriff has seen (job rows of test kind), never the action
    tasks. `in_scope` (default: all) counts the regressions that failed at least one run
    sheriff was configured to triage: one that shows only on other queues cannot have a
    culprit named.
    """
    named = named_culprits(conn)
    found = correct = 0
    reports_named = reports_correct = 0
    wrong: list[dict[str, Any]] = []
    claimed: set[int] = set()
    for index, regression in enumerate(regressions):
        mine = [n for n in named if report_claims(n, regression, regressions)]
        claimed.update(n["report"] for n in mine)
        if not mine:
            continue
        found += 1
        right = [n for n in mine if n["culprit_revision"] == regression["culprit_revision"]]
        correct += len(right) == len(mine)
        reports_named += len(mine)
        reports_correct += len(right)
        wrong.extend(
            {
                "regression": regression.get("index", index),
                "report": n["report"],
                "label": n["label"],
                "tests": n["tests"],
                "named": n["culprit_revision"],
                "true": regression["culprit_revision"],
            }
            for n in mine
            if n["culprit_revision"] != regression["culprit_revision"]
        )
    # Reports about tests no regression broke: their range holds no true culprit.
    every = conn.execute(
        sa.select(backfill_report.c.tests, backfill_report.c.failure_lines, push.c.revision).join(
            push, push.c.id == backfill_report.c.push_id
        )
    ).all()
    searched = [
        {"tests": tests_named(r.tests, r.failure_lines), "revision": r.revision} for r in every
    ]
    without_culprit = sum(1 for r in searched if not any(report_about(r, g) for g in regressions))
    false_culprits = [
        {
            "report": n["report"],
            "label": n["label"],
            "tests": n["tests"],
            "named": n["culprit_revision"],
        }
        for n in named
        if n["report"] not in claimed
    ]
    runs = conn.execute(
        sa.select(sa.func.count())
        .select_from(job)
        .where(job.c.action.in_(BACKFILL_ACTIONS), job.c.job_kind == "test")
    ).scalar_one()
    return {
        "regressions": len(regressions),
        "in_scope": len(regressions) if in_scope is None else in_scope,
        "found": found,
        "correct": correct,
        "reports_named": reports_named,
        "reports_correct": reports_correct,
        "backfill_runs": runs,
        "wrong": wrong,
        "reports": len(every),
        "reports_without_true_culprit": without_culprit,
        "false_culprits": false_culprits,
    }


def report_claims(
    report: dict[str, Any], regression: dict[str, Any], regressions: list[dict[str, Any]]
) -> bool:
    """Whether a report that named a push counts for `regression`: it is about it; when it
    shares tests with several, it was opened on a push where this one failed (if on any
    of theirs); and when it is about several by a line naming no test (two timeout
    regressions failing on its push), it did not name the true culprit of another of them.
    A report counts for at least one regression it is about: none is left uncounted."""
    if not report_about(report, regression):
        return False
    if set(report["tests"]) & set(regression["tests"]):
        # One test regressed twice (fixed, then broken again): the report is about the
        # regressions that failed on its push, when its push is one where any did.
        sharing = [g for g in regressions if set(report["tests"]) & set(g["tests"])]
        failing = [g for g in sharing if report["revision"] in (g.get("failed_on") or [])]
        return not failing or any(g is regression for g in failing)
    others = [
        g["culprit_revision"]
        for g in regressions
        if g is not regression
        and report_about(report, g)
        and not set(report["tests"]) & set(g["tests"])
    ]
    return report["culprit_revision"] not in others or (
        report["culprit_revision"] == regression["culprit_revision"]
    )


def report_about(report: dict[str, Any], regression: dict[str, Any]) -> bool:
    """Whether a report is about a true regression: it names one of its tests, or, for a
    regression whose line names no test (`failure: crash | timeout`), it was opened on a
    push where that regression failed runs and it names no test path, or it searches a
    line naming none (`Last test finished`) beside the tests it holds: such a mixed report
    named the timeout's true culprit on world 20261233-9 and counted for nothing."""
    if set(report["tests"]) & set(regression["tests"]):
        return True
    if regression.get("failure") not in ("crash", "timeout"):
        return False
    pushes = regression.get("failed_on") or []
    tests = report["tests"]
    return report["revision"] in pushes and (not tests or not all(map(names_a_test, tests)))


def pushes_to_watch(conn: sa.Connection) -> list[dict[str, Any]]:
    """Pushes where open records asked for runs: ingest must keep polling their task groups.

    A backfill may reach pushes older than the triage pass's time window; without this their
    backfilled runs would never be seen and the record would time out.
    """
    contexts = conn.execute(
        sa.select(backfill_record.c.context).where(backfill_record.c.status == "backfilled")
    ).scalars()
    push_ids = sorted({int(p) for context in contexts for p in context.get("requested", {})})
    if not push_ids:
        return []
    rows = conn.execute(
        sa.select(push.c.id, push.c.revision, push.c.decision_task_id, repository.c.name)
        .join(repository, repository.c.id == push.c.repository_id)
        .where(push.c.id.in_(push_ids))
        .order_by(push.c.push_time)
    ).all()
    return [
        {
            "push_id": r.id,
            "repository": r.name,
            "revision": r.revision,
            "decision_task_id": r.decision_task_id,
        }
        for r in rows
    ]
