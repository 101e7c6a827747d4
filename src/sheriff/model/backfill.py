"""Culprit search, pure: per-push outcomes → culprit push, bisect planning, runs per push.

A backfill looks at a window of pushes, oldest first, ending with the push where the
regression was seen. Each push gets an outcome from the runs that ran the failing
manifests there: `failing` as soon as one run shows a failure line of the regression,
`clean` once enough runs passed without one (enough for the observed failure rate, so an
intermittent regression is not taken for absent), else `unknown`. The culprit is the
earliest failing push whose parent push is clean: the push right after the newest clean
one, when it fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

# Gecko's backfill-task accepts at most 8 runs per push in one request.
MAX_RUNS_PER_PUSH = 8
# A line is said to have begun failing later than another push (a search's culprit, or
# the push of the search a case joined) when the runs since that push that passed without
# it would all have missed it with at most this chance, had it failed from there at its
# rate (`began_after`; `backfill.reports._began_later`).
ONSET_MISSED = 0.05


class Outcome(StrEnum):
    """What the runs on one push say about the regression."""

    FAILING = "failing"
    CLEAN = "clean"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class PushRuns:
    """The finished runs on one push that ran the failing manifests."""

    reproduced: int = 0  # showed a failure line of the regression
    clean: int = 0  # finished without one

    @property
    def finished(self) -> int:
        return self.reproduced + self.clean


def runs_needed(
    fail_rate: float, *, miss_probability: float = 0.05, max_runs: int = MAX_RUNS_PER_PUSH
) -> int:
    """Runs on a push so that P(no reproduction | regression at `fail_rate`) < `miss_probability`.

    (1 - r)^n < p  ⇔  n > log p / log(1 - r); a permanent failure needs one run.
    """
    if not 0.0 < miss_probability < 1.0:
        raise ValueError(f"miss_probability must be in (0, 1), not {miss_probability}")
    if fail_rate >= 1.0:
        return 1
    if fail_rate <= 0.0:
        return max_runs
    n = math.floor(math.log(miss_probability) / math.log(1.0 - fail_rate)) + 1
    return max(1, min(max_runs, n))


def estimate_fail_rate(reproduced: int, runs: int, *, floor: float = 0.2) -> float:
    """The regression's failure rate from the retriggers on its own push, never below `floor`.

    Laplace's rule of succession, (k + 1) / (n + 2): five reproductions out of five say
    0.86, not 1, since a regression failing 80 % of the time does that one time in three,
    and taking it as permanent would call a push clean on a single passing run. Without
    retriggers (a verdict from history alone, a manual request) that gives 1/2: nothing
    says the failure is permanent, and an intermittent regression bisected as if it were
    would be called clean on its first passing run.
    """
    return max(floor, min(1.0, (reproduced + 1) / (runs + 2)))


def outcome(runs: PushRuns, needed: int) -> Outcome:
    """A push's outcome given its finished runs and the runs needed to call it clean."""
    if runs.reproduced > 0:
        return Outcome.FAILING
    if runs.clean >= needed:
        return Outcome.CLEAN
    return Outcome.UNKNOWN


def find_culprit(outcomes: Sequence[Outcome]) -> int | None:
    """Index of the culprit in `outcomes` (oldest first): the push after the newest clean one.

    None while that push is not known to fail, or when no push in the window is clean.
    """
    newest_clean = _newest_clean(outcomes)
    if newest_clean is None or newest_clean + 1 >= len(outcomes):
        return None
    return newest_clean + 1 if outcomes[newest_clean + 1] is Outcome.FAILING else None


def _newest_clean(outcomes: Sequence[Outcome]) -> int | None:
    # Only clean pushes below a failing one bound the search; the window ends failing.
    last_failing = max((i for i, o in enumerate(outcomes) if o is Outcome.FAILING), default=None)
    if last_failing is None:
        return None
    return max((i for i in range(last_failing) if outcomes[i] is Outcome.CLEAN), default=None)


class Step(StrEnum):
    """What a bisection needs next."""

    TEST = "test"  # run the pushes in `BisectPlan.pushes`
    EXTEND = "extend"  # even the oldest push fails: look further back
    FOUND = "found"  # `BisectPlan.culprit` is the culprit
    STUCK = "stuck"  # every push between clean and failing is untestable


@dataclass(frozen=True)
class BisectPlan:
    """The next step of a bisection over a window of pushes."""

    step: Step
    pushes: tuple[int, ...] = ()  # window indices to run
    culprit: int | None = None


def plan_bisect(
    outcomes: Sequence[Outcome], untestable: frozenset[int] = frozenset()
) -> BisectPlan:
    """The next push to test so the suspect range halves each round.

    `outcomes` covers the window oldest first and ends with the failing push. Indices in
    `untestable` (the label did not run there, or its runs never came) are skipped. With no
    clean push known yet the oldest push is tested first, to bound the range.
    """
    if not outcomes or outcomes[-1] is not Outcome.FAILING:
        raise ValueError("a bisection window ends with the failing push")
    culprit = find_culprit(outcomes)
    if culprit is not None:
        return BisectPlan(Step.FOUND, culprit=culprit)
    good = _newest_clean(outcomes)
    bad = min(
        i for i, o in enumerate(outcomes) if o is Outcome.FAILING and (good is None or i > good)
    )
    low = good
    if good is None:
        oldest = next((i for i in range(bad) if i not in untestable), None)
        if oldest is None:
            return BisectPlan(Step.EXTEND)
        if outcomes[oldest] is Outcome.UNKNOWN:
            # Bound the range first: a failure that is already there on the oldest push is
            # older than the window (or an intermittent), and nothing else is worth running.
            return BisectPlan(Step.TEST, pushes=(oldest,))
        low = oldest
    middle = _closest_to_middle(low, bad, outcomes, untestable)
    if middle is None:
        return BisectPlan(Step.STUCK)
    return BisectPlan(Step.TEST, pushes=(middle,))


def _closest_to_middle(
    low: int, high: int, outcomes: Sequence[Outcome], skip: set[int] | frozenset[int]
) -> int | None:
    candidates = [
        i for i in range(low + 1, high) if i not in skip and outcomes[i] is Outcome.UNKNOWN
    ]
    if not candidates:
        return None
    middle = (low + high) / 2
    return min(candidates, key=lambda i: (abs(i - middle), i))


def began_after(
    runs_by_line: Mapping[str, Sequence[PushRuns]],
    culprit: int,
    missed: float = ONSET_MISSED,
) -> list[str]:
    """The lines of a search that began failing after the push at `culprit`, from each
    line's own runs per window push (oldest first; the last push is the search's own,
    where the original run showed every line).

    A run that failed two regressions' tests, broken by neighbouring pushes, starts one
    search for both; it names the older push, where one of its lines reproduced, and is
    wrong for the other. A line first shown after `culprit` whose runs from `culprit` up
    to that push passed so often that, failing at its rate since, all of them missing it
    is at most `missed` likely, is not that culprit's (on seed 20261232, five of main's
    seven wrong culprits were such reports; worlds 12 and 18 are right with this)."""
    later = []
    for line, runs in runs_by_line.items():
        first = next((i for i, r in enumerate(runs) if r.reproduced), None)
        if first is None or first <= culprit:
            continue
        clean = sum(r.clean for r in runs[culprit:first])
        shown = sum(r.reproduced for r in runs[first:])
        finished = sum(r.finished for r in runs[first:])
        if (1 - shown / finished) ** clean <= missed:
            later.append(line)
    return sorted(later)


def other_onset_odds(
    clean: Sequence[int], culprit: int, first: int, missed: float, landing_rate: float
) -> float:
    """Odds that a test began failing on another push than `culprit`, a push known to
    have broken the tests it first failed beside, from its own runs per window push
    (`clean`: runs that passed it, oldest first; `first`: where it first failed, or the
    window's length when it did not fail there).

    Began on push j, it fails at its rate on every run from j on and never before, so
    each clean run from j up to `first` missed it (`missed`: 1 - its rate). Against the
    culprit, a push j before it must have had its clean runs from j up to the culprit all
    miss it, and a push after it explains the clean runs from the culprit up to j, which
    the culprit must call misses. Each other push is as likely a priori as any push here
    is to break tests (`landing_rate`), the culprit certain."""
    if first < culprit:
        return math.inf  # it failed before the culprit
    odds = 0.0
    shown = 0
    for j in range(culprit - 1, -1, -1):
        shown += clean[j]
        odds += missed**shown
    shown = 0
    for j in range(culprit + 1, min(first, len(clean) - 1) + 1):
        shown += clean[j - 1]
        odds += missed**-shown if missed > 0 or not shown else math.inf
    return landing_rate * odds
