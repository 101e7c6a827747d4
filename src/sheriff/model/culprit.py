"""Flake-aware culprit search, pure: which push broke the test, from noisy runs per push.

A backfill window holds pushes oldest first, the last the one where the regression was
seen. Each push has runs that reproduced the failure and runs that did not. Under the
hypothesis "push c is the culprit", pushes before c fail only through a flake of the
test (rate b ~ Beta, small) and pushes from c on at the regression's rate q ~ Beta(1, 1)
(the retriggers on the regression's own push are runs like any other); under "no
culprit" every push fails at one rate, that of a test known to fail (the failure seen
was a flake too). The rates are integrated out (beta-binomial over the pooled runs), so
two clean runs of a 50 % regression are evidence, not a verdict.

The search names push c once P(c) >= `confidence` and c reproduced at least twice; when
c's parent reproduced too, only after the parent has had `PARENT_ROUNDS` rounds of runs
(naming c says the parent's failures were flakes, which a few runs cannot tell from an
unlucky regression; many runs can, and the model weighs them); says
"no culprit found" once P(no culprit) >= `confidence` or its budget of runs is spent;
asks to look further back when the mass sits on the oldest push; runs the regression's
own push when it holds the most mass with fewer runs than its parent; and otherwise runs
the push that splits the remaining mass in two (the way flake-aware culprit finding does),
with enough runs that a clean round would be telling.

    >>> search = CulpritSearch(fail_rate=1.0)
    >>> runs = [(0, 1), (0, 2), (1, 0), (2, 0)]  # (reproduced, clean) per push
    >>> search.posterior(runs).culprit[2] > 0.8
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sheriff.model.backfill import MAX_RUNS_PER_PUSH

# A test's chance to fail through a flake, before the culprit: Beta(a, b), mean ~6 %.
# Beta(0.5, 15) (mean 3 %) named a wrong push for 2.0 % of drawn windows with flakes up to
# 20 % around the regression, this one for 1.25 % (tests/model/test_culprit.py's draws).
FLAKE_PRIOR = (0.5, 8.0)
# Prior weight of "the window holds no culprit" (the failure seen was a flake), and the
# rate of that flake: a test that just failed, so anything up to often (mean 20 %).
NONE_PRIOR = 0.1
NONE_FLAKE_PRIOR = (0.5, 2.0)
# The regression's failure rate: Beta(1, 1), anything from rare to always.
REGRESSION_PRIOR = (1.0, 1.0)
# Rounds of runs the culprit's parent gets, when it reproduced too, before the culprit is
# named; the search once gave up on any parent that reproduced, and so on every
# regression in a flaky test (a 5 % flake in 20 runs of the parent).
PARENT_ROUNDS = 4
# Prior weight of a push another search named the culprit of (`CulpritSearch.likely`), in
# pushes. On windows drawn as in tests/model/test_culprit.py, when it is the culprit: 81 %
# of intermittent regressions named right instead of 74 %, 11.2 runs instead of 13.0; when
# it is the push after the culprit (two regressions on neighbouring pushes), 1.45 % named
# wrong instead of 0.85 %. A weight of 10 gave 87 % right, but 5.7 % wrong next door.
LIKELY_WEIGHT = 3.0


@dataclass(frozen=True)
class Posterior:
    """P(culprit = push i) per window index, and P(no culprit in the window)."""

    culprit: tuple[float, ...]
    none: float

    def best(self) -> tuple[int, float]:
        index = max(range(len(self.culprit)), key=lambda i: self.culprit[i])
        return index, self.culprit[index]


@dataclass(frozen=True)
class Step:
    """What the search needs next: exactly one field is set."""

    culprit: int | None = None  # window index of the culprit
    no_culprit: bool = False
    extend: bool = False  # the mass sits on the oldest push: look further back
    test: int | None = None  # window index to run
    times: int = 0
    why: str = ""


@dataclass(frozen=True)
class CulpritSearch:
    """The search's model and thresholds; `fail_rate` is the regression's estimated rate."""

    fail_rate: float
    confidence: float = 0.97
    none_prior: float = NONE_PRIOR
    # Runs one search may ask for in all: an intermittent regression failing one run in
    # ten cannot be placed for less than dozens, and then "no culprit found" is the answer.
    budget: int = 24
    # Reproductions the named push needs: a single one may be a flake of the test on the
    # push before the culprit, which the model alone would take for the culprit.
    confirmations: int = 2
    # Window indices of pushes that other searches named the culprit of another failure: a
    # push that broke one test often broke several (one regression in twenty tests opens
    # a search per task), so each weighs `LIKELY_WEIGHT` pushes in the prior.
    likely: frozenset[int] = frozenset()

    def posterior(self, runs: Sequence[tuple[int, int]]) -> Posterior:
        """P(culprit = i) given (reproduced, clean) runs per push, oldest first."""
        count = len(runs)
        # Flat over the regression's rate: the retriggers on the regression's own push are
        # in `runs`, so they inform it as any other runs do; a point estimate from them
        # made the model overconfident when five retriggers happened to be lucky.
        reg = REGRESSION_PRIOR
        # Pooled counts before and from each change point.
        logs = []
        for c in range(count):
            before = _pool(runs[:c])
            after = _pool(runs[c:])
            logs.append(_beta_binomial(*before, FLAKE_PRIOR) + _beta_binomial(*after, reg))
        everything = _pool(runs)
        none = _beta_binomial(*everything, NONE_FLAKE_PRIOR)
        # Uniform over the culprit's push but for the likely ones, with `none_prior` on "no
        # culprit".
        prior = [LIKELY_WEIGHT if c in self.likely else 1.0 for c in range(count)]
        total_prior = sum(prior)
        weights = [
            math.log((1 - self.none_prior) * prior[c] / total_prior) + logs[c] for c in range(count)
        ]
        weights.append(math.log(self.none_prior) + none)
        top = max(weights)
        exp = [math.exp(w - top) for w in weights]
        total = sum(exp)
        return Posterior(tuple(e / total for e in exp[:-1]), exp[-1] / total)

    def runs_for_a_round(self) -> int:
        """Runs on one push so that a clean round would be telling: P(all clean | broken)
        below a third, at most Gecko's eight."""
        q = min(max(self.fail_rate, 0.05), 0.99)
        return max(1, min(MAX_RUNS_PER_PUSH, math.ceil(math.log(1 / 3) / math.log(1 - q))))

    def next_step(
        self,
        runs: Sequence[tuple[int, int]],
        *,
        untestable: frozenset[int] = frozenset(),
        waiting: frozenset[int] = frozenset(),
        spent: Sequence[int] = (),
        max_runs_per_push: int = MAX_RUNS_PER_PUSH * 2,
    ) -> Step:
        """The next step given the runs so far; `spent` counts runs already asked per push,
        `waiting` the pushes whose asked runs have not all finished.

        A push that waits for runs and has not reproduced yet may turn the posterior either
        way: nothing is decided until they are in. One that has reproduced is already on
        the culprit's side, so the search goes on around it, and may ask it again (each
        run counts; asked again while a round runs, a low-rate regression is sampled in
        parallel rather than one round an hour), but a spent budget ends the search only
        once every run it paid for is counted."""
        post = self.posterior(runs)
        best, p = post.best()
        if post.none >= self.confidence:
            return Step(no_culprit=True, why=f"P(no culprit) = {post.none:.3f}: flakes alone")
        wait = Step(why="waiting for runs")
        if any(not runs[i][0] for i in waiting):
            return wait
        used = sum(spent)
        if p >= self.confidence:
            if best == 0:
                return Step(extend=True, why=f"P(oldest push) = {p:.3f}: look further back")
            parent = best - 1
            round_ = self.runs_for_a_round()
            if (
                runs[parent][0]
                and sum(runs[parent]) < PARENT_ROUNDS * round_
                and parent not in untestable
                and used < self.budget
            ):
                # The push before it reproduced too: naming this one says those were
                # flakes, which only more runs there can tell from an unlucky regression.
                return Step(
                    test=parent,
                    times=round_,
                    why=f"P(culprit) = {p:.3f}, but its parent reproduced: running it again",
                )
            if runs[best][0] >= self.confirmations or best == len(runs) - 1:
                return Step(culprit=best, why=f"P(culprit) = {p:.3f}")
            if best not in untestable and used < self.budget:
                return Step(test=best, times=1, why=f"P(culprit) = {p:.3f}; confirming it")
        if used >= self.budget:
            if waiting:
                return wait
            return Step(
                no_culprit=True, why=f"{used} runs spent and P(best) = {p:.3f} only: no culprit"
            )

        def runnable(i: int) -> bool:
            return i not in untestable and (not spent or spent[i] < max_runs_per_push)

        # The push that splits the mass in two: testing it says on which side the culprit is.
        candidates = [i for i in range(len(runs) - 1) if runnable(i)]
        if not candidates:
            if waiting:
                return wait
            if post.culprit[0] >= max(post.culprit[1:], default=0.0):
                return Step(extend=True, why="no push left to run; the oldest is likeliest")
            return Step(no_culprit=True, why=f"no push left to run; P(best) = {p:.3f}")
        last = len(runs) - 1
        if (
            best == last > 0
            and runnable(last)
            and last not in waiting
            and sum(runs[last]) < sum(runs[last - 1])
        ):
            # The regression's own push holds the most mass but fewer runs than its parent:
            # splitting would run the parent again and again, while what tells a flaky
            # test's parent from its culprit is how often the culprit fails, known so far
            # from a few retriggers only.
            return Step(
                test=last,
                times=self.runs_for_a_round(),
                why=f"P(own push) = {p:.3f}, with fewer runs than its parent: running it",
            )
        # P(c <= j) per push: testing push j tells "c <= j" (it reproduces) from "c > j".
        half = 0.5 * (1 - post.none)
        below = [sum(post.culprit[: j + 1]) for j in range(len(runs))]
        target = min(candidates, key=lambda j: (abs(below[j] - half), -j))
        return Step(test=target, times=self.runs_for_a_round(), why=f"P(best) = {p:.3f}")


def _pool(runs: Sequence[tuple[int, int]]) -> tuple[int, int]:
    return sum(r for r, _ in runs), sum(r + c for r, c in runs)


def _beta_binomial(hits: int, total: int, prior: tuple[float, float]) -> float:
    a, b = prior
    return _log_beta(a + hits, b + total - hits) - _log_beta(a, b)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
