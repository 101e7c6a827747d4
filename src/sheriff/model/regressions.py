"""Regressions: the cases that are one breakage, grouped (pure; no I/O).

A regression fails many runs: every retrigger, every configuration it breaks, every push
until it is backed out; triage gives each failed original run its own case. Cases that
share a failing test or a normalised failure line on neighbouring pushes are one
regression, and so are two groups whose backfills named the same culprit push (a push
that broke two tests in different chunks is one thing to back out).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sheriff.model.failure_lines import failing_test

# A case joins a regression whose failing pushes end at most this many pushes before (or
# begin at most this many after) its own: an intermittent regression may not show on a
# few pushes in a row, while the same test failing a day later is news.
NEIGHBOUR_PUSHES = 12
# Clean pushes in a row after the last failing one that say it stopped failing.
CLEAN_PUSHES_TO_STOP = 2

CONFIRMED, CULPRIT, STOPPED = "confirmed", "culprit", "stopped"
STATUSES = (CONFIRMED, CULPRIT, STOPPED)


@dataclass(frozen=True)
class CaseFacts:
    """What grouping needs of one regression case."""

    case_id: int
    push_order: int  # the push's position in the repository's history
    tests: frozenset[str]
    lines: frozenset[str]
    configuration: str
    label: str = ""
    # Test → the push order where it began failing (`model.history.first_failures`: no
    # failure on ten pushes known before it), for those of its tests that did.
    began: Mapping[str, int] = field(default_factory=dict)


def suite_of(label: str) -> str:
    """A label without its platform and build type: `test-linux1804-64/opt-mochitest-
    plain-3` → `mochitest-plain-3`. A line that names no test (a crash or timeout line) is
    the same failure only in one suite chunk, on whatever platform: every timeout of every
    test shows the same `Last test finished` line, and two of them in one suite but other
    chunks are other tests. (With dynamic chunking one test's timeouts move between chunks
    and may open a search per chunk: each names the same push, and the records merge.)"""
    rest = label.split("/", 1)
    return rest[1].split("-", 1)[-1] if len(rest) == 2 else label


def names_a_test(item: str) -> bool:
    """A test path, or a line naming one (`Last test finished` or `automation.py` in the
    test field is no test: every timeout of every test shows it)."""
    fields = [f.strip() for f in item.split("|")]
    return "/" in (fields[1] if len(fields) > 1 else fields[0])


def tests_failed(lines: Iterable[str]) -> set[str]:
    """The tests a failed run's lines name (`TEST-UNEXPECTED-…` lines naming a test path)."""
    return {t for t in map(failing_test, lines) if t and names_a_test(t)}


@dataclass
class Group:
    """A regression as grouping sees it."""

    id: int
    tests: set[str]
    lines: set[str]
    first_push: int
    last_push: int
    stopped_at: int | None = None  # push order where it stopped failing, once known
    culprit_at: int | None = None  # push order of the culprit its search named, once known
    # Push orders where its tests began failing, as far as the runs read show.
    onsets: frozenset[int] = frozenset()
    case_ids: list[int] = field(default_factory=list)
    configurations: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)

    def shared(self, case: CaseFacts) -> int:
        """Tests and lines the case shares with this regression. A line that names no test
        counts only in one of the regression's suite chunks: every timeout shows the same
        `Last test finished | application timed out` line."""
        suites = {suite_of(label) for label in self.labels}
        same_suite = not case.label or not suites or suite_of(case.label) in suites
        both = (self.tests & case.tests) | (self.lines & case.lines)
        return sum(1 for item in both if same_suite or names_a_test(item))

    def admits(self, case: CaseFacts, neighbours: int = NEIGHBOUR_PUSHES) -> bool:
        """Whether `case` is this regression showing again."""
        if not self.shared(case):
            return False
        if self.stopped_at is not None and case.push_order >= self.stopped_at:
            return False  # failing again after it stopped: a new regression
        return self.first_push - neighbours <= case.push_order <= self.last_push + neighbours

    def began_with(self, case: CaseFacts) -> set[str]:
        """The case's tests that began failing on the push this regression landed with: its
        culprit once named, else a push where its own tests began failing too."""
        landed = {self.culprit_at} if self.culprit_at is not None else self.onsets
        return {test for test, order in case.began.items() if order in landed}

    def landed_with(self, case: CaseFacts) -> bool:
        """Whether the case's tests began failing with this open regression, on one of its
        configurations: the case is on the very push where it first failed, or its tests
        began failing with it (`began_with`)."""
        if self.stopped_at is not None or case.configuration not in self.configurations:
            return False
        return case.push_order == self.first_push or bool(self.began_with(case))

    def grown(self, case: CaseFacts) -> tuple[set[str], set[str]]:
        """The tests and lines the regression holds once `case` joins. A case of its first
        push (or its first case) adds all its other tests and lines; a later case only
        those of its tests that began failing with it (`began_with`): a later run failing
        this regression's test beside another one is two regressions in one run (or a
        flake beside it), and taking the other test in would pull every case of a second
        regression, neighbouring or much later, into this one's search."""
        if case.push_order == self.first_push:
            return self.tests | case.tests, self.lines | case.lines
        new = self.began_with(case)
        lines = {line for line in case.lines if failing_test(line) in new}
        return self.tests | new, self.lines | lines

    def add(self, case: CaseFacts) -> None:
        self.tests, self.lines = self.grown(case)
        if case.label:
            self.labels.add(case.label)
        self.first_push = min(self.first_push, case.push_order)
        self.last_push = max(self.last_push, case.push_order)
        self.configurations.add(case.configuration)
        if case.case_id not in self.case_ids:
            self.case_ids.append(case.case_id)


def match(
    case: CaseFacts, groups: Iterable[Group], neighbours: int = NEIGHBOUR_PUSHES
) -> Group | None:
    """The regression `case` belongs to: of those that admit it, the one sharing most
    tests and lines, the oldest on a tie; None when it starts a new one.

    A case no regression admits by its tests or lines joins the oldest open one its tests
    began failing with, on one of its configurations (`Group.landed_with`): on the very
    push where that one first failed, or with tests that began failing on its culprit
    push (or, before its search named one, where its own tests began failing). The
    backout of that push is the one thing to do (a push that breaks tests in several
    chunks), and one search serves them all: a regression of sixteen tests failing 40 %
    of runs otherwise opened a search per test (world 20261228-5: 14 searches, one of
    them naming the push after the true one).
    """
    groups = list(groups)
    best: tuple[int, int] | None = None
    chosen = None
    for group in groups:
        if not group.admits(case, neighbours):
            continue
        key = (group.shared(case), -group.id)
        if best is None or key > best:
            best, chosen = key, group
    if chosen is not None:
        return chosen
    landed = [g for g in groups if g.landed_with(case)]
    return min(landed, key=lambda g: g.id) if landed else None


def group_cases(cases: Sequence[CaseFacts], neighbours: int = NEIGHBOUR_PUSHES) -> list[Group]:
    """Group cases from scratch, oldest push first (what the store does one case at a time)."""
    groups: list[Group] = []
    for case in sorted(cases, key=lambda c: (c.push_order, c.case_id)):
        found = match(case, groups, neighbours)
        if found is None:
            found = Group(len(groups) + 1, set(), set(), case.push_order, case.push_order)
            groups.append(found)
        found.add(case)
    return groups


def clean_runs_to_stop(fail_rate: float, doubt: float = 0.01, looks: int = 1) -> int:
    """Clean runs in a row that a regression failing at `fail_rate` shows by chance with
    probability below `doubt`: how many say it stopped.

    `looks` is how many places the streak was looked for (the later pushes with runs):
    a streak that is rare at one place turns up somewhere along many pushes, so the doubt
    is shared among them (Bonferroni). The rate comes from the backfill, which saw the
    regression through cases called regressions because their retriggers reproduced: it
    runs high (0.8 for a regression failing 42 % of runs), and with one look a never
    fixed regression was "stopped" by the first lucky streak: 11 of 29 stops of true
    regressions on world seed 20261220 came while it still failed, 9 of 26 with the
    looks counted (docs/load.md)."""
    rate = min(max(fail_rate, 0.05), 1.0)
    if rate >= 1.0:
        return 1
    return max(1, math.ceil(math.log(doubt / max(1, looks)) / math.log(1.0 - rate)))


def stopped_failing(
    last_failing: int, later: Sequence[tuple[int, int, int]], clean_runs_needed: int = 1
) -> int | None:
    """The push order where a regression stopped failing, or None while it may not have.

    `later` holds (push order, clean runs, failing runs) of the regression's labels on its
    configurations for pushes after `last_failing`, in any order (a push counts clean runs
    only when every configuration ran clean). It stopped at the first of at least
    `CLEAN_PUSHES_TO_STOP` pushes in a row with clean runs and no failing one that hold
    `clean_runs_needed` clean runs between them.
    """
    streak: list[tuple[int, int]] = []
    for order, clean, failing in sorted(p for p in later if p[0] > last_failing):
        if failing:
            streak = []
        elif clean:
            streak.append((order, clean))
            enough = sum(c for _, c in streak) >= clean_runs_needed
            if len(streak) >= CLEAN_PUSHES_TO_STOP and enough:
                return streak[0][0]
    return None


def merged_stop(ends: Iterable[tuple[int, int | None]]) -> int | None:
    """Where regressions merged into one stopped failing: each gives (last failing push
    order, stop push order or None while open). The merged one failed up to the latest of
    their last pushes, so it stopped only where the one (or every one) failing there
    stopped; an earlier record's stop is no stop at all once a later record, failing past
    it, joins it by its culprit. Kept as it was, such a stop said "this regression ended"
    while it still failed: the history then read its pushes as explained and a flaky
    test's next failures as a new regression (world 20261227-13: three more false
    regressions of one test, at pushes 24 and 25, after a record "stopped" at push 16
    took records opened at pushes 20 and 24 in by their culprit)."""
    ends = list(ends)
    last = max(order for order, _ in ends)
    stops = [stop for order, stop in ends if order == last]
    if any(stop is None for stop in stops):
        return None
    return max(stop for stop in stops if stop is not None)


def merge_target(culprits: dict[int, str | None]) -> dict[int, int]:
    """Regressions to merge because their backfills named the same culprit push: each
    regression id that goes away → the oldest regression with that culprit."""
    oldest: dict[str, int] = {}
    for regression_id in sorted(culprits):
        revision = culprits[regression_id]
        if revision is not None:
            oldest.setdefault(revision, regression_id)
    return {
        rid: oldest[rev] for rid, rev in culprits.items() if rev is not None and oldest[rev] != rid
    }
