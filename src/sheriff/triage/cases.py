"""Cases: open one per failed original test run, and move each forward under a push lock.

Advancing a push's cases is one transaction that first locks the push row, so two passes
at once (PostgreSQL) plan one after the other and the second sees the first's requests:
nothing is ever asked for twice. The case states, the request and the evidence commit
together or not at all.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.actions.strategies import strategy
from sheriff.model.budget import Budget, tightest
from sheriff.model.case import (
    CLASSIFICATION_NAMES,
    DEFAULT_TIERS,
    CaseState,
    ErrorSummaryState,
    OriginalRun,
    eligibility,
    is_persons_classification,
    state_after_eligibility,
)
from sheriff.model.errorsummary import FailureKind, StructuredFailure
from sheriff.model.failure_lines import crash_lines
from sheriff.model.policy import (
    CaseEvidence,
    DecisionKind,
    Policy,
    RunEvidence,
    run_lines_known,
    run_lines_never,
)
from sheriff.store.loader import insert_ignoring_conflicts
from sheriff.store.schema import action_request, job, job_type, push, task_queue, triage_case
from sheriff.triage.budgets import retrigger_budgets
from sheriff.triage.observe import latest_runs, observations

if TYPE_CHECKING:
    from sheriff.store.history import PassCache

OPEN_STATES = ("new", "planned", "waiting")
FAILED_RESULTS = ("testfailed", "exception")
# Treeherder results of a completed test run, as the Taskcluster task state they come from.
TASK_STATE_OF_RESULT = {
    "success": "completed",
    "testfailed": "failed",
    "busted": "failed",
    "exception": "exception",
    "usercancel": "exception",
    "superseded": "exception",
    "retry": "exception",
}


@dataclass
class PushPlan:
    """What advancing one push's cases decided."""

    retriggers: Counter[str] = field(default_factory=Counter)
    cancel: list[str] = field(default_factory=list)
    decided: Counter[str] = field(default_factory=Counter)
    request_key: str | None = None
    # Cases whose retriggers a budget cut short this time (they decide on what they have).
    budget_limited: int = 0


def open_cases(conn: sa.Connection, push_ids: Sequence[int], policy: str, now: datetime) -> int:
    """A case for every failed original test run that is its task's last run and has none."""
    if not push_ids:
        return 0
    later = sa.alias(job)
    candidates = conn.execute(
        sa.select(job.c.id, job.c.push_id, job_type.c.name)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .where(
            job.c.push_id.in_(list(push_ids)),
            job.c.job_kind == "test",
            # Tasks an action created are evidence, never cases: tagged by Gecko, or (when
            # it tagged nothing) with an action task as their parent.
            job.c.action.is_(None),
            job.c.parent_task_id.is_(None),
            job.c.state == "completed",
            job.c.result.in_(FAILED_RESULTS),
            ~sa.exists().where(later.c.task_id == job.c.task_id, later.c.run_id > job.c.run_id),
            ~sa.exists().where(triage_case.c.job_id == job.c.id),
        )
    ).all()
    rows = [
        {
            "job_id": job_id,
            "push_id": push_id,
            "label": label,
            "state": "new",
            "policy": policy,
            "opened_at": now,
            "updated_at": now,
        }
        for job_id, push_id, label in candidates
    ]
    insert_ignoring_conflicts(conn, triage_case, rows)
    return len(rows)


def open_case_pushes(conn: sa.Connection, repository_id: int | None = None) -> list[int]:
    stmt = sa.select(triage_case.c.push_id).distinct().where(triage_case.c.state.in_(OPEN_STATES))
    if repository_id is not None:
        stmt = stmt.join(push, push.c.id == triage_case.c.push_id).where(
            push.c.repository_id == repository_id
        )
    return list(conn.execute(stmt).scalars())


def lock_push(conn: sa.Connection, push_id: int) -> None:
    """Serialise planning per push: a no-op write takes the row lock (PostgreSQL) or the
    database's write lock (SQLite) before anything is read."""
    conn.execute(push.update().where(push.c.id == push_id).values(id=push.c.id))


def _structured(raw: Any) -> tuple[StructuredFailure, ...]:
    out = []
    for item in raw or []:
        test, subtest, status, kind = (list(item) + [None] * 4)[:4]
        out.append(
            StructuredFailure(test or "", subtest, status or "", FailureKind(kind or "test"))
        )
    return tuple(out)


def run_evidence(row: Mapping[str, Any], obs: Mapping[str, Any] | None, mine: bool) -> RunEvidence:
    """One run as a policy sees it, from its job row and its observation."""
    resolved = row["state"] == "completed" and row["result"] != "retry"
    parse = (obs or {}).get("parse_status")
    lines = (obs or {}).get("failure_lines")
    lines_known = run_lines_known(parse, lines)
    return RunEvidence(
        row["task_id"],
        resolved=resolved,
        result=row["result"] if resolved else None,
        lines_known=lines_known,
        failure_lines=tuple((obs or {}).get("failure_lines") or ()) if lines_known else (),
        structured_failures=_structured((obs or {}).get("structured_failures")),
        requested_by_sheriff=mine,
        log_unparsed=run_lines_never(parse, lines),
        crash_lines=tuple(crash_lines((obs or {}).get("raw_failure_lines"))) if lines_known else (),
    )


def _request_key(repo: str, revision: str, wanted: Mapping[str, int], sequence: int) -> str:
    body = json.dumps(sorted(wanted.items()), separators=(",", ":"))
    digest = hashlib.sha1(body.encode()).hexdigest()[:16]
    return f"triage:retrigger-multiple:{repo}:{revision}:{sequence}:{digest}"


def advance_push(
    conn: sa.Connection,
    *,
    push_id: int,
    repo: str,
    revision: str,
    decision_task_id: str | None,
    policy: Policy,
    queue_prefixes: Sequence[str],
    runs_to_come: Mapping[str, int],
    seen_action_tasks: Iterable[str],
    now: datetime,
    runs_wanted: int = 6,
    runs_most: int | None = None,
    min_reproductions: int = 2,
    count_dry_runs: bool = False,
    on_regression: Callable[[sa.Connection, int, datetime], object] | None = None,
    history_cache: PassCache | None = None,
    tiers: Collection[int] = DEFAULT_TIERS,
    retriggers_per_push: int | None = None,
    retriggers_per_day: int | None = None,
) -> PushPlan:
    """Move every open case of one push forward; call inside a transaction.

    `history_cache` is shared by the pushes of one pass (the history policy's reads).
    A retrigger budget (`retriggers_per_push`, `retriggers_per_day` on the repository) that
    cannot pay for what a case's policy asks makes it decide at the runs it can still have
    (`runs_wanted` lowered to them): at a cap, or when its pending runs are in.
    """
    plan = PushPlan()
    lock_push(conn, push_id)
    budgets: tuple[Budget, ...] = ()
    cases = [
        dict(r)
        for r in conn.execute(
            sa.select(triage_case).where(
                triage_case.c.push_id == push_id, triage_case.c.state.in_(OPEN_STATES)
            )
        ).mappings()
    ]
    if not cases:
        return plan
    if retriggers_per_push is not None or retriggers_per_day is not None:
        budgets = retrigger_budgets(
            conn,
            repo=repo,
            revision=revision,
            now=now,
            per_push=retriggers_per_push,
            per_day=retriggers_per_day,
        )
    runs = latest_runs(conn, push_id, {c["label"] for c in cases})
    by_job = {r["id"]: r for r in runs}
    queues = dict(conn.execute(sa.select(task_queue.c.id, task_queue.c.name)).all())
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        by_label[r["label"]].append(r)
    obs = observations(conn, by_job)
    mine = {
        t
        for (t,) in conn.execute(
            sa.select(action_request.c.action_task_id).where(
                action_request.c.repository == repo,
                action_request.c.revision == revision,
                action_request.c.action_task_id.is_not(None),
            )
        )
    }
    requested = Counter(
        request_log.runs_requested(
            conn, repo, revision, exclude_action_tasks=set(seen_action_tasks)
        )
    )
    if count_dry_runs:
        # A dry run's requests stand for runs that will never come: counting them keeps the
        # plan stable instead of recording the same request again on every pass.
        for row in request_log.requests(
            conn, repository=repo, revision=revision, states=["dry-run"]
        ):
            requested.update(strategy(row.strategy).runs(row.input, row.labels))

    history = None
    if getattr(policy, "needs_history", False):
        from sheriff.store.history import PassCache, PushHistory

        history = PushHistory(conn, push_id, cache=history_cache or PassCache())
    for case in cases:
        original = by_job.get(case["job_id"]) or dict(
            conn.execute(sa.select(job).where(job.c.id == case["job_id"])).mappings().one()
        )
        o = obs.get(original["id"]) or {}
        if case["state"] == "new":
            summary = o.get("errorsummary")
            verdict = eligibility(
                OriginalRun(
                    task_id=original["task_id"],
                    label=case["label"],
                    state=TASK_STATE_OF_RESULT.get(original["result"], "failed"),
                    job_kind=original["job_kind"],
                    tier=original["tier"],
                    task_queue_id=queues[original["task_queue_id"]],
                    is_action_task=original["action"] is not None,
                    classification_id=o.get("classification_id"),
                    errorsummary=ErrorSummaryState(summary)
                    if summary
                    else ErrorSummaryState.UNKNOWN,
                    retriggerable=bool(original["retriggerable"]),
                ),
                queue_prefixes,
                tiers,
            )
            state = state_after_eligibility(verdict)
            if state.is_final:
                _decide(
                    conn, case, state.value, f"step {verdict.step}: {verdict.reason}", None, now
                )
                plan.decided[state.value] += 1
                continue
            if state is CaseState.NEW and verdict.status.value == "undetermined":
                continue
        elif is_persons_classification(o.get("classification_id")):
            # A person classified the failure while sheriff was deciding: theirs is the
            # verdict. Sheriff's runs still to come are no longer needed.
            classification = o["classification_id"]
            name = CLASSIFICATION_NAMES.get(classification, "classified")
            reason = (
                f"classified by a person in Treeherder after sheriff opened the case "
                f"(failure classification {classification}, {name}): left alone"
            )
            _decide(conn, case, CaseState.CLASSIFIED.value, reason, None, now)
            plan.decided[CaseState.CLASSIFIED.value] += 1
            plan.cancel.extend(
                r["task_id"]
                for r in by_label[case["label"]]
                if r["parent_task_id"] in mine and r["state"] != "completed"
            )
            continue
        others = [
            r
            for r in by_label[case["label"]]
            if r["task_id"] != original["task_id"] and r["job_kind"] == "test"
        ]
        evidence = CaseEvidence(
            original=run_evidence(original, o, False),
            retriggers=tuple(
                run_evidence(r, obs.get(r["id"]), r["parent_task_id"] in mine) for r in others
            ),
            requested_not_visible=int(runs_to_come.get(case["label"], 0))
            + int(requested.get(case["label"], 0))
            + plan.retriggers[case["label"]],
            runs_wanted=runs_wanted,
            runs_most=runs_most,
            min_reproductions=min_reproductions,
            history=history.case(original, o) if history is not None else None,
        )
        decision = policy.decide(evidence)
        spent = None
        if decision.kind is DecisionKind.RETRIGGER and budgets:
            spent = tightest(tuple(b.spend(sum(plan.retriggers.values())) for b in budgets))
            if spent is not None and spent.left is not None and decision.retriggers > spent.left:
                # Not enough budget for what the policy asks: it decides on the runs it has
                # and the few the budget still pays for.
                cap = max(1, evidence.runs_existing_or_requested + spent.left)
                decision = policy.decide(
                    replace(evidence, runs_wanted=min(runs_wanted, cap), runs_most=None)
                )
                plan.budget_limited += 1
            else:
                spent = None
        record = decision.to_dict()
        if spent is not None:
            record["budget"] = spent.to_dict()
            decision_reason = (
                f"retrigger budget of the {spent.scope} spent ({spent.used} of {spent.cap} "
                f"runs): {decision.reason}"
            )
        else:
            decision_reason = decision.reason
        if decision.kind is DecisionKind.VERDICT:
            _decide(
                conn,
                case,
                decision.verdict.value,
                decision_reason,
                record,
                now,
                p_regression=decision.p_regression,
            )
            plan.decided[decision.verdict.value] += 1
            if decision.verdict.value == "regression" and on_regression is not None:
                on_regression(conn, case["id"], now)  # in the same transaction as the verdict
        else:
            if decision.kind is DecisionKind.RETRIGGER and decision.retriggers > 0:
                plan.retriggers[case["label"]] += decision.retriggers
            conn.execute(
                triage_case.update()
                .where(triage_case.c.id == case["id"])
                .values(
                    state=decision.case_state.value,
                    runs_wanted=runs_wanted,
                    retriggers_requested=case["retriggers_requested"] + decision.retriggers,
                    evidence=record,
                    rule=decision_reason,
                    p_regression=decision.p_regression,
                    updated_at=now,
                )
            )
        plan.cancel.extend(decision.cancel)

    if plan.retriggers:
        sequence = len(
            [
                r
                for r in request_log.requests(conn, repository=repo, revision=revision)
                if r.strategy == "retrigger-multiple"
            ]
        )
        wanted = dict(sorted(plan.retriggers.items()))
        plan.request_key = _request_key(repo, revision, wanted, sequence)
        request_log.enqueue(
            conn,
            plan.request_key,
            "retrigger-multiple",
            repository=repo,
            revision=revision,
            task_id=None,
            labels=sorted(wanted),
            input=strategy("retrigger-multiple").build_input(labels=wanted),
            decision_task_id=decision_task_id,
            now=now,
        )
    return plan


def _decide(
    conn: sa.Connection,
    case: Mapping[str, Any],
    verdict: str,
    rule: str,
    evidence: Mapping[str, Any] | None,
    now: datetime,
    p_regression: float | None = None,
) -> None:
    conn.execute(
        triage_case.update()
        .where(triage_case.c.id == case["id"], triage_case.c.state.in_(OPEN_STATES))
        .values(
            state="decided",
            verdict=verdict,
            rule=rule,
            evidence=evidence if evidence is not None else case.get("evidence"),
            p_regression=p_regression,
            decided_at=now,
            updated_at=now,
        )
    )
