"""What sheriff writes back to Treeherder, decided from the store, once per job.

For a run sheriff decided, and for the retriggers and backfill runs it asked for:
intermittent with an open bug in its bug suggestions → 4 and the bug linked;
intermittent without one → 8; infra → 5; a regression → 2 (fixed by commit) with a
note naming the regression, its culprit push and sheriff's page, once the regression's
search has named the culprit or given up. Each is one `treeherder-classify` effect in the
request log (key `treeherder:<repo>:<job id>`): written once, sent once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sheriff.actions.effects import enqueue_effect
from sheriff.actions.writeback import CLASSIFY
from sheriff.model.policy import LINES_READ
from sheriff.store.schema import (
    action_request,
    job,
    job_type,
    push,
    regression,
    regression_case,
    repository,
    run_observation,
    triage_case,
)
from sheriff.triage.regressions import search_settled, with_searches

INTERMITTENT, INTERMITTENT_NEEDS_BUG, INFRA, FIXED_BY_COMMIT = 4, 8, 5, 2


def _open_bug(suggestions: Any) -> int | None:
    for entry in suggestions or ():
        bugs = entry.get("open_bugs") or []
        if bugs:
            return int(bugs[0])
    return None


def _intermittent(obs: Any) -> dict[str, Any]:
    bug = _open_bug(obs.bug_suggestions)
    if bug is not None:
        return {"classification": INTERMITTENT, "bug_id": bug, "text": f"intermittent, bug {bug}"}
    return {"classification": INTERMITTENT_NEEDS_BUG, "text": "intermittent, no open bug yet"}


def _regression_note(r: Any, public_url: str) -> dict[str, Any]:
    culprit = (
        f"culprit push {r.culprit_revision[:12]} ({r.author})"
        if r.culprit_revision
        else "no culprit found"
    )
    return {
        "classification": FIXED_BY_COMMIT,
        "text": f"sheriff regression {r.id}: {culprit}; {public_url}/api/regressions/{r.id}",
    }


def plan_writeback(
    conn: sa.Connection, repo: str, *, public_url: str, live: bool, now: datetime
) -> int:
    """Enqueue the classification of every failed run sheriff has settled; how many new."""
    repository_id = conn.execute(
        sa.select(repository.c.id).where(repository.c.name == repo)
    ).scalar()
    if repository_id is None:
        return 0
    done = set(
        conn.execute(
            sa.select(action_request.c.idempotency_key).where(
                action_request.c.strategy == CLASSIFY, action_request.c.repository == repo
            )
        ).scalars()
    )
    settled = with_searches(conn, repo)
    undecided = set(
        conn.execute(
            sa.select(triage_case.c.push_id, triage_case.c.label).where(
                triage_case.c.verdict.is_(None)
            )
        ).all()
    )
    case_regression = dict(
        conn.execute(sa.select(regression_case.c.case_id, regression_case.c.regression_id)).all()
    )
    by_id = {r.id: r for r in settled}
    rows = conn.execute(
        sa.select(
            job.c.id,
            job.c.push_id,
            job.c.action,
            job_type.c.name.label("label"),
            push.c.revision,
            run_observation.c.treeherder_job_id,
            run_observation.c.parse_status,
            run_observation.c.errorsummary,
            run_observation.c.failure_lines,
            run_observation.c.bug_suggestions,
            triage_case.c.id.label("case_id"),
            triage_case.c.verdict,
        )
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .join(push, push.c.id == job.c.push_id)
        .join(run_observation, run_observation.c.job_id == job.c.id)
        .outerjoin(triage_case, triage_case.c.job_id == job.c.id)
        .where(
            push.c.repository_id == repository_id,
            job.c.state == "completed",
            job.c.result == "testfailed",
            run_observation.c.treeherder_job_id.is_not(None),
            sa.or_(triage_case.c.verdict.is_not(None), job.c.action.is_not(None)),
        )
    ).all()
    added = 0
    for r in rows:
        key = f"treeherder:{repo}:{r.treeherder_job_id}"
        if key in done:
            continue
        if r.verdict is None and (r.push_id, r.label) in undecided:
            continue  # a retrigger of a case still being decided
        wanted = _decide(r, settled, by_id, case_regression, public_url)
        if wanted is None:
            continue
        enqueue_effect(
            conn,
            key,
            CLASSIFY,
            repository=repo,
            revision=r.revision,
            input={"job_id": int(r.treeherder_job_id), **wanted},
            live=live,
            now=now,
        )
        done.add(key)
        added += 1
    return added


def _decide(
    r: Any,
    settled: list[Any],
    by_id: dict[int, Any],
    case_regression: dict[int, int],
    public_url: str,
) -> dict[str, Any] | None:
    if r.verdict == "infra":
        return {"classification": INFRA, "text": "infrastructure failure"}
    if r.verdict == "regression":
        found = by_id.get(case_regression.get(r.case_id, -1))
        settled_one = found is not None and search_settled(found)
        return _regression_note(found, public_url) if settled_one else None
    if r.verdict == "intermittent":
        return _intermittent(r) if r.parse_status in (*LINES_READ, "failed") else None
    if r.verdict == "not-eligible" and r.parse_status in LINES_READ:
        # A queue sheriff does not triage: only a settled regression's own line is said.
        lines = set(r.failure_lines or ())
        for candidate in settled:
            if search_settled(candidate) and lines & set(candidate.failure_lines):
                return _regression_note(candidate, public_url)
        return None
    if r.verdict is not None or r.action is None:
        return None  # classified, wrong-tier: not sheriff's to say
    # A run sheriff's own action created (retrigger or backfill).
    if r.parse_status not in LINES_READ:
        return None
    if r.errorsummary == "missing":
        return {"classification": INFRA, "text": "infrastructure failure (no errorsummary)"}
    lines = set(r.failure_lines or ())
    for candidate in settled:
        if lines & set(candidate.failure_lines):
            # The regression's own failure: its note once its search settled.
            return _regression_note(candidate, public_url) if search_settled(candidate) else None
    return _intermittent(r)


MAX_REASSERTIONS = 6


def needs_bug_writes(conn: sa.Connection, repo: str, *, since: datetime) -> dict[str, list[Any]]:
    """sheriff's sent 8s (intermittent needs bug) since `since`, by push revision."""
    rows = conn.execute(
        sa.select(
            action_request.c.idempotency_key,
            action_request.c.revision,
            action_request.c.input,
        ).where(
            action_request.c.strategy == CLASSIFY,
            action_request.c.repository == repo,
            action_request.c.state == "sent",
            action_request.c.created_at >= since,
        )
    ).all()
    found: dict[str, list[Any]] = {}
    for row in rows:
        if int(row.input.get("classification", 0)) == INTERMITTENT_NEEDS_BUG:
            found.setdefault(row.revision, []).append(row)
    return found


def reassert(
    conn: sa.Connection, repo: str, rows: list[Any], shown: dict[int, int], *, now: datetime
) -> int:
    """Write an 8 again where Treeherder shows the job back at 1 or 6 (a bounded number
    of times: each is one more note on the job)."""
    added = 0
    keys = set(
        conn.execute(
            sa.select(action_request.c.idempotency_key).where(
                action_request.c.strategy == CLASSIFY, action_request.c.repository == repo
            )
        ).scalars()
    )
    for row in rows:
        job_id = int(row.input["job_id"])
        if shown.get(job_id) not in (1, 6):
            continue
        base = f"treeherder:{repo}:{job_id}"
        again = [k for k in keys if k.startswith(base + ":again")]
        if len(again) >= MAX_REASSERTIONS or row.idempotency_key != (
            f"{base}:again{len(again)}" if again else base
        ):
            continue  # only the latest write of a job is asserted again
        key = f"{base}:again{len(again) + 1}"
        enqueue_effect(
            conn,
            key,
            CLASSIFY,
            repository=repo,
            revision=row.revision,
            input={**row.input, "text": "intermittent, no open bug yet (again)"},
            now=now,
        )
        keys.add(key)
        added += 1
    return added


def runs_to_read(conn: sa.Connection, repo: str) -> list[Any]:
    """Failed runs whose failure lines sheriff has not read and needs for write-back:
    its own retriggers and backfill runs that finished after their case or search no
    longer watched them, and (see `runs_near_regressions`) not-eligible originals."""
    own = conn.execute(
        sa.select(job.c.id, job.c.task_id, job.c.run_id, job.c.result)
        .join(push, push.c.id == job.c.push_id)
        .join(repository, repository.c.id == push.c.repository_id)
        .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
        .where(
            repository.c.name == repo,
            job.c.action.is_not(None),
            job.c.job_kind == "test",
            job.c.state == "completed",
            job.c.result == "testfailed",
            sa.or_(
                run_observation.c.job_id.is_(None),
                sa.and_(
                    run_observation.c.failure_lines.is_(None),
                    sa.or_(
                        run_observation.c.parse_status.is_(None),
                        run_observation.c.parse_status != "failed",
                    ),
                ),
            ),
        )
    ).all()
    return list(own) + runs_near_regressions(conn, repo)


def runs_near_regressions(conn: sa.Connection, repo: str) -> list[Any]:
    """Failed not-eligible originals on the pushes a regression failed on (first to last,
    or to where it stopped) whose failure lines sheriff has not read."""
    spans = conn.execute(
        sa.select(regression.c.first_push_id, regression.c.last_push_id)
        .join(repository, repository.c.id == regression.c.repository_id)
        .where(repository.c.name == repo, regression.c.merged_into.is_(None))
    ).all()
    if not spans:
        return []
    first, last = push.alias("first"), push.alias("last")
    ranges = conn.execute(
        sa.select(first.c.push_time.label("low"), last.c.push_time.label("high"))
        .select_from(regression)
        .join(first, first.c.id == regression.c.first_push_id)
        .join(last, last.c.id == regression.c.last_push_id)
        .join(repository, repository.c.id == regression.c.repository_id)
        .where(repository.c.name == repo, regression.c.merged_into.is_(None))
    ).all()
    within = sa.or_(*(push.c.push_time.between(r.low, r.high) for r in ranges))
    return list(
        conn.execute(
            sa.select(job.c.id, job.c.task_id, job.c.run_id, job.c.result)
            .join(triage_case, triage_case.c.job_id == job.c.id)
            .join(push, push.c.id == job.c.push_id)
            .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
            .where(
                triage_case.c.verdict == "not-eligible",
                job.c.result == "testfailed",
                within,
                sa.or_(
                    run_observation.c.job_id.is_(None),
                    run_observation.c.failure_lines.is_(None),
                ),
                sa.or_(
                    run_observation.c.parse_status.is_(None),
                    run_observation.c.parse_status.notin_(["failed"]),
                ),
            )
        ).all()
    )
