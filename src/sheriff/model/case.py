"""A triage case: which failed runs become cases (SPEC §3 steps 1-5), and the states of a case.

A case is one failed original test run. `eligibility` tells, from facts about the run
alone, whether it is a case at all and whether it ends at once (classified, wrong tier,
infra, not eligible) or goes on to the policy (eligible). `CaseState` names the states
the store keeps; `state_after_eligibility` (here) and `Decision.case_state`
(sheriff.model.policy) give the next one.

    >>> run = OriginalRun(task_id="abc", label="test-linux1804-64-qr/opt-xpcshell-1",
    ...     state="failed", job_kind="test", tier=1, task_queue_id="gecko-t/t-linux-large-gcp",
    ...     classification_id=1, errorsummary=ErrorSummaryState.COMPLETE)
    >>> eligibility(run).status
    <EligibilityStatus.ELIGIBLE: 'eligible'>
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

from sheriff.model.errorsummary import parse_errorsummary

__all__ = [
    "AUTOMATIC_CLASSIFICATIONS",
    "CLASSIFICATION_NAMES",
    "DEFAULT_QUEUE_PREFIXES",
    "DEFAULT_TIERS",
    "UNCLASSIFIED_IDS",
    "CaseState",
    "Eligibility",
    "EligibilityStatus",
    "ErrorSummaryState",
    "OriginalRun",
    "eligibility",
    "errorsummary_artifact",
    "is_persons_classification",
    "state_after_eligibility",
]

DEFAULT_QUEUE_PREFIXES: tuple[str, ...] = ("gecko-t/t-linux-",)
# Treeherder failure classifications that are nobody's decision: 1 "not classified"; 6 "new
# failure not classified" (set when the log is parsed, treeherder/etl/artifact.py); 7
# "autoclassified intermittent" (mozci's classification of the push); 8 "intermittent
# needs bug" (set and unset by treeherder/log_parser/intermittents.py as runs come in).
# Any other (2 fixed by commit, 3 expected fail, 4 intermittent, 5 infra) is a person's.
AUTOMATIC_CLASSIFICATIONS = frozenset({1, 6, 7, 8})
UNCLASSIFIED_IDS = AUTOMATIC_CLASSIFICATIONS  # SPEC §3 step 1's "not classified"


# Treeherder's names for its failure classifications (/api/failureclassification/).
CLASSIFICATION_NAMES = {
    1: "not classified",
    2: "fixed by commit",
    3: "expected fail",
    4: "intermittent",
    5: "infra",
    6: "new failure not classified",
    7: "autoclassified intermittent",
    8: "intermittent needs bug",
}


def is_persons_classification(classification_id: int | None) -> bool:
    """Whether a failure classification is a person's decision (2, 3, 4, 5)."""
    return classification_id is not None and classification_id not in AUTOMATIC_CLASSIFICATIONS


DEFAULT_TIERS = frozenset({1, 2})  # SPEC §3 rule 2


class ErrorSummaryState(StrEnum):
    """What is known of a run's errorsummary artifact."""

    UNKNOWN = "unknown"  # artifacts not listed / not read yet
    MISSING = "missing"  # no artifact whose name contains "errorsummary"
    INCOMPLETE = "incomplete"  # see sheriff.model.errorsummary.ErrorSummary.complete
    COMPLETE = "complete"

    @classmethod
    def of(cls, text: str | None) -> ErrorSummaryState:
        """The state of an errorsummary given its text, or None when there is no such artifact."""
        if text is None:
            return cls.MISSING
        return cls.COMPLETE if parse_errorsummary(text).complete else cls.INCOMPLETE


def errorsummary_artifact(names: Iterable[str]) -> str | None:
    """The first artifact whose name contains `errorsummary` (SPEC §3 step 4), if any."""
    return next((name for name in sorted(names) if "errorsummary" in name), None)


class EligibilityStatus(StrEnum):
    """Where SPEC §3 steps 1-5 leave a run."""

    NOT_A_CASE = "not-a-case"  # not a failed test task, or an action task (evidence only)
    UNDETERMINED = "undetermined"  # a fact is not known yet: ask again later
    CLASSIFIED = "classified"
    WRONG_TIER = "wrong-tier"
    INFRA = "infra"
    NOT_ELIGIBLE = "not-eligible"
    ELIGIBLE = "eligible"


@dataclass(frozen=True)
class OriginalRun:
    """The facts about a run that SPEC §3 steps 1-5 look at."""

    task_id: str
    label: str
    state: str  # Taskcluster task state: failed, exception, completed, pending, …
    job_kind: str | None  # extra.treeherder.jobKind
    tier: int | None  # extra.treeherder.tier; None means Treeherder's default, 1
    task_queue_id: str  # taskQueueId, or "<provisionerId>/<workerType>"
    is_action_task: bool = False  # tags.action is set: a retrigger or backfill
    classification_id: int | None = None  # None: Treeherder has not ingested the job yet
    errorsummary: ErrorSummaryState = ErrorSummaryState.UNKNOWN
    retriggerable: bool = True  # tags.retrigger is "true": Gecko's retrigger clones it


@dataclass(frozen=True)
class Eligibility:
    """The outcome of steps 1-5, the step that decided it, and why."""

    status: EligibilityStatus
    reason: str
    step: int | None = None  # SPEC §3 step number, None for "not a case" / "undetermined"

    @property
    def is_case(self) -> bool:
        """True when the run is a case (whatever becomes of it)."""
        return self.status is not EligibilityStatus.NOT_A_CASE

    @property
    def is_final(self) -> bool:
        """True when the case ends here without any retrigger."""
        return self.status not in (
            EligibilityStatus.NOT_A_CASE,
            EligibilityStatus.UNDETERMINED,
            EligibilityStatus.ELIGIBLE,
        )


def eligibility(
    run: OriginalRun,
    queue_prefixes: Iterable[str] = DEFAULT_QUEUE_PREFIXES,
    tiers: Collection[int] = DEFAULT_TIERS,
) -> Eligibility:
    """Apply SPEC §3 steps 1-5, in that order, to a run.

    Runs that are not failed (or exception) test tasks, and action tasks, are not cases.
    A task in state `exception` is a case with verdict infra. A fact still unknown that
    an earlier step needs gives UNDETERMINED; ask again when it is known.
    """
    status = EligibilityStatus
    if run.job_kind != "test":
        return Eligibility(status.NOT_A_CASE, f"jobKind is {run.job_kind!r}, not 'test'")
    if run.state not in ("failed", "exception"):
        return Eligibility(status.NOT_A_CASE, f"task state is {run.state!r}, not failed")
    if run.is_action_task:
        return Eligibility(status.NOT_A_CASE, "an action task (retrigger/backfill): evidence only")
    if run.classification_id is None:
        return Eligibility(status.UNDETERMINED, "Treeherder has not ingested the job yet")
    if is_persons_classification(run.classification_id):
        reason = f"already classified by a person (failure classification {run.classification_id})"
        return Eligibility(status.CLASSIFIED, reason, 1)
    tier = 1 if run.tier is None else run.tier
    if tier not in tiers:
        triaged = " or ".join(str(t) for t in sorted(tiers))
        return Eligibility(status.WRONG_TIER, f"tier {tier} is not {triaged}", 2)
    if run.state == "exception":
        return Eligibility(status.INFRA, "the task ended in exception", 4)
    if run.errorsummary is ErrorSummaryState.UNKNOWN:
        return Eligibility(status.UNDETERMINED, "the errorsummary artifact has not been read yet")
    if run.errorsummary is ErrorSummaryState.MISSING:
        return Eligibility(status.INFRA, "no artifact whose name contains 'errorsummary'", 4)
    if run.errorsummary is ErrorSummaryState.INCOMPLETE:
        return Eligibility(status.INFRA, "the errorsummary is incomplete", 4)
    prefixes = tuple(queue_prefixes)
    if not run.task_queue_id.startswith(prefixes):
        reason = f"queue {run.task_queue_id} is not under {', '.join(prefixes) or 'any prefix'}"
        return Eligibility(status.NOT_ELIGIBLE, reason, 5)
    if not run.retriggerable:
        # Gecko's retrigger refuses such a label and retrigger-multiple reruns the task
        # itself instead of cloning it: no retrigger would ever come.
        reason = 'its label should not be retriggered (no `retrigger: "true"` tag)'
        return Eligibility(status.NOT_ELIGIBLE, reason, 5)
    return Eligibility(status.ELIGIBLE, "a failed tier-1/2 test run with a complete errorsummary")


class CaseState(StrEnum):
    """The states of a case, as the store keeps them."""

    NEW = "new"
    CLASSIFIED = "classified"
    WRONG_TIER = "wrong-tier"
    INFRA = "infra"
    NOT_ELIGIBLE = "not-eligible"
    PLANNED = "planned"  # the policy asked for retriggers
    WAITING = "waiting"  # every run exists or is requested; waiting for results
    REGRESSION = "regression"
    INTERMITTENT = "intermittent"

    @property
    def is_final(self) -> bool:
        """True for a state a case never leaves (SPEC §3 step 9: never recomputed)."""
        return self not in (CaseState.NEW, CaseState.PLANNED, CaseState.WAITING)


_STATE_OF_ELIGIBILITY = {
    EligibilityStatus.UNDETERMINED: CaseState.NEW,
    EligibilityStatus.CLASSIFIED: CaseState.CLASSIFIED,
    EligibilityStatus.WRONG_TIER: CaseState.WRONG_TIER,
    EligibilityStatus.INFRA: CaseState.INFRA,
    EligibilityStatus.NOT_ELIGIBLE: CaseState.NOT_ELIGIBLE,
    # An eligible case stays new until its policy has decided something.
    EligibilityStatus.ELIGIBLE: CaseState.NEW,
}


def state_after_eligibility(result: Eligibility) -> CaseState:
    """The case state an eligibility outcome leads to; a non-case has none (ValueError)."""
    if result.status is EligibilityStatus.NOT_A_CASE:
        raise ValueError(f"not a case: {result.reason}")
    return _STATE_OF_ELIGIBILITY[result.status]
