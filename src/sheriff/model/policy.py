"""Verdict rules (policies): given the runs of a failed test's label on its push, what next.

A policy looks at a `CaseEvidence` (the original run, the other runs of the same label on
the push, the runs requested but not visible yet) and returns a `Decision`: ask for n
more runs, wait, or give a verdict (regression / intermittent), always with the evidence
that decided. It is pure: the caller gathers the facts, stores the decision and sends
what it asks for. Usage (the facts come from Treeherder and Taskcluster; see RunEvidence):

    >>> from sheriff.model.failure_lines import LineKind, failure_lines_from_bug_suggestions
    >>> from sheriff.model.policy import CaseEvidence, RunEvidence, get_policy
    >>> suggestions = [{"search": "TEST-UNEXPECTED-FAIL | dom/test_a.html | got 0.25"}]
    >>> evidence = CaseEvidence(
    ...     original=RunEvidence(
    ...         "fZ0", resolved=True, result="testfailed", lines_known=True,
    ...         failure_lines=tuple(failure_lines_from_bug_suggestions(suggestions)),
    ...     ),
    ...     retriggers=(RunEvidence("Qx1", requested_by_sheriff=True),),  # still pending
    ...     requested_not_visible=2,  # an action task asked for 2 runs, not created yet
    ... )
    >>> decision = get_policy("seed").decide(evidence)
    >>> decision.kind, decision.retriggers  # 1 original + 1 retrigger + 2 requested, 6 wanted
    (<DecisionKind.RETRIGGER: 'retrigger'>, 2)
    >>> decision.case_state
    <CaseState.PLANNED: 'planned'>
    >>> decision.to_dict()["lines"]  # JSON-ready evidence, stored with the case
    [{'line': 'TEST-UNEXPECTED-FAIL | dom/test_a.html | got <n>', 'retriggers': 0, 'task_ids': []}]

Policies: `seed` (SPEC §3 steps 6-8, exact); `seed-early` (same verdicts, decided as soon
as they can no longer change, cancelling the runs no longer needed); `seed-staged` (the
same, with retriggers asked for in small waves: fewest runs, later verdicts). The rules as
implemented, with the tests that prove them, are in docs/triage-rules.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from sheriff.model.case import CaseState
from sheriff.model.errorsummary import FailureKind, StructuredFailure, failures_from_errorsummary
from sheriff.model.failure_lines import LineKind, failure_lines_from_bug_suggestions

__all__ = [
    "ADDED_POLICIES",
    "FINAL_PARSE_STATUSES",
    "LINES_READ",
    "NO_LOG",
    "POLICIES",
    "RAW_LOG",
    "READ_IT_YOURSELF",
    "UNPARSABLE_LOG",
    "VOID_RESULTS",
    "CaseEvidence",
    "Decision",
    "DecisionEvidence",
    "DecisionKind",
    "LineReproduction",
    "Policy",
    "RunEvidence",
    "SeedEarlyPolicy",
    "SeedPolicy",
    "SeedStagedPolicy",
    "StructuredReproduction",
    "UnknownPolicyError",
    "Verdict",
    "get_policy",
    "register_policy",
    "run_lines_known",
    "run_lines_never",
]

# Results of a run that say nothing about the test (Treeherder's names, and Taskcluster's
# `canceled`): such a run exists and is counted as a run, but is no evidence either way.
VOID_RESULTS = frozenset({"exception", "retry", "usercancel", "canceled", "superseded", "skipped"})


# Taskcluster's resolved task states, as the results Treeherder shows for a test task.
_TASK_RESULTS = {"completed": "success", "failed": "testfailed", "exception": "exception"}
# Errorsummary records that say a test failed (a group's or a log's ERROR alone does not).
_TEST_FAILURES = frozenset({FailureKind.TEST, FailureKind.CRASH})
# Treeherder's job log parse statuses after which no failure line will ever come, and
# sheriff's own for a run Treeherder lists no log for (an exception run: its Pulse handler
# gives those none).
NO_LOG = "no-log"
UNPARSABLE_LOG = frozenset({"failed", "skipped-size", NO_LOG})
# Sheriff's own status for a log it read itself (Treeherder's parse failed, or had not
# come after `raw_log_after_minutes`): its failure lines are known like a parsed log's.
RAW_LOG = "raw-log"
LINES_READ = frozenset({"parsed", RAW_LOG})
FINAL_PARSE_STATUSES = UNPARSABLE_LOG | LINES_READ
# Treeherder could not parse these logs, but sheriff can read them itself: until it has
# tried (the observation's failure lines are still null) the run's lines are to come.
READ_IT_YOURSELF = frozenset({"failed", "skipped-size"})
_UNPARSABLE = UNPARSABLE_LOG


def run_lines_known(parse_status: str | None, failure_lines: object) -> bool:
    """The run's failure lines have been read (from Treeherder's parse or the raw log)."""
    return parse_status in LINES_READ and failure_lines is not None


def run_lines_never(parse_status: str | None, failure_lines: object) -> bool:
    """No failure line will ever be known for the run (no log, or no log anyone can read)."""
    if parse_status == NO_LOG:
        return True
    return parse_status in READ_IT_YOURSELF and failure_lines is not None


class Verdict(StrEnum):
    """What a policy concludes about an eligible case."""

    REGRESSION = "regression"
    INTERMITTENT = "intermittent"


class DecisionKind(StrEnum):
    """What a policy asks the triage pass to do."""

    RETRIGGER = "retrigger"
    WAIT = "wait"
    VERDICT = "verdict"


@dataclass(frozen=True)
class RunEvidence:
    """One run of the case's label on the push: the original or a retrigger.

    `failure_lines` are normalised (sheriff.model.failure_lines) and only meaningful once
    `lines_known` (Treeherder has ingested the job and parsed its log). `log_unparsed`
    says that Treeherder's parsing failed, so the lines will never be known.
    """

    task_id: str
    resolved: bool = False
    result: str | None = None  # success, testfailed, busted, exception, usercancel, …
    lines_known: bool = False
    failure_lines: tuple[str, ...] = ()
    structured_failures: tuple[StructuredFailure, ...] = ()
    requested_by_sheriff: bool = False
    log_unparsed: bool = False
    # Normalised `PROCESS-CRASH` lines (known with `failure_lines`): the seed rule never
    # compares them; `history` does when the original has no TEST-UNEXPECTED line.
    crash_lines: tuple[str, ...] = ()

    @classmethod
    def from_ci(
        cls,
        task_id: str,
        *,
        task_state: str,
        parse_status: str | None = None,
        bug_suggestions: Iterable[Mapping[str, Any]] | None = None,
        errorsummary: str | None = None,
        requested_by_sheriff: bool = False,
    ) -> RunEvidence:
        """A run as Taskcluster and Treeherder describe it.

        `task_state` is the Taskcluster task state (pending, running, completed, failed,
        exception); `parse_status` Treeherder's for the job's log (None while Treeherder
        has no job): lines are known once it is `parsed` and the `bug_suggestions` were
        read; `failed`, `skipped-size` or `no-log` means they never will be.
        """
        resolved = task_state in _TASK_RESULTS
        lines_known = parse_status in LINES_READ and bug_suggestions is not None
        return cls(
            task_id,
            resolved=resolved,
            result=_TASK_RESULTS.get(task_state),
            lines_known=lines_known,
            failure_lines=(
                tuple(failure_lines_from_bug_suggestions(bug_suggestions or ()))
                if lines_known
                else ()
            ),
            structured_failures=tuple(failures_from_errorsummary(errorsummary or "")),
            requested_by_sheriff=requested_by_sheriff,
            log_unparsed=parse_status in _UNPARSABLE,
            crash_lines=(
                tuple(failure_lines_from_bug_suggestions(bug_suggestions or (), LineKind.CRASH))
                if lines_known
                else ()
            ),
        )

    @property
    def void(self) -> bool:
        """Resolved without saying anything about the test (infra, cancelled, log unparsed,
        or failed without a single failure)."""
        return self.resolved and (
            self.result in VOID_RESULTS or self.log_unparsed or self.failed_without_a_failure
        )

    @property
    def failed_without_a_failure(self) -> bool:
        """Failed, its log read, and no test failed in it: no failure line, no crash, no
        failed test in its errorsummary. The worker or the harness failed, not a test (a
        worker pool's storm fails every task it runs like that), so the run cannot say
        whether the test passes: counted as a retrigger that did not reproduce, a storm
        made regressions intermittent (world 20261213-22: 0 of 13 storm retriggers
        "reproduced" a regression failing 49 % of runs)."""
        return (
            self.result == _TASK_RESULTS["failed"]
            and self.lines_known
            and not self.failure_lines
            and not self.crash_lines
            and not any(f.kind in _TEST_FAILURES for f in self.structured_failures)
        )

    @property
    def settled(self) -> bool:
        """Nothing more will be learnt about this run."""
        return self.resolved and (self.void or self.lines_known)


@dataclass(frozen=True)
class CaseEvidence:
    """Everything a policy may look at for one case."""

    original: RunEvidence
    retriggers: tuple[RunEvidence, ...] = ()
    requested_not_visible: int = 0  # asked for (by an action task or sheriff), no task yet
    runs_wanted: int = 6  # original + 5 retriggers
    min_reproductions: int = 2
    # The most runs a policy may take for a case still undecided at `runs_wanted` (None:
    # `runs_wanted`, never more). Only `history` goes past the cap, and only for a case
    # that a few more runs could still turn (docs/history-policy.md).
    runs_most: int | None = None
    # Prior evidence from the store (sheriff.model.history.CaseHistory) for policies that
    # declare `needs_history`; the others ignore it.
    history: Any = None

    def __post_init__(self) -> None:
        if self.runs_wanted < 1:
            raise ValueError(f"runs_wanted must be at least 1, not {self.runs_wanted}")
        if self.runs_most is not None and self.runs_most < self.runs_wanted:
            raise ValueError(
                f"runs_most ({self.runs_most}) is below runs_wanted ({self.runs_wanted})"
            )
        if self.min_reproductions < 1:
            raise ValueError(f"min_reproductions must be at least 1, not {self.min_reproductions}")
        if self.requested_not_visible < 0:
            raise ValueError(f"requested_not_visible is negative: {self.requested_not_visible}")
        ids = [self.original.task_id, *(r.task_id for r in self.retriggers)]
        if len(set(ids)) != len(ids):
            raise ValueError("a task appears twice among the original and its retriggers")

    @property
    def runs_existing_or_requested(self) -> int:
        """Original + visible retriggers + runs requested but not created yet."""
        return 1 + len(self.retriggers) + self.requested_not_visible

    @property
    def runs_missing(self) -> int:
        """How many more runs must be asked for to reach `runs_wanted` (never negative)."""
        return max(0, self.runs_wanted - self.runs_existing_or_requested)

    @property
    def runs_beyond(self) -> int:
        """How many more runs past `runs_wanted` could still be asked for, up to
        `runs_most` (0 when there is no such room)."""
        if self.runs_most is None:
            return 0
        return max(0, self.runs_most - max(self.runs_wanted, self.runs_existing_or_requested))


@dataclass(frozen=True)
class LineReproduction:
    """A failure line of the original and the retriggers that showed it."""

    line: str
    task_ids: tuple[str, ...]

    @property
    def retriggers(self) -> int:
        return len(self.task_ids)


@dataclass(frozen=True)
class StructuredReproduction:
    """A structured failure of the original and the retriggers that showed it (second source)."""

    failure: StructuredFailure
    task_ids: tuple[str, ...]

    @property
    def retriggers(self) -> int:
        return len(self.task_ids)


@dataclass(frozen=True)
class DecisionEvidence:
    """What a decision was based on, kept with the case."""

    policy: str
    rule: str
    runs_wanted: int
    min_reproductions: int
    runs_existing: int  # original + visible retriggers
    runs_requested_not_visible: int
    runs_counted: int  # original + settled retriggers that are evidence (not void)
    reproducing: tuple[str, ...]  # retriggers that showed a failure line of the original
    void: tuple[str, ...]  # settled retriggers that are no evidence
    unsettled: tuple[str, ...]  # retriggers still running or not parsed yet
    lines: tuple[LineReproduction, ...]
    structured: tuple[StructuredReproduction, ...]


@dataclass(frozen=True)
class Decision:
    """What a policy asks for next, and why."""

    kind: DecisionKind
    reason: str
    evidence: DecisionEvidence
    retriggers: int = 0  # for RETRIGGER: how many more runs to ask for
    verdict: Verdict | None = None  # for VERDICT
    cancel: tuple[str, ...] = ()  # task ids of runs no longer needed (seed-early)
    p_regression: float | None = None  # the policy's P(regression), if it has one
    details: Mapping[str, Any] | None = None  # policy-specific evidence (history)

    @property
    def case_state(self) -> CaseState:
        """The state the case moves to."""
        if self.kind is DecisionKind.RETRIGGER:
            return CaseState.PLANNED
        if self.kind is DecisionKind.WAIT:
            return CaseState.WAITING
        return CaseState(str(self.verdict))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, to store as the case's evidence."""
        ev = self.evidence
        extra: dict[str, Any] = {}
        if self.p_regression is not None or self.details is not None:
            extra = {"p_regression": self.p_regression, "history": dict(self.details or {})}
        return {
            **extra,
            "kind": str(self.kind),
            "verdict": None if self.verdict is None else str(self.verdict),
            "retriggers": self.retriggers,
            "cancel": list(self.cancel),
            "reason": self.reason,
            "policy": ev.policy,
            "rule": ev.rule,
            "runs_wanted": ev.runs_wanted,
            "min_reproductions": ev.min_reproductions,
            "runs_existing": ev.runs_existing,
            "runs_requested_not_visible": ev.runs_requested_not_visible,
            "runs_counted": ev.runs_counted,
            "reproducing": list(ev.reproducing),
            "void": list(ev.void),
            "unsettled": list(ev.unsettled),
            "lines": [
                {"line": r.line, "retriggers": r.retriggers, "task_ids": list(r.task_ids)}
                for r in ev.lines
            ],
            "structured": [
                {
                    "kind": str(r.failure.kind),
                    "test": r.failure.test,
                    "subtest": r.failure.subtest,
                    "status": r.failure.status,
                    "retriggers": r.retriggers,
                    "task_ids": list(r.task_ids),
                }
                for r in ev.structured
            ],
        }


class Policy(Protocol):
    """A verdict rule: `decide` is pure and may be called again on fresher evidence."""

    name: ClassVar[str]
    rule: ClassVar[str]

    def decide(self, evidence: CaseEvidence) -> Decision: ...


class UnknownPolicyError(ValueError):
    """No policy has the given name."""


@dataclass(frozen=True)
class _Tally:
    original_ready: bool
    reproducing: tuple[str, ...]
    void: tuple[str, ...]
    unsettled: tuple[str, ...]
    counted: int
    lines: tuple[LineReproduction, ...]
    structured: tuple[StructuredReproduction, ...]


def _original_ready(original: RunEvidence) -> bool:
    # An original whose log Treeherder could not parse has no lines to compare, ever.
    return original.lines_known or original.log_unparsed


def _tally(evidence: CaseEvidence) -> _Tally:
    original = evidence.original
    wanted = tuple(dict.fromkeys(original.failure_lines if original.lines_known else ()))
    wanted_failures = tuple(dict.fromkeys(original.structured_failures))
    per_line: dict[str, list[str]] = {line: [] for line in wanted}
    per_failure: dict[StructuredFailure, list[str]] = {f: [] for f in wanted_failures}
    reproducing: list[str] = []
    void: list[str] = []
    unsettled: list[str] = []
    counted = 0
    for run in evidence.retriggers:
        if not run.settled:
            unsettled.append(run.task_id)
            continue
        if run.void:
            void.append(run.task_id)
            continue
        counted += 1
        shown = set(run.failure_lines)
        hits = [line for line in wanted if line in shown]
        if hits:
            reproducing.append(run.task_id)
        for line in hits:
            per_line[line].append(run.task_id)
        keys = {f.key for f in run.structured_failures}
        for failure in wanted_failures:
            if failure.key in keys:
                per_failure[failure].append(run.task_id)
    return _Tally(
        original_ready=_original_ready(original),
        reproducing=tuple(reproducing),
        void=tuple(void),
        unsettled=tuple(unsettled),
        counted=counted,
        lines=tuple(LineReproduction(line, tuple(ids)) for line, ids in per_line.items()),
        structured=tuple(StructuredReproduction(f, tuple(ids)) for f, ids in per_failure.items()),
    )


def _evidence(policy: Policy, evidence: CaseEvidence, tally: _Tally) -> DecisionEvidence:
    return DecisionEvidence(
        policy=policy.name,
        rule=policy.rule,
        runs_wanted=evidence.runs_wanted,
        min_reproductions=evidence.min_reproductions,
        runs_existing=1 + len(evidence.retriggers),
        runs_requested_not_visible=evidence.requested_not_visible,
        runs_counted=1 + tally.counted,
        reproducing=tally.reproducing,
        void=tally.void,
        unsettled=tally.unsettled,
        lines=tally.lines,
        structured=tally.structured,
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _plan_or_wait(
    policy: Policy, evidence: CaseEvidence, tally: _Tally, ask: int | None = None
) -> Decision | None:
    """SPEC §3 steps 6-7: ask for missing runs (all, or `ask` of them), then wait for all."""
    facts = _evidence(policy, evidence, tally)
    missing = evidence.runs_missing if ask is None else min(ask, evidence.runs_missing)
    if missing:
        have = evidence.runs_existing_or_requested
        reason = (
            f"{have} of {evidence.runs_wanted} runs exist or are requested: "
            f"asking for {_plural(missing, 'more run')}"
        )
        return Decision(DecisionKind.RETRIGGER, reason, facts, retriggers=missing)
    waits = []
    if not tally.original_ready:
        waits.append("the original's failure lines")
    if tally.unsettled:
        waits.append(_plural(len(tally.unsettled), "retrigger") + " to resolve and be parsed")
    if evidence.requested_not_visible:
        waits.append(_plural(evidence.requested_not_visible, "requested run") + " to appear")
    if waits:
        return Decision(DecisionKind.WAIT, "waiting for " + ", ".join(waits), facts)
    return None


def _verdict(
    policy: Policy, evidence: CaseEvidence, tally: _Tally, why: str, cancel: tuple[str, ...] = ()
) -> Decision:
    found = len(tally.reproducing)
    verdict = Verdict.REGRESSION if found >= evidence.min_reproductions else Verdict.INTERMITTENT
    reason = (
        f"{_plural(found, 'retrigger')} of {tally.counted} showed a failure line of the "
        f"original ({evidence.min_reproductions} needed for a regression){why}"
    )
    return Decision(
        DecisionKind.VERDICT,
        reason,
        _evidence(policy, evidence, tally),
        verdict=verdict,
        cancel=cancel,
    )


POLICIES: dict[str, Policy] = {}


def _register(cls: type[Any]) -> type[Any]:
    POLICIES[cls.name] = cls()
    return cls


@_register
class SeedPolicy:
    """SPEC §3 steps 6-8 exactly: 6 runs, wait for all, regression iff ≥ 2 retriggers reproduce."""

    name: ClassVar[str] = "seed"
    rule: ClassVar[str] = (
        "Make sure runs_wanted runs of the label exist or are requested (original + "
        "retriggers; ask only for the difference); wait until every run is resolved and "
        "its failure lines are known; regression iff at least min_reproductions retriggers "
        "show a failure line of the original (same normalised TEST-UNEXPECTED- line), else "
        "intermittent. Retriggers that ended in exception or with an unparsable log count "
        "as runs but never as reproductions."
    )

    def decide(self, evidence: CaseEvidence) -> Decision:
        tally = _tally(evidence)
        return _plan_or_wait(self, evidence, tally) or _verdict(self, evidence, tally, "")


@_register
class SeedEarlyPolicy:
    """The seed rule, decided as soon as its outcome can no longer change."""

    name: ClassVar[str] = "seed-early"
    staged: ClassVar[bool] = False
    rule: ClassVar[str] = (
        "The seed rule, decided as soon as its outcome is certain: regression once "
        "min_reproductions retriggers have shown a failure line of the original; "
        "intermittent once the retriggers still to come (unsettled, requested, or not yet "
        "asked for up to runs_wanted) cannot bring the count to min_reproductions, or the "
        "original has no failure line. Unresolved retriggers sheriff asked for are then "
        "cancelled. All missing runs are asked for at once, as in seed."
    )

    def decide(self, evidence: CaseEvidence) -> Decision:
        tally = _tally(evidence)
        in_flight = len(tally.unsettled) + evidence.requested_not_visible
        found = len(tally.reproducing)
        if tally.original_ready:
            can_still_come = in_flight + evidence.runs_missing if tally.lines else 0
            if count_decided(found, can_still_come, evidence.min_reproductions):
                why = "" if not can_still_come else f"; {can_still_come} more could not change it"
                return _verdict(self, evidence, tally, why, _cancellable(evidence.retriggers))
        if not self.staged:
            return _plan_or_wait(self, evidence, tally) or _verdict(self, evidence, tally, "")
        # Waves: nothing new while runs are in flight; then just enough runs that, should
        # they all reproduce, the verdict is due.
        wave = 0 if in_flight else evidence.min_reproductions - found
        return _plan_or_wait(self, evidence, tally, wave) or _verdict(self, evidence, tally, "")


@_register
class SeedStagedPolicy(SeedEarlyPolicy):
    """Like seed-early, but retriggers go out in small waves: fewer runs, later verdicts."""

    name: ClassVar[str] = "seed-staged"
    staged: ClassVar[bool] = True
    rule: ClassVar[str] = SeedEarlyPolicy.rule.replace(
        "All missing runs are asked for at once, as in seed.",
        "Retriggers go out in waves: when none is in flight, as many as could still make "
        "the verdict regression (min_reproductions minus those seen), never beyond "
        "runs_wanted.",
    )


def count_decided(found: int, can_still_come: int, needed: int) -> bool:
    """Whether the seed rule's count is settled: `needed` reproductions found, or the
    runs still to come could no longer bring it there."""
    return found >= needed or found + can_still_come < needed


def _cancellable(runs: Iterable[RunEvidence]) -> tuple[str, ...]:
    # Only sheriff's own runs: a person's retriggers are theirs to keep.
    return tuple(r.task_id for r in runs if r.requested_by_sheriff and not r.resolved)


# Policies defined in their own modules (sheriff.model.history), beside the seed family.
ADDED_POLICIES: dict[str, Policy] = {}


def register_policy(policy: Policy) -> Policy:
    """Make `policy` available to `get_policy` under its name."""
    if policy.name in POLICIES:
        raise ValueError(f"policy {policy.name!r} is already registered")
    ADDED_POLICIES[policy.name] = policy
    return policy


def get_policy(name: str) -> Policy:
    """The policy registered under `name` (`seed`, `seed-early`, `seed-staged`, `history`)."""
    try:
        return POLICIES[name] if name in POLICIES else ADDED_POLICIES[name]
    except KeyError:
        known = ", ".join(sorted({*POLICIES, *ADDED_POLICIES}))
        raise UnknownPolicyError(f"unknown triage policy {name!r} (known: {known})") from None


# The history policy lives in its own module and registers itself on import.
from sheriff.model import history as _history  # noqa: E402,F401  (registration)
