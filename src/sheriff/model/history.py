"""The history-aware triage policy: P(regression) from the store's history and small waves.

For a case, two hypotheses: R (a regression active on the push makes the test fail with
some rate q) and I (the test is intermittent and fails with its flake rate f). The prior
odds are the fleet's share of regressions among decided cases; a binary fact (an open
intermittent bug for every line) multiplies them by its likelihood ratio; the retriggers
(k of n reproduced) and the test's runs on earlier pushes and other configurations add
a beta-binomial likelihood ratio, with q ~ Beta and f ~ Beta, where a regression landed
on some push and made the runs fail from there on. Every number is fitted from earlier
decided cases (labelled by their verdicts; the fact against the probability the runs alone
gave), starting from weak defaults, never from scenario files:

    >>> from sheriff.model.history import CaseHistory, PastCase, fit_priors
    >>> priors = fit_priors([PastCase(p=0.9, k=2, n=2), PastCase(p=0.05, k=0, n=2)])
    >>> round(priors.base_rate, 2)
    0.49
    >>> history = CaseHistory(features={"open_bug": True}, priors=priors)
    >>> 0.0 < history.priors.posterior(history.features, k=0, n=1) < 0.5
    True

The policy asks for retriggers in waves just large enough that the verdict could be due
once they are back, stops as soon as P(regression) is above `upper` or below `lower`, and
never exceeds `runs_wanted` runs; there it is a regression only if P >= `at_cap`.
See docs/history-policy.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from sheriff.model.errorsummary import FailureKind
from sheriff.model.failure_lines import failing_test, unaccounted_crashes
from sheriff.model.policy import (
    CaseEvidence,
    Decision,
    DecisionKind,
    Verdict,
    _cancellable,
    _evidence,
    _plural,
    _tally,
    count_decided,
    register_policy,
)

__all__ = [
    "FEATURES",
    "CaseHistory",
    "EarlierRuns",
    "HistoryPolicy",
    "LineHistory",
    "PastCase",
    "Priors",
    "RateDistribution",
    "fit_priors",
    "regression_lines",
    "same_configuration",
]

# The binary history facts the model weighs, in the order they are reported.
FEATURES = (
    "open_bug",  # every failure line has an open intermittent bug in the bug suggestions
)

# Weak defaults, worth a few cases each, so that early pushes decide on retriggers alone.
_DEFAULT_BASE = (1.0, 1.0)  # Beta pseudo-counts of regressions and intermittents
_DEFAULT_FLAKE = (1.0, 10.0)  # pseudo reproductions, pseudo runs: a flake repeats ~10%
_DEFAULT_REGRESSION = (2.4, 3.0)  # a regression repeats ~80%
# Beta concentrations: a flake's repeat rate is small for nearly every flaky test, a
# regression's anywhere from "sometimes" (an intermittent regression) to always.
_FLAKE_SPREAD = 20.0
# The flake concentration is _FLAKE_SPREAD only once the fit has seen _FLAKE_SPREAD_SEEN
# intermittent verdicts; with none it is _FLAKE_SPREAD_UNSEEN, rising linearly between
# (`_flake_spread`). On a repository's first pushes nothing yet says how often its flakes
# fail, and a prior sure that flakes fail about a run in ten called a test flaking half
# its runs a regression on push after push (world 20261219-15: 6 of its 9 false
# regressions on its first five pushes, where the fleet's flakes fail 27 % of runs); its
# own intermittent verdicts are what teach the model otherwise.
_FLAKE_SPREAD_UNSEEN = 5.0
_FLAKE_SPREAD_SEEN = 10.0
# The flake repeat rate is fitted from the policy's own intermittent verdicts, and the
# flakes that repeated most are the ones it called regressions, left out of that fit: the
# fit is biased low, and a low flake rate turns the next flake that repeats into a
# regression too (on a drawn world whose flakes repeat 27 % of the time, with a base-rate
# default worth ten cases at 0.1, it fell to 0.03 and the fitted base rate rose to 0.86; on
# another, held at 0.1 instead of 0.08, 35 false regressions became 5). It never goes
# below the default's mean.
_FLAKE_FLOOR = _DEFAULT_FLAKE[0] / _DEFAULT_FLAKE[1]
# A test that does not fail through a flake of its own (before a regression, or on the
# configurations a flake does not touch) is one of many, nearly all never flaky: flaky
# with this chance, else never failing.
_FLAKY_SHARE = 0.1
_REGRESSION_SPREAD = 2.0
# The regression repeat rate is fitted from the policy's own regression verdicts, and the
# regressions that repeated least are the ones it called intermittent, left out of that
# fit: biased high, and a high rate turns the next regression that passes a retrigger
# into an intermittent too (a play of world 20261212-23 fitted a mean of 0.95; two clean
# retriggers then made a regression failing 28 % of runs an intermittent at P = 0.001). It
# never goes above the default's mean, as the flake rate never goes below its own.
_REGRESSION_CEILING = _DEFAULT_REGRESSION[0] / _DEFAULT_REGRESSION[1]
_FEATURE_SMOOTHING = 0.5  # Jeffreys
# Naive Bayes is overconfident on correlated facts: each fact, and all of them together,
# may move the odds at most this much; retriggers always have the last word.
_MAX_FEATURE_LOG_LR = math.log(5.0)
_MAX_HISTORY_LOG_LR = math.log(20.0)
# A regression that breaks several tests breaks them all on the push where it landed, and
# a sheriff reads "many tests failing for the first time on one push" as that push's doing;
# unrelated flakes begin failing on pushes of their own. So what the other tests show is
# LANDING_WEIGHT times likelier under R with the change point at an earlier push where at
# least LANDING_TESTS of them began failing (`EarlierRuns.onsets`: each clean on
# `ONSET_CLEAN_PUSHES` pushes before) than under I or another change point, where it is
# as likely either way. The ratio is P(three others began | the test's regression landed
# there) over P(three others began | it did not): about 0.5 (a regressed test is more
# often than not one of several its regression broke) over about 1/60 (on development
# seed 20261228's seed-rule plays, 18 of 1,148 pushes had three tests begin failing, 13
# of them a regression's). It multiplies that change point's likelihood and takes nothing
# from the others, so another regression's push weighed up never lowers P. Without it a
# regression failing a fifth of its runs 30 pushes back spreads its change point over
# every earlier push, and its cases read as flakes (world 20261229-10: 73 cases of an
# 11-test regression missed).
LANDING_TESTS = 3
LANDING_WEIGHT = 30.0
# A test begins failing on a push only after this many pushes known before it: on a
# repository's first pushes every flaky test fails for the first time.
ONSET_CLEAN_PUSHES = 10


@dataclass(frozen=True)
class PastCase:
    """An earlier decided case: its P(regression), retriggers (k of n reproduced), facts.

    `p_retriggers` is its posterior from the base rate and retriggers only: the history
    facts are fitted against it so that a fact never confirms itself.
    """

    p: float
    k: int
    n: int
    features: Mapping[str, bool] = field(default_factory=dict)
    p_retriggers: float | None = None
    regression: bool | None = None  # its verdict, when known
    # Decided before the cap because no outcome of the runs left could make a regression
    # (`HistoryPolicy._out_of_reach`): its tally stopped where the fit's own belief did.
    out_of_reach: bool = False


@dataclass(frozen=True)
class EarlierRuns:
    """The test's runs on one push: on the case's configuration and on the others, and
    how many of each showed a failure line of the original."""

    ago: int  # pushes before the case's; 0 = the case's push (other configurations only)
    runs: int = 0
    shown: int = 0
    other_runs: int = 0
    other_shown: int = 0
    # Other tests that began failing since the test's previous entry, up to this push:
    # each had run clean on `ONSET_CLEAN_PUSHES` earlier pushes and failed for the first
    # time here (`Priors.retrigger_log_lr` weighs a change point there up).
    onsets: int = 0

    def to_list(self) -> list[int]:
        return [self.ago, self.runs, self.shown, self.other_runs, self.other_shown, self.onsets]


def first_failures(failing: Sequence[Iterable[str]]) -> list[frozenset[str]]:
    """Per push (oldest first, as `failing`: the tests that failed on each), the tests that
    failed there for the first time with at least `ONSET_CLEAN_PUSHES` pushes before it."""
    seen: set[str] = set()
    out = []
    for i, tests in enumerate(failing):
        new = frozenset(tests) - seen
        seen |= new
        out.append(new if i >= ONSET_CLEAN_PUSHES else frozenset())
    return out


def began_failing(failing: Sequence[Iterable[str]]) -> dict[str, int]:
    """Test → where it began failing (an index into `failing`, read as `first_failures`
    reads it), for the tests that did."""
    return {test: i for i, new in enumerate(first_failures(failing)) for test in new}


def same_configuration(runs: Sequence[bool]) -> tuple[EarlierRuns, ...]:
    """One run per earlier push on the case's configuration, oldest first (True: it showed
    the line), as `EarlierRuns`."""
    return tuple(
        EarlierRuns(ago=len(runs) - i, runs=1, shown=int(shown)) for i, shown in enumerate(runs)
    )


@dataclass(frozen=True)
class RateDistribution:
    """Beta(a, b) over the chance that a retrigger reproduces the original's failure."""

    a: float
    b: float

    @property
    def mean(self) -> float:
        return self.a / (self.a + self.b)

    def log_likelihood(self, k: int, n: int) -> float:
        """log P(k of n reproduce), binomial coefficient left out (it cancels)."""
        return _beta_binomial(self.a, self.b, k, n)


@dataclass(frozen=True)
class Priors:
    """What the fleet's history says: base rate, retrigger rates, the facts' likelihood ratios."""

    base_rate: float = 0.5
    flake: RateDistribution = RateDistribution(2.0, 18.0)
    regression: RateDistribution = RateDistribution(1.6, 0.4)
    feature_log_lr: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    cases: int = 0  # decided cases fitted from

    def prior_log_odds(self, features: Mapping[str, bool]) -> float:
        """Log odds of regression before any retrigger."""
        shift = 0.0
        for name in FEATURES:
            if name in features and name in self.feature_log_lr:
                shift += self.feature_log_lr[name][0 if features[name] else 1]
        shift = max(-_MAX_HISTORY_LOG_LR, min(_MAX_HISTORY_LOG_LR, shift))
        return _logit(self.base_rate) + shift

    def retrigger_log_lr(self, k: int, n: int, earlier: Sequence[EarlierRuns] = ()) -> float:
        """Log likelihood ratio R:I of the retriggers and the test's earlier runs.

        `earlier` holds, one entry per push, the test's runs on earlier pushes and on the
        other configurations of this push. Under I the test is flaky: on every
        configuration at one rate f, or on this one only, the others failing like any test
        (`_quiet`); half the weight each. Under R a regression landed on some push c (half
        the weight on this push, the other half spread over the earlier pushes with runs
        that have runs before them): runs before c fail like any test, runs from c on at
        the regression's rate, on every configuration or on this one only (half the weight
        each). So a test clean until lately and failing since looks like a regression;
        failures scattered over clean runs, here or on other configurations, like a flake.
        Either hypothesis may also hold an earlier regression that came and went
        (`_past_window`), so that its runs do not speak for the test's flake rate. An
        earlier push where several other tests began failing weighs more as the change
        point (`LANDING_WEIGHT`).
        """
        pushes = sorted(earlier, key=lambda e: e.ago)  # newest first
        same, other = _totals(k, n, pushes)
        intermittent = self._flaky(same, other)
        # Runs from the change point on ("after"), for each change point, newest first.
        after_same, after_other = [k, n], [0, 0]
        wide: list[float] = []
        alone: list[float] = []
        weights: list[float] = []
        for entry in pushes:
            after_same[0] += entry.shown
            after_same[1] += entry.runs
            after_other[0] += entry.other_shown
            after_other[1] += entry.other_runs
            if entry.ago == 0 or not (entry.runs or entry.other_runs):
                continue
            if after_same[1] + after_other[1] >= same[1] + other[1]:
                # A change point with no run before it: nothing shows that the test ever
                # passed, so nothing shows a change. A test failing often since the first
                # push sheriff knows is what a flake with a high rate does; as a regression
                # "landed before the window" it was called one on push after push.
                continue
            wide.append(self._change_point(same, other, after_same, after_other))
            alone.append(self._change_point(same, other, after_same, None))
            weights.append(LANDING_WEIGHT if entry.onsets >= LANDING_TESTS else 1.0)
        # c = this push: only the retriggers and this push's other configurations are after.
        here_other = _here_other(pushes)
        now_wide = self._change_point(same, other, [k, n], here_other)
        now_alone = self._change_point(same, other, [k, n], None)
        regression = _log_half_sum(
            _log_half_sum(now_wide, _log_mean_exp(wide, weights)) if wide else now_wide,
            _log_half_sum(now_alone, _log_mean_exp(alone, weights)) if alone else now_alone,
        )
        windows = _past_windows(tuple(pushes))
        if windows.spans:
            was_i, was_r = self._past_window(windows, same, other, (k, n), here_other)
            intermittent = _log_mix(intermittent, windows.mean(was_i), _PAST_WINDOW_SHARE)
            regression = _log_mix(regression, windows.mean(was_r), _PAST_WINDOW_SHARE)
        return regression - intermittent

    def _flaky(self, same: tuple[int, int], other: tuple[int, int]) -> float:
        """log P(runs | I) without a past regression: flaky on every configuration at one
        rate, or on this one only, the others failing like any test."""
        return _log_half_sum(
            self.flake.log_likelihood(same[0] + other[0], same[1] + other[1]),
            self.flake.log_likelihood(*same) + self._quiet(*other),
        )

    def past_regression(self, k: int, n: int, earlier: Sequence[EarlierRuns] = ()) -> Span | None:
        """The span of earlier pushes where a regression of the test, since fixed, most
        likely failed it, when under I that story tells the runs better than the test's
        flakes alone; None otherwise. The evidence names it (`_decision`)."""
        pushes = sorted(earlier, key=lambda e: e.ago)
        windows = _past_windows(tuple(pushes))
        if not windows.spans:
            return None
        same, other = _totals(k, n, pushes)
        was_i, _ = self._past_window(windows, same, other, (k, n), _here_other(pushes))
        told = math.log(_PAST_WINDOW_SHARE) + windows.mean(was_i)
        if told <= math.log(1.0 - _PAST_WINDOW_SHARE) + self._flaky(same, other):
            return None
        return windows.spans[max(range(len(was_i)), key=was_i.__getitem__)]

    def _past_window(
        self,
        windows: PastWindows,
        same: tuple[int, int],
        other: tuple[int, int],
        now: tuple[int, int],
        here_other: Sequence[int],
    ) -> tuple[list[float], list[float]]:
        """log P(runs | I, span), log P(runs | R, span) for every span of earlier pushes
        that a regression, since fixed, may have broken (`PastWindows.mean` averages them).

        Under I the test flakes at f outside the span (on every configuration, or on this
        one only with the others failing like any test), and inside the span a regression
        made it fail at its own rate (on every configuration, or on this one only; a flake
        of this configuration alone goes with a span of this configuration alone: R has no
        counterpart for a regression still failing this configuration beside a wider one
        that came and went, and I alone explained that pair, calling 7 of world
        20261217-13's regression cases intermittent). Under R the span is the same, the
        runs between it and this push fail like any test, and a new regression landed on
        this push (its other configurations too, or not). So a test that failed every run
        for a while, was fixed and now flakes again is judged on its runs since the fix,
        not as a test "failing since" the old regression.
        """
        was_i: list[float] = []
        was_r: list[float] = []
        flake, regression, quiet = self.flake, self.regression, self._quiet
        # The same for every span: the other configurations failing like any test, and
        # under R the new regression's runs (the retriggers, and, wide, this push's other
        # configurations).
        quiet_other = quiet(*other)
        now_wide = regression.log_likelihood(now[0] + here_other[0], now[1] + here_other[1])
        now_alone = regression.log_likelihood(*now)
        for w in windows.spans:
            inside = w.shown + w.other_shown, w.runs + w.other_runs
            out = (same[0] - w.shown, same[1] - w.runs)
            out_other = (other[0] - w.other_shown, other[1] - w.other_runs)
            wide = regression.log_likelihood(*inside)
            alone = regression.log_likelihood(w.shown, w.runs)
            was_i.append(
                _log_mean_exp(
                    [
                        flake.log_likelihood(out[0] + out_other[0], out[1] + out_other[1]) + wide,
                        flake.log_likelihood(out[0] + other[0], out[1] + other[1]) + alone,
                        flake.log_likelihood(*out) + quiet_other + alone,
                    ]
                )
            )
            # Under R everything outside the span and the new regression's runs fails like
            # any test.
            before = (out[0] - now[0], out[1] - now[1])
            rest_other = (out_other[0] - here_other[0], out_other[1] - here_other[1])
            was_r.append(
                _log_mean_exp(
                    [
                        quiet(before[0] + rest_other[0], before[1] + rest_other[1])
                        + wide
                        + now_wide,
                        quiet(before[0] + out_other[0], before[1] + out_other[1])
                        + wide
                        + now_alone,
                        quiet(
                            before[0] + other[0] - here_other[0],
                            before[1] + other[1] - here_other[1],
                        )
                        + alone
                        + now_wide,
                        quiet(before[0] + other[0], before[1] + other[1]) + alone + now_alone,
                    ]
                )
            )
        return was_i, was_r

    def _quiet(self, hits: int, runs: int) -> float:
        """log P(hits of runs) for a test with no reason to fail: never, or flaky by chance."""
        return _quiet(self.flake.a, self.flake.b, hits, runs)

    def _change_point(
        self,
        same: tuple[int, int],
        other: tuple[int, int],
        after_same: Sequence[int],
        after_other: Sequence[int] | None,
    ) -> float:
        """log P(runs | R, change point): `after_other` None = this configuration only."""
        if after_other is None:
            quiet = (same[0] - after_same[0] + other[0], same[1] - after_same[1] + other[1])
            broken = (after_same[0], after_same[1])
        else:
            quiet = (
                same[0] - after_same[0] + other[0] - after_other[0],
                same[1] - after_same[1] + other[1] - after_other[1],
            )
            broken = (after_same[0] + after_other[0], after_same[1] + after_other[1])
        return self._quiet(*quiet) + self.regression.log_likelihood(*broken)

    def posterior(
        self,
        features: Mapping[str, bool],
        *,
        k: int,
        n: int,
        earlier: Sequence[EarlierRuns] = (),
    ) -> float:
        """P(regression | history facts, earlier runs, k of n retriggers reproduced).

        Monotone in reproductions by construction: with the rates fitted from past cases a
        flake's predicted repeat rate can exceed a regression's (a world of high-rate flakes
        and rare intermittent regressions), and then one more reproduction would lower P,
        which no sheriff could follow. So P(k, n) is the highest the model gives to the same
        runs with some of the reproductions taken away: a reproduction never lowers it.
        """
        prior = self.prior_log_odds(features)
        best = max(self.retrigger_log_lr(k - j, n - j, earlier) for j in range(0, min(k, n) + 1))
        return _sigmoid(prior + best)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "base_rate": round(self.base_rate, 4),
            "flake_rate": {"a": round(self.flake.a, 3), "b": round(self.flake.b, 3)},
            "regression_rate": {
                "a": round(self.regression.a, 3),
                "b": round(self.regression.b, 3),
            },
            "feature_lr": {
                name: {"true": round(math.exp(t), 3), "false": round(math.exp(f), 3)}
                for name, (t, f) in self.feature_log_lr.items()
            },
        }


@dataclass(frozen=True)
class LineHistory:
    """What the store knows of one failure line of the original: its test's runs on
    earlier pushes and this push's other configurations, and whether it has an open
    intermittent bug."""

    earlier: tuple[EarlierRuns, ...] = ()
    open_bug: bool = False


@dataclass(frozen=True)
class CaseHistory:
    """The prior evidence of one case, gathered from the store, and the fitted priors."""

    features: Mapping[str, bool] = field(default_factory=dict)
    priors: Priors = Priors()
    facts: Mapping[str, Any] = field(default_factory=dict)  # counts behind the features
    # The test's runs on earlier pushes (any configuration) and on this push's other
    # configurations, one entry per push.
    earlier: tuple[EarlierRuns, ...] = ()
    # Per failure line of the original, when the store gathered them: each line is judged
    # on its own retriggers and its own test's past (`HistoryPolicy.decide`).
    lines: Mapping[str, LineHistory] = field(default_factory=dict)
    # Per crash between tests of the original (a `PROCESS-CRASH` line no TEST-UNEXPECTED
    # line accounts for): its suite chunk's runs on earlier pushes, by its signature.
    crashes: Mapping[str, tuple[EarlierRuns, ...]] = field(default_factory=dict)

    def judged_by(self, line: str) -> CaseHistory:
        """This history as the one line `line` tells it."""
        own = self.lines[line]
        facts = {**self.facts, "line": line}
        return replace(
            self,
            features={**self.features, "open_bug": own.open_bug},
            facts=facts,
            earlier=own.earlier,
        )


def fit_priors(past: Iterable[PastCase]) -> Priors:
    """Fit the priors from earlier decided cases, labelled by their verdicts (by their
    P(regression) where the verdict is not known)."""
    cases = [c for c in past if 0.0 <= c.p <= 1.0 and 0 <= c.k <= c.n]
    # A verdict its own retriggers contradict is the model's opinion, not evidence: fitted
    # from such verdicts, the rates confirm themselves (a world where it called 4-of-5
    # cases intermittent taught it that flakes repeat often and regressions are rare,
    # and it called more of them intermittent). Those count half for the base rate and
    # not at all for the repeat rates. (A past case without a known verdict is weighed
    # by its P, as before.)
    # A verdict given on history alone (fewer than two retriggers) teaches nothing either:
    # it is what the fit already believed.
    # A verdict cut short because no outcome of the runs left could change it teaches
    # no repeat rate: its tally stopped on the fit's own belief, most often on a flaky
    # test's reproductions (3 of 3 where the cap would have said 4 of 5). For the base
    # rate it counts by its P(regression): the verdict was forced, not sure. Counted as
    # a plain intermittent verdict (where the cap's 4 of 5 had counted half a
    # regression), it brought world 20261222-8's base rate from 0.12 to 0.03 (0.11 of
    # its cases are regressions), and 9 missed regression cases became 38.
    every = cases
    cut = [c for c in every if c.out_of_reach]
    cases = [c for c in every if not c.out_of_reach]
    agreed = [c for c in cases if c.regression is None or (c.n >= 2 and not contested(c))]
    disputed = sum(1 for c in cases if c.regression is not None and contested(c))
    reg = sum(_verdict(c) for c in agreed) + 0.5 * disputed + sum(c.p for c in cut)
    base = (reg + _DEFAULT_BASE[0]) / (len(agreed) + disputed + len(cut) + sum(_DEFAULT_BASE))
    as_flakes = [(1.0 - _verdict(c), c.k, c.n) for c in agreed]
    flake = _fit_rate(
        as_flakes,
        _DEFAULT_FLAKE,
        _flake_spread(sum(weight for weight, _, _ in as_flakes)),
        floor=_FLAKE_FLOOR,
    )
    regression = _fit_rate(
        [(_verdict(c), c.k, c.n) for c in agreed],
        _DEFAULT_REGRESSION,
        _REGRESSION_SPREAD,
        ceiling=_REGRESSION_CEILING,
    )
    lrs: dict[str, tuple[float, float]] = {}
    for name in FEATURES:
        seen = [c for c in every if name in c.features]
        w_r = sum(_label(c) for c in seen)
        w_i = len(seen) - w_r
        on_r = sum(_label(c) for c in seen if c.features[name])
        on_i = sum(1.0 - _label(c) for c in seen if c.features[name])
        s = _FEATURE_SMOOTHING
        p_r = (on_r + s) / (w_r + 2 * s)
        p_i = (on_i + s) / (w_i + 2 * s)
        lrs[name] = (_clamp_lr(math.log(p_r / p_i)), _clamp_lr(math.log((1 - p_r) / (1 - p_i))))
    return Priors(
        base_rate=base,
        flake=flake,
        regression=regression,
        feature_log_lr=lrs,
        cases=len(every),
    )


def _flake_spread(intermittents: float) -> float:
    """The flake distribution's concentration after this many intermittent verdicts: wide
    while the fleet's flakes are unseen, `_FLAKE_SPREAD` once `_FLAKE_SPREAD_SEEN` are in."""
    seen = min(1.0, intermittents / _FLAKE_SPREAD_SEEN)
    return _FLAKE_SPREAD_UNSEEN + (_FLAKE_SPREAD - _FLAKE_SPREAD_UNSEEN) * seen


# A regression verdict with none of at least this many retriggers reproduced, or an
# intermittent one with nearly all reproduced (`mostly_reproduced`), goes against what
# the retriggers say. (Two or three of five is what a flaky test failing often does: those
# verdicts teach the flake rate.)
_CONTESTED_REPRODUCTIONS = 2


def contested(case: PastCase) -> bool:
    """Whether the case's verdict goes against its own retriggers (see `fit_priors`)."""
    if case.regression is None:
        return False
    if case.regression:
        return case.k == 0 and case.n >= _CONTESTED_REPRODUCTIONS
    return mostly_reproduced(case.k, case.n)


def _verdict(case: PastCase) -> float:
    """How much a past case counts as a regression for the base rate and the repeat rates:
    its verdict when known. Weighted by P(regression) instead, the undecided cases spent at
    the cap (P about 0.5-0.8, few reproductions) dragged the regressions' repeat rate down
    toward the flakes' until the two could no longer be told apart."""
    return case.p if case.regression is None else float(case.regression)


def _label(case: PastCase) -> float:
    return case.p if case.p_retriggers is None else case.p_retriggers


def _fit_rate(
    weighted: list[tuple[float, int, int]],
    default: tuple[float, float],
    concentration: float,
    floor: float = 0.005,
    ceiling: float = 0.995,
) -> RateDistribution:
    """Beta with the pooled reproduction rate (plus a weak default) as its mean.

    The concentration is a fixed modelling choice: fitted from soft-labelled cases it
    collapsed whenever a few cases were mislabelled (an intermittent regression counted
    as a flake widens the flake distribution until nothing is ever a regression again).
    """
    k0, n0 = default
    hits = sum(w * k for w, k, _ in weighted) + k0
    runs = sum(w * n for w, _, n in weighted) + n0
    mean = min(max(hits / runs, floor), ceiling)
    return RateDistribution(mean * concentration, (1 - mean) * concentration)


@dataclass(frozen=True)
class HistoryPolicy:
    """Bayesian: P(regression) from history and retriggers, asked for in small waves."""

    name: ClassVar[str] = "history"
    needs_history: ClassVar[bool] = True
    rule: ClassVar[str] = (
        "P(regression) from the fleet's base rate, an open intermittent bug for every line, "
        "the test's runs on earlier pushes and other configurations (a regression landed on "
        "some push, likelier one where several other tests began failing, and fails them "
        "from there on, or a flake fails them all along; under "
        "either, an earlier regression may have come and gone) and the "
        "retriggers that reproduced a failure line of the original (beta-binomial, rates "
        "fitted from earlier cases). Regression once P >= upper, intermittent once P <= "
        "lower; retriggers go out in waves just large enough that the verdict could be due; "
        "an intermittent verdict needs min_clean_runs retriggers that did not reproduce "
        "(none when every line has an open intermittent bug and showed on an earlier push "
        "and one retrigger that reproduced would leave P <= waiver_ceiling, "
        "min_clean_runs_with_bug otherwise), and never comes once "
        "min_reproductions retriggers reproduced; before runs_wanted runs a regression "
        "verdict needs a retrigger that reproduced; at runs_wanted runs a regression needs "
        "P >= at_cap (a false regression costs four times a missed one); a case the cap "
        "would call intermittent with P >= extend_from takes more runs, up to runs_most, "
        "decided on the way only by upper and lower; where those runs stop, a regression "
        "needs P >= upper. "
        "A PROCESS-CRASH "
        "line that no TEST-UNEXPECTED line of the original accounts for (a crash between "
        "tests) is judged by the seed rule's count of retriggers with the same normalised "
        "crash line, staged as in seed-staged (waves as large as the test lines' waves, "
        "if any), or as a regression once one retrigger reproduced it and P(regression) "
        "on its signature's past in its suite chunk's runs is >= upper, or with every run "
        "in, once that P is >= at_cap and the crash reproduced or showed on an earlier "
        "push: alone it decides "
        "the case, beside test lines whenever they do not make "
        "it a regression; an unparsed original's errorsummary tests are counted alike; "
        "an original without any failure line is intermittent. A case that "
        "no outcome of its runs left could make a regression is intermittent at once (its "
        "tally then teaches the fitted rates nothing)."
    )
    upper: float = 0.98
    lower: float = 0.05
    # With every run spent and P between the bounds, a regression verdict needs P at least
    # this: a false regression costs a sheriff's attention and a backfill, about four
    # times what a missed one costs (the next pushes fail again and reopen it), so the
    # verdict that costs less on average is regression only from 4 / (4 + 1) = 0.8.
    at_cap: float = 0.8
    # An intermittent verdict needs at least this many retriggers that did not reproduce:
    # history alone cannot tell a flaky test from an intermittent regression that has been
    # failing now and then since it landed, and only retriggers catch those.
    min_clean_runs: int = 2
    # ... and this many when every line has an open intermittent bug but sheriff never saw
    # the line fail on an earlier push (with such failures too, none: `_clean_needed`).
    # Bug suggestions are a search of bug summaries by file name; on their word alone a
    # regression in a test with a bug, which may keep the bug's failure line, would be
    # called intermittent without a run.
    min_clean_runs_with_bug: int = 1
    # ... and that waiver holds only while one retrigger that reproduced would leave
    # P(regression) at most this (`_clean_needed`): twice `lower`, so that what the
    # retrigger could show would not make the case worth a second look.
    waiver_ceiling: float = 0.1
    # A case still between the bounds at `runs_wanted` runs, which the cap would call
    # intermittent with P(regression) at least this, may take more runs, up to the
    # evidence's `runs_most`: five retriggers tell a clean test failing half its runs
    # since this push (3 of 6 runs) from a flake only roughly, ten tell it well. Below
    # this the verdict is all but settled and the runs would buy nothing.
    extend_from: float = 0.1

    def __post_init__(self) -> None:
        if self.min_clean_runs < 0 or self.min_clean_runs_with_bug < 0:
            raise ValueError(
                "min_clean_runs is negative: "
                f"{self.min_clean_runs}, {self.min_clean_runs_with_bug} with an open bug"
            )
        if not 0.0 < self.lower < 0.5 < self.upper < 1.0:
            raise ValueError(
                "thresholds must satisfy 0 < lower < 0.5 < upper < 1, "
                f"not {self.lower}, {self.upper}"
            )
        if not self.lower < self.at_cap <= self.upper:
            raise ValueError(
                f"the threshold at the cap must satisfy lower < at_cap <= upper, not {self.at_cap}"
            )
        if not 0.0 <= self.waiver_ceiling <= 1.0:
            raise ValueError(f"waiver_ceiling must be between 0 and 1, not {self.waiver_ceiling}")
        if not 0.0 < self.extend_from <= 1.0:
            # 0 would take every case past the cap; 1, none (as runs_most = runs_wanted).
            raise ValueError(f"extend_from must be in (0, 1], not {self.extend_from}")

    def decide(self, evidence: CaseEvidence) -> Decision:
        tally = _tally(evidence)
        history = evidence.history if isinstance(evidence.history, CaseHistory) else CaseHistory()
        facts = _evidence(self, evidence, tally)
        k, n = len(tally.reproducing), tally.counted
        in_flight = len(tally.unsettled) + evidence.requested_not_visible
        if not tally.original_ready:
            return self._decision(
                DecisionKind.WAIT, "waiting for the original's failure lines", facts, history, k, n
            )
        # Treeherder could not parse the original's log (it happens): its errorsummary still
        # says which tests failed (SPEC §3's second source), and a retrigger whose failure
        # lines name one reproduces. Without lines there is no history to weigh: the seed
        # rule's count decides, staged (`_by_seed_count`).
        failed_tests = _errorsummary_tests(evidence) if not tally.lines else frozenset()
        if failed_tests:
            return self._by_errorsummary(evidence, failed_tests, facts, history, n, in_flight)
        # A PROCESS-CRASH line that none of the original's TEST-UNEXPECTED lines accounts
        # for (a crash between tests names no test): the same crash signature in the
        # retriggers reproduces it, and the seed rule's count on those lines decides.
        # Alone, it decides the case, staged.
        crashes = _unaccounted_crashes(evidence, tally)
        if crashes and not tally.lines:
            return self._by_crash_lines(evidence, crashes, facts, history, n, in_flight)
        if not tally.lines:
            p = 0.0
            return self._decision(
                DecisionKind.VERDICT,
                "the original has no failure line to reproduce",
                facts,
                history,
                k,
                n,
                verdict=Verdict.INTERMITTENT,
                p=p,
                cancel=_cancellable(evidence.retriggers),
            )
        decision = self._by_lines(evidence, tally, history, facts, k, n, in_flight)
        if crashes and decision.verdict is not Verdict.REGRESSION:
            # Beside test lines, such a crash is still to judge when they do not make the
            # case a regression: a crash regression fails in runs where other tests flake,
            # and judged on the flaky test's line alone, 9 cases of a crash regression
            # failing 68 % of runs were called intermittent (world 20261220-19; 31 cases
            # of 7 worlds of that seed).
            return self._by_crash_lines(
                evidence, crashes, facts, history, n, in_flight, beside=decision
            )
        return decision

    def _by_lines(
        self,
        evidence: CaseEvidence,
        tally: Any,
        history: CaseHistory,
        facts: Any,
        k: int,
        n: int,
        in_flight: int,
    ) -> Decision:
        """The case as its TEST-UNEXPECTED lines tell it: the model's P(regression)."""
        priors = history.priors
        # Every line is judged on its own retriggers and its own test's past, and the line
        # likeliest to be a regression speaks for the case: a regressed test failing beside
        # a flaky one (often, in a world of flaky tests) is the regression's case, and the
        # flaky test's long record of failures says nothing about the regressed one.
        any_line, every_line_known = k, bool(history.features.get("open_bug"))
        case_history = history
        history, k = self._speaking_line(history, tally, n)
        earlier = history.earlier
        p = priors.posterior(history.features, k=k, n=n, earlier=earlier)
        said = f" ({_short(history.facts['line'])})" if "line" in history.facts else ""
        why = f"P(regression) = {p:.3f} after {k} of {_plural(n, 'retrigger')} reproduced{said}"
        # P after one more retrigger that reproduced: the open-bug waiver weighs it, and the
        # reason quotes it when the waiver is withheld (computed once, and only if asked).
        waiver_features = {**history.features, "open_bug": every_line_known}
        reproduced = functools.cache(
            lambda: priors.posterior(waiver_features, k=k + 1, n=n + 1, earlier=earlier)
        )
        clean_needed = self._clean_needed(every_line_known, earlier, reproduced)
        # No intermittent verdict before the cap once the seed rule's reproductions are in:
        # such a case spends every run, and then the model weighs them.
        clean_needed_met = n - k >= min(clean_needed, evidence.runs_wanted - 1)
        enough = any_line < evidence.min_reproductions and clean_needed_met
        # No regression verdict before the cap until a retrigger reproduced the failure on
        # this push: history says where to look, a reproduction confirms (and a regression
        # verdict sets a backfill going). A failure on two configurations at once, clean
        # before, looks like a regression to history alone, yet flaky tests do that too.
        # At the cap the model weighs everything: a test failing on most pushes since one
        # stays a regression even when five retriggers were lucky.
        confirmed = k >= 1
        # At the cap, without a reproduction here, only a line that showed on earlier pushes
        # too makes a regression: a failure of several configurations of one push, clean
        # before and not reproduced, is what a flaky test with a high rate does.
        shown_before = failed_before(history.earlier)[0] > 0
        if (p >= self.upper and confirmed) or (p <= self.lower and enough):
            verdict = Verdict.REGRESSION if p >= self.upper else Verdict.INTERMITTENT
            bound = f">= {self.upper}" if p >= self.upper else f"<= {self.lower}"
            return self._decision(
                DecisionKind.VERDICT,
                f"{why} ({bound})",
                facts,
                history,
                k,
                n,
                verdict=verdict,
                p=p,
                cancel=_cancellable(evidence.retriggers),
            )
        if in_flight:
            return self._decision(
                DecisionKind.WAIT,
                f"{why}; waiting for {_plural(in_flight, 'run')} in flight",
                facts,
                history,
                k,
                n,
                p=p,
            )
        room = evidence.runs_missing
        past_cap = ""
        if room == 0:
            # Every run spent and still between the bounds: the verdict that costs less on
            # average (see `at_cap`). The seed rule would call every test that flakes twice
            # in five runs a regression; the model weighs those two reproductions against
            # the test's history. Only a case the cap would call intermittent goes past it;
            # there only `upper` or `lower` decide, and where the runs stop, `upper` again
            # (`_at_cap`).
            past = evidence.runs_most is not None and (
                evidence.runs_existing_or_requested > evidence.runs_wanted
            )
            regression, bound = self._at_cap(p, k, n, history.earlier, past_cap=past)
            room = evidence.runs_beyond if not regression and p >= self.extend_from else 0
            if room == 0:
                used = evidence.runs_wanted
                if evidence.runs_most is not None:  # past the cap, the runs it went to
                    used = min(max(used, evidence.runs_existing_or_requested), evidence.runs_most)
                verdict = Verdict.REGRESSION if regression else Verdict.INTERMITTENT
                return self._decision(
                    DecisionKind.VERDICT,
                    f"{why}; all {used} runs used, {bound}",
                    facts,
                    history,
                    k,
                    n,
                    verdict=verdict,
                    p=p,
                )
            if past:
                past_cap = (
                    f"; past the cap of {evidence.runs_wanted} runs, up to "
                    f"{evidence.runs_most} while P >= {self.extend_from}"
                )
            else:
                past_cap = (
                    f"; all {evidence.runs_wanted} runs used, {bound}, yet P >= "
                    f"{self.extend_from}: up to {evidence.runs_most} runs"
                )
        # Before the cap the runs past it count too: P may yet rise to `extend_from`.
        beyond = evidence.runs_beyond
        before_cap = 0 if past_cap else room
        if self._out_of_reach(case_history, tally, n, before_cap, beyond):
            left = _plural(room, "run")
            if beyond and not past_cap:
                left += f" left before the cap (and up to {beyond} past it)"
            else:
                left += " left"
            said = f"{why}; however the {left} came out, no line would "
            said += f"reach {self.upper} on the way or make a regression at the cap"
            if mostly_reproduced(k + room, n + room):
                # The best tally would be "4 or more of 5": say why even that is a flake's.
                best = _repeats_its_past(k + room, n + room, earlier)[1]
                said += f" (even if all reproduced: {best})"
            return self._decision(
                DecisionKind.VERDICT,
                said,
                facts,
                history,
                k,
                n,
                verdict=Verdict.INTERMITTENT,
                p=p,
                extra={"out_of_reach": True},
            )
        wave = self.wave(priors, history.features, k, n, room, evidence.min_reproductions, earlier)
        withheld = ""
        if p <= self.lower and every_line_known and shown_before and not clean_needed_met:
            # Low already, yet the open bug and earlier failures did not settle it: say why.
            withheld = (
                f" (the open bug and the line's earlier failures would decide it without "
                f"retriggers, but one that reproduced would make P {reproduced():.2f}, "
                f"above {self.waiver_ceiling})"
            )
        return self._decision(
            DecisionKind.RETRIGGER,
            f"{why}{past_cap}; asking for {_plural(wave, 'more run')}{withheld}",
            facts,
            history,
            k,
            n,
            p=p,
            retriggers=wave,
        )

    def _at_cap(
        self, p: float, k: int, n: int, earlier: Sequence[EarlierRuns], past_cap: bool = False
    ) -> tuple[bool, str]:
        """(regression?, why in words) at the cap, P(regression) `p` after k reproductions
        of n: regression from `at_cap` on, once reproduced here or shown on an earlier
        push (a failure of several configurations of one push, clean before and not
        reproduced, is what a flaky test with a high rate does). A failure that nearly
        every retrigger reproduced is a regression unless the test already failed like
        that before this push (a flaky test that fails often): the model alone must not
        wave it through. Past the cap (`past_cap`: where the runs past it stop) the model
        makes a regression only from `upper` on: the case went on because the cap would
        have called it intermittent, and the runs past the cap are there to make it sure
        (at `at_cap` there, flakes of a world's first pushes, 2 of 10 reproduced at
        P 0.92, were regressions: development world 20261223-29)."""
        threshold, where = (self.upper, "past the cap") if past_cap else (self.at_cap, "at the cap")
        by_model = p >= threshold and _reproduced_or_shown(k, earlier)
        bound = f"{'>=' if p >= threshold else '<'} {threshold} {where}"
        if p >= threshold and not by_model:
            bound += ", but not reproduced and never shown on an earlier push"
        if by_model or not mostly_reproduced(k, n):
            return by_model, bound
        regression, said = _repeats_its_past(k, n, earlier)
        return regression, f"{bound}; {said}"

    def _crash_regression(self, crash_past: CrashPast, k: int, left: int) -> str:
        """Why a crash between tests short of the seed rule's count is a regression by its
        chunk's past (empty: it is not): once reproduced here and P >= upper, as a test
        line is; with every run in (`left` 0), P >= `at_cap` once reproduced here or shown
        on an earlier push, as `_at_cap` asks of a test line at the cap (the count alone
        called a crash regression failing a quarter of the runs intermittent at 1 of 5)."""
        p, said = crash_past.p, crash_past.said
        if k >= 1 and p >= self.upper:
            return f"P(regression) = {p:.3f} with {said} (>= {self.upper})"
        if not left and p >= self.at_cap and _reproduced_or_shown(k, crash_past.earlier):
            return (
                f"all runs used, P(regression) = {p:.3f} with {said} (>= {self.at_cap} at the cap)"
            )
        return ""

    def _out_of_reach(
        self, history: CaseHistory, tally: Any, n: int, room: int, beyond: int = 0
    ) -> bool:
        """Whether no outcome of the `room` runs left before the cap, and the `beyond` runs
        past it, could make the case a regression, for any of its lines: the runs would be
        spent only to reach the verdict the cap gives anyway.

        Every way the runs left could come out is weighed: no tally on the way reaches
        `upper` with a reproduction, and no tally where the runs stop makes a regression
        there (`_at_cap`): at the cap, unless P is still at least `extend_from` there and
        runs past it are left; past the cap, wherever P falls below `extend_from`, and at
        the last run. (P never falls when a retrigger reproduces, but with
        fitted rates P at a given number of runs need not rise with the reproductions
        among them, so the best tally is not always "every one reproduced".) That is
        typically a test that flakes often, where the cap's five retriggers said nothing
        the first ones had not (seed 20261222: 19 % of cases went to the cap, 2.19
        retriggers per case, over the target of 2.0)."""
        told = _judged_lines(history, tally) or {None: (history, len(tally.reproducing))}
        last = room + beyond
        for line_history, k in told.values():
            priors, features = line_history.priors, line_history.features
            earlier = line_history.earlier
            going = {0}  # reproductions among the runs so far, on the ways still undecided
            for more in range(1, last + 1):
                after = set()
                for shown_more in sorted({s + d for s in going for d in (0, 1)}):
                    tally_k, tally_n = k + shown_more, n + more
                    p = priors.posterior(features, k=tally_k, n=tally_n, earlier=earlier)
                    if p >= self.upper and tally_k >= 1:
                        return False
                    # The runs stop at the last one, or past the cap once P falls below
                    # `extend_from`; the cap's rule also speaks at the cap itself.
                    stops = more == last or (more >= room and p < self.extend_from)
                    if (more == room or stops) and self._at_cap(
                        p, tally_k, tally_n, earlier, past_cap=more > room
                    )[0]:
                        return False
                    if not stops:
                        after.add(shown_more)
                going = after
        return True

    def _speaking_line(self, history: CaseHistory, tally: Any, n: int) -> tuple[CaseHistory, int]:
        """The history and reproductions of the line with the highest P(regression); the
        case's own (any line reproduced) when the store gave no per-line history."""
        told_by = _judged_lines(history, tally)
        if not told_by:
            return history, len(tally.reproducing)

        each_p = {
            line: told.priors.posterior(told.features, k=k, n=n, earlier=told.earlier)
            for line, (told, k) in told_by.items()
        }
        line = max(told_by, key=lambda each: (each_p[each], told_by[each][1]))
        told, k = told_by[line]
        # Every line's own P is kept: grouping and backfills look for the regression's
        # lines only (`regression_lines`), not a flaky test's that failed beside them.
        line_p = {each: round(p, 4) for each, p in each_p.items()}
        return replace(told, facts={**told.facts, "line_p": line_p}), k

    def _by_errorsummary(
        self,
        evidence: CaseEvidence,
        failed_tests: frozenset[str],
        facts: Any,
        history: CaseHistory,
        n: int,
        in_flight: int,
    ) -> Decision:
        k = sum(
            1
            for run in evidence.retriggers
            if run.settled
            and not run.void
            and any(failing_test(line) in failed_tests for line in run.failure_lines)
        )
        why = (
            f"the original's log is unparsed: {k} of {_plural(n, 'retrigger')} showed a test "
            "its errorsummary failed"
        )
        return self._by_seed_count(evidence, k, why, facts, history, n, in_flight)

    def _by_crash_lines(
        self,
        evidence: CaseEvidence,
        crashes: tuple[str, ...],
        facts: Any,
        history: CaseHistory,
        n: int,
        in_flight: int,
        beside: Decision | None = None,
    ) -> Decision:
        """`beside`: what the original's TEST-UNEXPECTED lines decided (none: no such line)."""
        wanted = set(crashes)
        k = sum(
            1
            for run in evidence.retriggers
            if run.settled and not run.void and wanted & set(run.crash_lines)
        )
        shown = "; ".join(crashes[:3]) + ("; …" if len(crashes) > 3 else "")
        said = (
            f"the original crashed where none of its failure lines accounts for it ({shown})"
            if beside
            else f"the original's only failure lines are PROCESS-CRASH lines ({shown})"
        )
        why = f"{said}: {k} of {_plural(n, 'retrigger')} crashed with the same signature"
        if beside is not None:
            why = f"{why}; its failure lines: {beside.reason}"
        return self._by_seed_count(
            evidence,
            k,
            why,
            facts,
            history,
            n,
            in_flight,
            crashes=crashes,
            lines=beside,
            crash_past=_crash_past(history, crashes, k, n),
        )

    def _by_seed_count(
        self,
        evidence: CaseEvidence,
        k: int,
        why: str,
        facts: Any,
        history: CaseHistory,
        n: int,
        in_flight: int,
        crashes: tuple[str, ...] = (),
        lines: Decision | None = None,
        crash_past: CrashPast | None = None,
    ) -> Decision:
        """A second source decides by the seed rule's count, staged as in `seed-staged`:
        without a TEST-UNEXPECTED line there is no test history to weigh.

        The count is decided once min_reproductions retriggers reproduced, or once the runs
        still to come could no longer bring it there, and while none is in flight the next
        wave is just enough that the verdict could be due. The verdict is the one the same
        runs would give at runs_wanted; asked for all at once, a crash that reproduced 5 of
        5 spent 3 retriggers it did not need (1,165 retriggers, 8 % of all, went to 233
        crash-only cases on seed 20261239).

        `lines`: what the original's TEST-UNEXPECTED lines decided, when the count judges a
        crash beside them (they did not make the case a regression). A wave is then as
        large as theirs, if larger, and while they are still to decide and the crash can no
        longer make a regression, their decision stands.

        `crash_past`: the crash's signature in its suite chunk's earlier runs, when the
        store gathered them. P(regression) is then the model's on those runs and the
        count, and a crash that reproduced at least once is a regression as soon as P >=
        upper, as a test line is: a crash regression failing a quarter of the runs never
        seen before its push reached 2 of 5 on few of its cases (world 20261246-10: 12
        cases more than 3 pushes after it called intermittent at 1 of 5). With every run in
        short of the count, P >= at_cap makes it a regression as at a test line's cap
        (`_crash_regression`), and a run is asked for while it could bring P there."""
        p = crash_past.p if crash_past else history.priors.posterior({}, k=k, n=n)
        extra: dict[str, Any] = {"crash_lines": list(crashes)} if crashes else {}
        if crash_past:
            extra["crash_past"] = crash_past.to_dict()
        needed = evidence.min_reproductions
        left = in_flight + evidence.runs_missing
        by_past = self._crash_regression(crash_past, k, left) if crash_past and k < needed else ""
        if by_past:
            return self._decision(
                DecisionKind.VERDICT,
                f"{why}; {by_past}",
                facts,
                history,
                k,
                n,
                verdict=Verdict.REGRESSION,
                p=p,
                cancel=_cancellable(evidence.retriggers),
                extra=extra,
            )
        decided = count_decided(k, left, needed)
        if decided and k < needed and left and crash_past:
            # Short of the count, the runs left may still reproduce the crash, and with
            # its past, one reproduction may be enough.
            best = history.priors.posterior({}, k=k + left, n=n + left, earlier=crash_past.earlier)
            decided = best < self.at_cap
        lines_deciding = lines is not None and lines.kind is not DecisionKind.VERDICT
        if decided and (k >= needed or not lines_deciding):
            due = f"; {_plural(left, 'more run')} could not change it" if left else ""
            return self._decision(
                DecisionKind.VERDICT,
                f"{why}{due} ({needed} needed for a regression, the seed rule)",
                facts,
                history,
                k,
                n,
                verdict=Verdict.REGRESSION if k >= needed else Verdict.INTERMITTENT,
                p=p,
                cancel=_cancellable(evidence.retriggers),
                extra=extra,
            )
        if decided and lines is not None:
            # The crash can no longer make a regression: the lines, still deciding, go on.
            return lines
        if in_flight:
            reason = f"{why}; waiting for {_plural(in_flight, 'run')} in flight"
            return self._decision(DecisionKind.WAIT, reason, facts, history, k, n, p=p, extra=extra)
        wave = needed - k
        if lines is not None and lines.kind is DecisionKind.RETRIGGER:
            wave = max(wave, lines.retriggers)
        missing = min(wave, evidence.runs_missing)
        reason = f"{why}; asking for {_plural(missing, 'more run')} (the seed rule)"
        kind = DecisionKind.RETRIGGER
        return self._decision(
            kind, reason, facts, history, k, n, p=p, retriggers=missing, extra=extra
        )

    def wave(
        self,
        priors: Priors,
        features: Mapping[str, bool],
        k: int,
        n: int,
        room: int,
        min_reproductions: int = 2,
        earlier: Sequence[EarlierRuns] = (),
    ) -> int:
        """The fewest runs after which either unanimous outcome would give a verdict."""

        @functools.cache
        def up_after(size: int) -> float:
            return priors.posterior(features, k=k + size, n=n + size, earlier=earlier)

        floor = self._clean_needed(bool(features.get("open_bug")), earlier, lambda: up_after(1))
        for size in range(1, room + 1):
            up = up_after(size)
            down = priors.posterior(features, k=k, n=n + size, earlier=earlier)
            clean_enough = n + size - k >= floor and k < min_reproductions
            if up >= self.upper or (down <= self.lower and clean_enough):
                return size
        return room

    def _clean_needed(
        self, open_bug: bool, earlier: Sequence[EarlierRuns], reproduced: Callable[[], float]
    ) -> int:
        """Retriggers that did not reproduce an intermittent verdict needs: none when an
        open bug and the test's own failures on earlier pushes both say it flakes, and one
        retrigger that reproduced would still leave P(regression) (`reproduced()`) at most
        `waiver_ceiling`.

        The waiver rests on the test's past saying flake so plainly that a retrigger could
        add nothing: true of a test failing a run in four, where a reproduction is what
        it does anyway, not of one that failed twice in sixty runs, where a reproduction
        is news. A regression in such a test keeps its bug's failure line, and on seven
        development worlds of seed 20261218, 32 regression cases were called intermittent
        with no retrigger (docs/history-policy.md has the figures)."""
        if not open_bug:
            return self.min_clean_runs
        if not failed_before(earlier)[0]:
            return self.min_clean_runs_with_bug
        return 0 if reproduced() <= self.waiver_ceiling else self.min_clean_runs_with_bug

    def _decision(
        self,
        kind: DecisionKind,
        reason: str,
        facts: Any,
        history: CaseHistory,
        k: int,
        n: int,
        *,
        verdict: Verdict | None = None,
        p: float | None = None,
        retriggers: int = 0,
        cancel: tuple[str, ...] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> Decision:
        priors = history.priors
        details = {
            **(extra or {}),
            "k": k,
            "n": n,
            "features": dict(history.features),
            "facts": dict(history.facts),
            "prior_p": round(_sigmoid(priors.prior_log_odds(history.features)), 4),
            # [pushes ago, runs, showed the line, other configurations' runs, showed it,
            # other tests that began failing since the previous entry]
            "earlier_runs": [e.to_list() for e in history.earlier],
            "p_retriggers": round(
                _sigmoid(_logit(priors.base_rate) + priors.retrigger_log_lr(k, n, history.earlier)),
                4,
            ),
            **_past_regression_said(priors, k, n, history.earlier),
            "thresholds": {
                "lower": self.lower,
                "upper": self.upper,
                "at_cap": self.at_cap,
                "min_clean_runs": self.min_clean_runs,
                "min_clean_runs_with_bug": self.min_clean_runs_with_bug,
                "waiver_ceiling": self.waiver_ceiling,
                "extend_from": self.extend_from,
            },
            "priors": priors.to_dict(),
        }
        return Decision(
            kind,
            reason,
            facts,
            retriggers=retriggers,
            verdict=verdict,
            cancel=cancel,
            p_regression=None if p is None else round(p, 4),
            details=details,
        )


# A retrigger tally this high (>= 4 of 5) is called intermittent only when the test failed
# at a comparable rate before the suspect push: at least this share of the rate the
# retriggers show for sure (`rate_at_least`), over at least `_PAST_RUNS` earlier runs.
MOSTLY = 0.8
_COMPARABLE = 0.25
_PAST_RUNS = 3
# How sure the retriggers' rate must be: five runs tell a rate only roughly (4 of 5 is at
# least 34 % of runs, 5 of 5 at least 55 %, 95 % sure). Compared with their bare share
# (80 %, 100 %), a test that failed a fifth of its runs for weeks had "no comparable rate"
# whenever it failed 4 retriggers of 5: on a world of tests that flake that often (1,444
# cases, `world-20261203-7`), 7 of its 9 false regressions, where the model said 4-25 %.
_SURE = 0.95


def mostly_reproduced(k: int, n: int) -> bool:
    """Whether k of n retriggers is "4 or more of 5" (at least 4, and at least 80 %)."""
    return k >= 4 and k >= MOSTLY * n


def failed_before(earlier: Sequence[EarlierRuns]) -> tuple[int, int]:
    """(runs that showed the line, runs) of the test on pushes before the case's, on any
    configuration."""
    past = [e for e in earlier if e.ago >= 1]
    shown = sum(e.shown + e.other_shown for e in past)
    return shown, sum(e.runs + e.other_runs for e in past)


def _reproduced_or_shown(k: int, earlier: Sequence[EarlierRuns]) -> bool:
    """What a regression verdict at the cap needs besides P: a reproduction on this push,
    or the failure shown on an earlier one (`HistoryPolicy._at_cap`)."""
    return k >= 1 or failed_before(earlier)[0] > 0


def rate_at_least(k: int, n: int, sure: float = _SURE) -> float:
    """The failure rate that k or more reproductions of n show for sure: the lowest rate
    under which they would still happen with chance 1 - `sure` (one-sided Clopper-Pearson
    bound)."""
    if k <= 0 or n <= 0:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(40):
        mid = (low + high) / 2
        tail = sum(_binomial(i, n, mid) for i in range(k, n + 1))
        low, high = (mid, high) if tail < 1 - sure else (low, mid)
    return low


def _judged_lines(history: CaseHistory, tally: Any) -> dict[str | None, tuple[CaseHistory, int]]:
    """Each of the original's lines with a history of its own → (that history, the
    retriggers that reproduced it), in the order of the original's lines; empty when the
    store gave no per-line history."""
    return {
        r.line: (history.judged_by(r.line), r.retriggers)
        for r in tally.lines
        if r.line in history.lines
    }


def _repeats_its_past(k: int, n: int, earlier: Sequence[EarlierRuns]) -> tuple[bool, str]:
    """(regression?, why in words) for a case whose retriggers mostly reproduced."""
    shown, runs = failed_before(earlier)
    floor = rate_at_least(k, n)
    tally = (
        f"{k} of {n} retriggers reproduced the failure (at least {floor:.0%} of runs, "
        f"{_SURE:.0%} sure)"
    )
    if runs >= _PAST_RUNS and shown / runs >= _COMPARABLE * floor:
        return False, (
            f"{tally}, but the test failed at a comparable rate before this push "
            f"({shown} of {_plural(runs, 'earlier run')} showed the line, "
            f"{shown / runs:.0%}): intermittent"
        )
    before = f"{shown} of {_plural(runs, 'earlier run')}" if runs else "no earlier run"
    return True, (
        f"{tally} and the test did not fail at a comparable rate before this push "
        f"({before} showed the line): a regression"
    )


def _past_regression_said(
    priors: Priors, k: int, n: int, earlier: Sequence[EarlierRuns]
) -> dict[str, Any]:
    """{"past_regression": the span, its runs and how many showed the line} when a past
    regression, since fixed, tells the test's earlier runs (`Priors.past_regression`)."""
    span = priors.past_regression(k, n, earlier)
    if span is None:
        return {}
    said = {
        "from_pushes_ago": span.first_ago,
        "to_pushes_ago": span.last_ago,
        "runs": span.runs + span.other_runs,
        "showed_line": span.shown + span.other_shown,
    }
    return {"past_regression": said}


# A line whose own P(regression) is at least this is one of the regression's lines: more
# likely broken than flaky.
REGRESSION_LINE_P = 0.5


def regression_lines(evidence: Mapping[str, Any] | None) -> list[str]:
    """The failure lines a case's stored history judged likelier a regression than not
    (`facts.line_p`), or the crash lines it was judged on (`crash_lines`); empty when it
    judged none, or no line on its own (another policy, an older case)."""
    history = (evidence or {}).get("history") or {}
    crashes = history.get("crash_lines") or []
    if crashes:
        return sorted(crashes)
    line_p = (history.get("facts") or {}).get("line_p") or {}
    return sorted(line for line, p in line_p.items() if p >= REGRESSION_LINE_P)


def _short(line: str, width: int = 90) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _unaccounted_crashes(evidence: CaseEvidence, tally: Any) -> tuple[str, ...]:
    """The original's normalised PROCESS-CRASH lines, once its lines are known, that are
    not the crash of a test one of its TEST-UNEXPECTED lines names."""
    original = evidence.original
    if not original.lines_known:
        return ()
    return unaccounted_crashes(original.crash_lines, (r.line for r in tally.lines))


@dataclass(frozen=True)
class CrashPast:
    """What the earlier runs of a crash's suite chunk say of it (`_crash_past`)."""

    line: str
    p: float  # P(regression) on those runs and the retriggers' count
    earlier: tuple[EarlierRuns, ...] = ()  # this push's other configurations too (ago 0)

    @property
    def pushes(self) -> int:
        """Earlier pushes whose chunk crashed with the signature."""
        return sum(1 for e in self.earlier if e.ago > 0 and e.shown + e.other_shown)

    @property
    def runs(self) -> int:
        """The chunk's runs on earlier pushes, every configuration."""
        return failed_before(self.earlier)[1]

    @property
    def shown(self) -> int:
        """Of which crashed with the signature."""
        return failed_before(self.earlier)[0]

    @property
    def said(self) -> str:
        return (
            f"the signature on {self.shown} of {_plural(self.runs, 'earlier run')} of its "
            f"suite chunk, on {self.pushes} push{'' if self.pushes == 1 else 'es'}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "p": round(self.p, 4),
            "earlier_pushes_with_crash": self.pushes,
            "earlier_runs": self.runs,
            "earlier_runs_crashed": self.shown,
        }


def _crash_past(history: CaseHistory, crashes: Sequence[str], k: int, n: int) -> CrashPast | None:
    """The crash whose chunk's past makes the case likeliest a regression, weighed as a
    test line's past is (`Priors.posterior`, no features): None when the store gathered
    none (a policy run without history)."""
    pasts = (
        CrashPast(crash, history.priors.posterior({}, k=k, n=n, earlier=earlier), earlier)
        for crash in crashes
        if (earlier := history.crashes.get(crash)) is not None
    )
    return max(pasts, key=lambda c: c.p, default=None)


def _errorsummary_tests(evidence: CaseEvidence) -> frozenset[str]:
    """The tests an original whose log is unparsed failed, by its errorsummary."""
    original = evidence.original
    if not original.log_unparsed:
        return frozenset()
    return frozenset(
        f.test for f in original.structured_failures if f.kind is FailureKind.TEST and f.test
    )


def configured(
    upper: float | None = None,
    lower: float | None = None,
    min_clean_runs: int | None = None,
    at_cap: float | None = None,
    min_clean_runs_with_bug: int | None = None,
    waiver_ceiling: float | None = None,
    extend_from: float | None = None,
) -> HistoryPolicy:
    """The history policy with other thresholds (settings), validated."""
    given = {
        "upper": upper,
        "lower": lower,
        "min_clean_runs": min_clean_runs,
        "at_cap": at_cap,
        "min_clean_runs_with_bug": min_clean_runs_with_bug,
        "waiver_ceiling": waiver_ceiling,
        "extend_from": extend_from,
    }
    return replace(HistoryPolicy(), **{k: v for k, v in given.items() if v is not None})


@dataclass(frozen=True)
class Span:
    """Consecutive earlier pushes, and the test's runs on them (this configuration and the
    others) and how many showed the line."""

    first_ago: int
    last_ago: int
    shown: int
    runs: int
    other_shown: int
    other_runs: int


@dataclass(frozen=True)
class PastWindows:
    """The spans a past regression, since fixed, may have covered (`_past_windows`)."""

    spans: tuple[Span, ...]
    possible: int  # every span of earlier pushes with runs that ends before the last one

    def mean(self, log_likelihoods: list[float]) -> float:
        """The log of the mean likelihood over every possible span, given those of
        `spans`: the others count as impossible."""
        return _log_mean_exp(log_likelihoods) + math.log(len(self.spans) / self.possible)


# A past regression failed the test at least this many times as often as its runs since
# show (`_past_windows`).
_PAST_WINDOW_FALL = 2.0
# How sure the runs since must show that fall (`_past_windows`).
_PAST_WINDOW_SURE = 0.99
# The prior weight of "a regression of this test came and went before", under I and R
# alike: where no span fits, both lose the same and the odds do not move.
_PAST_WINDOW_SHARE = 0.1


def _totals(
    k: int, n: int, pushes: Sequence[EarlierRuns]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """(shown, runs) on this configuration, retriggers included, and on the others."""
    same = (k + sum(e.shown for e in pushes), n + sum(e.runs for e in pushes))
    return same, (sum(e.other_shown for e in pushes), sum(e.other_runs for e in pushes))


def _here_other(pushes: Sequence[EarlierRuns]) -> list[int]:
    """[shown, runs] on this push's other configurations."""
    here = [e for e in pushes if e.ago == 0]
    return [sum(e.other_shown for e in here), sum(e.other_runs for e in here)]


@functools.lru_cache(maxsize=4096)
def _past_windows(pushes: tuple[EarlierRuns, ...]) -> PastWindows:
    """The spans of earlier pushes that begin and end on a push where the test showed the
    line, end before the newest earlier push with runs (a fix needs runs after it to
    show, and this push's other configurations alone are too few: a regression failing
    half its runs, still failing, missed four of them and was called intermittent), and
    showed the line at least `_PAST_WINDOW_FALL` times as often as the test's runs since
    (on the earlier pushes after the span and this push's other configurations; its
    retriggers not), and that many runs since showing it that seldom would be a chance
    below 1 - `_PAST_WINDOW_SURE` had it kept failing at the span's rate (five clean runs
    after a regression failing 57 % of its runs, never fixed, made its next cases flakes:
    world 20261217-7).

    A span that begins or ends on a clean push explains less than the one inside it, so
    those add little to the average. A regression that came and went leaves the test
    failing less often than it did: a span failing no more than the runs since is a
    regression still failing, or the flake rate changing. Weighed as a past regression,
    a flaky test's quieter weeks "explained" a regression failing half its runs since
    (called intermittent at 4 reproductions of 5), and the first weeks of a regression
    failing half its runs and never fixed made its later cases flakes (world
    20261217-7: 5 more of its cases missed when the span was compared with all the other
    runs, before it as well as since)."""
    runs = sorted(
        (e for e in pushes if e.ago >= 1 and (e.runs or e.other_runs)), key=lambda e: -e.ago
    )
    if len(runs) < 2:
        return PastWindows((), 0)
    possible = len(runs) * (len(runs) - 1) // 2
    failing = [i for i, e in enumerate(runs[:-1]) if e.shown or e.other_shown]
    before = [(0, 0, 0, 0)]  # before[i]: the counts of runs[:i]
    for e in runs:
        before.append(tuple(t + c for t, c in zip(before[-1], _counts(e), strict=True)))
    here = _here_other(pushes)
    spans = []
    for x, i in enumerate(failing):
        for j in failing[x:]:
            span = Span(runs[i].ago, runs[j].ago, *_between(before[i], before[j + 1]))
            after = _between(before[j + 1], before[-1])
            since = after[0] + after[2] + here[0], after[1] + after[3] + here[1]
            inside = span.shown + span.other_shown, span.runs + span.other_runs
            rate = inside[0] / inside[1]
            if (
                inside[0] * since[1] >= _PAST_WINDOW_FALL * since[0] * inside[1]
                and _at_most(since[0], since[1], rate) <= 1.0 - _PAST_WINDOW_SURE
            ):
                spans.append(span)
    return PastWindows(tuple(spans), possible)


def _at_most(hits: int, runs: int, rate: float) -> float:
    """P(at most `hits` of `runs` fail) for runs failing at `rate` (binomial)."""
    if rate <= 0.0:
        return 1.0
    if rate >= 1.0:
        return 1.0 if hits >= runs else 0.0
    return sum(_binomial(i, runs, rate) for i in range(hits + 1))


def _binomial(i: int, n: int, rate: float) -> float:
    """P(exactly i of n fail) for runs failing at `rate`, 0 < rate < 1; in logs, so that
    hundreds of runs neither overflow nor underflow on the way."""
    return math.exp(
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(rate)
        + (n - i) * math.log1p(-rate)
    )


def _counts(e: EarlierRuns) -> tuple[int, int, int, int]:
    return (e.shown, e.runs, e.other_shown, e.other_runs)


def _between(start: Sequence[int], end: Sequence[int]) -> tuple[int, ...]:
    return tuple(b - a for a, b in zip(start, end, strict=True))


def _log_mix(x: float, y: float, share: float) -> float:
    """log((1 - share) e^x + share e^y)."""
    return _log_add(x + math.log(1.0 - share), y + math.log(share))


def _log_half_sum(x: float, y: float) -> float:
    """log(e^x / 2 + e^y / 2): two hypotheses with half the weight each."""
    return _log_add(x, y) - math.log(2.0)


def _log_mean_exp(values: list[float], weights: Sequence[float] | None = None) -> float:
    """log of the mean of exp(values), each times its weight when given. The weights are
    likelihood ratios, not shares: a push weighed up takes nothing from the others."""
    top = max(values)
    if weights is None:  # the plain mean, on the hot path of every span's likelihood
        total = sum(math.exp(v - top) for v in values)
    else:
        total = sum(w * math.exp(v - top) for v, w in zip(values, weights, strict=True))
    return top + math.log(total / len(values))


def _log_add(x: float, y: float) -> float:
    top = max(x, y)
    return top + math.log(math.exp(x - top) + math.exp(y - top))


@functools.lru_cache(maxsize=1 << 16)
def _beta_binomial(a: float, b: float, k: int, n: int) -> float:
    # Cached: a case's spans and change points ask for the same counts again and again.
    return _log_beta(a + k, b + n - k) - _log_beta(a, b)


@functools.lru_cache(maxsize=1 << 16)
def _quiet(a: float, b: float, hits: int, runs: int) -> float:
    flaky = math.log(_FLAKY_SHARE) + _beta_binomial(a, b, hits, runs)
    return _log_add(math.log(1.0 - _FLAKY_SHARE), flaky) if hits == 0 else flaky


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _clamp_lr(value: float) -> float:
    return max(-_MAX_FEATURE_LOG_LR, min(_MAX_FEATURE_LOG_LR, value))


register_policy(HistoryPolicy())
