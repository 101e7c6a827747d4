"""The history policy's verdicts one by one: reproductions never lower P(regression), and a
failure that nearly every retrigger reproduced is intermittent only on its past record."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from sheriff.model.history import (
    CaseHistory,
    EarlierRuns,
    Priors,
    RateDistribution,
    failed_before,
    mostly_reproduced,
)
from sheriff.model.policy import CaseEvidence, DecisionKind, RunEvidence, Verdict
from tests.model.test_history import POLICY, A, case, done

rates = st.builds(
    RateDistribution,
    st.floats(0.05, 30.0, allow_nan=False),
    st.floats(0.05, 30.0, allow_nan=False),
)
priors = st.builds(
    Priors,
    base_rate=st.floats(0.001, 0.999),
    flake=rates,
    regression=rates,
    feature_log_lr=st.just({"open_bug": (1.0, -0.5)}) | st.just({}),
)
earlier_runs = st.lists(
    st.builds(
        EarlierRuns,
        ago=st.integers(0, 20),
        runs=st.integers(0, 3),
        shown=st.integers(0, 3),
        other_runs=st.integers(0, 6),
        other_shown=st.integers(0, 6),
        onsets=st.integers(0, 5),  # other tests that began failing there
    ).filter(lambda e: e.shown <= e.runs and e.other_shown <= e.other_runs),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(
    priors=priors,
    earlier=earlier_runs,
    open_bug=st.booleans(),
    n=st.integers(0, 8),
    data=st.data(),
)
def test_a_reproduction_never_lowers_p_regression(
    priors: Priors, earlier: list[EarlierRuns], open_bug: bool, n: int, data: st.DataObject
) -> None:
    k = data.draw(st.integers(0, n))
    features = {"open_bug": open_bug}
    before = priors.posterior(features, k=k, n=n, earlier=earlier)
    after = priors.posterior(features, k=k + 1, n=n + 1, earlier=earlier)
    assert after >= before - 1e-12


@settings(max_examples=300, deadline=None)
@given(priors=priors, earlier=earlier_runs, n=st.integers(0, 8), data=st.data())
def test_other_tests_beginning_to_fail_never_lower_p_regression(
    priors: Priors, earlier: list[EarlierRuns], n: int, data: st.DataObject
) -> None:
    # Wherever other tests began failing, even on a push the test's own runs place no
    # change on (another regression's), P(regression) does not fall.
    k = data.draw(st.integers(0, n))
    if not earlier:
        return
    i = data.draw(st.integers(0, len(earlier) - 1))
    more = [*earlier]
    more[i] = replace(more[i], onsets=more[i].onsets + data.draw(st.integers(1, 5)))
    before = priors.posterior({}, k=k, n=n, earlier=earlier)
    assert priors.posterior({}, k=k, n=n, earlier=more) >= before - 1e-12


def test_fitted_rates_can_make_the_bare_model_fall_on_a_reproduction() -> None:
    # Why P is taken monotone: flakes that repeat half the time, regressions that rarely
    # do (what a world of mislabelled cases teaches the fit) make the bare likelihood
    # ratio fall when a retrigger reproduces.
    skewed = Priors(flake=RateDistribution(10.0, 10.0), regression=RateDistribution(0.4, 1.6))
    assert skewed.retrigger_log_lr(1, 1) < skewed.retrigger_log_lr(0, 0)
    assert skewed.posterior({}, k=1, n=1) >= skewed.posterior({}, k=0, n=0)


def test_policy_p_rises_with_each_reproducing_retrigger() -> None:
    flaky_fleet = CaseHistory(priors=Priors(base_rate=0.05, flake=RateDistribution(6.0, 14.0)))
    seen = []
    runs = []
    for i in range(5):
        runs.append(done(f"r{i}", A))
        decision = POLICY.decide(case(*runs, history=flaky_fleet))
        seen.append(decision.p_regression)
    assert seen == sorted(seen)


# A fleet whose fitted rates call 4 of 5 reproductions an intermittent on the model alone.
FLAKY_FLEET = Priors(
    base_rate=0.02, flake=RateDistribution(12.0, 8.0), regression=RateDistribution(0.6, 1.4)
)
FOUR_OF_FIVE = [done("r1", A), done("r2", A), done("r3", A), done("r4", A), done("r5")]


def test_four_of_five_reproduced_without_a_past_record_is_a_regression() -> None:
    assert mostly_reproduced(4, 5) and mostly_reproduced(5, 5) and not mostly_reproduced(3, 5)
    assert FLAKY_FLEET.posterior({}, k=4, n=5) < POLICY.at_cap  # the model alone: intermittent
    decision = POLICY.decide(case(*FOUR_OF_FIVE, history=CaseHistory(priors=FLAKY_FLEET)))
    assert decision.kind is DecisionKind.VERDICT and decision.verdict is Verdict.REGRESSION
    assert "4 of 5 retriggers reproduced the failure" in decision.reason
    assert "did not fail at a comparable rate before this push" in decision.reason
    assert "(no earlier run showed the line)" in decision.reason
    # A clean past record makes it a regression on the model alone.
    clean_past = CaseHistory(
        priors=FLAKY_FLEET, earlier=tuple(EarlierRuns(ago=i, runs=1) for i in range(1, 11))
    )
    assert POLICY.decide(case(*FOUR_OF_FIVE, history=clean_past)).verdict is Verdict.REGRESSION


def test_four_of_five_reproduced_is_intermittent_when_the_test_failed_as_often_before() -> None:
    # The test failed on 6 of 10 earlier runs (here and on other configurations).
    past = tuple(
        EarlierRuns(ago=i, runs=1, shown=int(i % 2 == 0), other_runs=1, other_shown=int(i < 3))
        for i in range(1, 6)
    )
    assert failed_before(past) == (4, 10)
    history = CaseHistory(priors=FLAKY_FLEET, earlier=past)
    p = FLAKY_FLEET.posterior({}, k=4, n=5, earlier=past)
    decision = POLICY.decide(case(*FOUR_OF_FIVE, history=history))
    assert p < POLICY.at_cap and decision.verdict is Verdict.INTERMITTENT
    assert "failed at a comparable rate before this push (4 of 10 earlier runs" in decision.reason
    # The stored evidence (the decision's reason) says so in words.
    assert "intermittent" in decision.reason.rsplit(";", 1)[-1]


def test_each_line_is_judged_on_its_own_past_and_the_regressed_one_speaks() -> None:
    """A regressed test failing beside a test that flakes half the time: the case is the
    regression's, though the flaky line's long record alone would call it intermittent."""
    from sheriff.model.history import LineHistory
    from tests.model.test_history import OTHER

    both = RunEvidence(
        "orig", resolved=True, result="testfailed", lines_known=True, failure_lines=(A, OTHER)
    )
    flaky = tuple(
        EarlierRuns(ago=i, runs=1, shown=int(i % 2 == 0), other_runs=2, other_shown=1)
        for i in range(1, 21)
    )
    clean = tuple(EarlierRuns(ago=i, runs=1, other_runs=2) for i in range(1, 21))
    retriggers = [done("r1", A, OTHER), done("r2", A), done("r3", A), done("r4", A, OTHER)]
    retriggers.append(done("r5", A))
    worst_line_only = CaseHistory(priors=FLAKY_FLEET, earlier=flaky)
    before = POLICY.decide(CaseEvidence(both, tuple(retriggers), history=worst_line_only))
    assert before.verdict is Verdict.INTERMITTENT  # judged by the flaky line's record
    per_line = CaseHistory(
        priors=FLAKY_FLEET,
        earlier=flaky,
        lines={A: LineHistory(clean), OTHER: LineHistory(flaky, open_bug=True)},
    )
    decision = POLICY.decide(CaseEvidence(both, tuple(retriggers), history=per_line))
    assert decision.verdict is Verdict.REGRESSION
    assert decision.details is not None and decision.details["facts"]["line"] == A
    assert "dom/a/test_a.html" in decision.reason  # the line that spoke, in words
    # Each line's own P is kept; the regression's lines are the regressed test's only.
    from sheriff.model.history import regression_lines

    assert set(decision.details["facts"]["line_p"]) == {A, OTHER}
    assert regression_lines({"history": decision.details}) == [A]
    # The flaky line alone, reproduced as often as it flakes, is no regression.
    only_flaky = [done("r1", OTHER), done("r2"), done("r3", OTHER), done("r4"), done("r5")]
    told = POLICY.decide(CaseEvidence(both, tuple(only_flaky), history=per_line))
    assert told.verdict is Verdict.INTERMITTENT


def test_comparable_is_judged_against_what_five_retriggers_can_tell() -> None:
    """4 of 5 is at least about a third of runs, 95 % sure: a test that failed in 18 % of
    its many earlier runs fails like that (a hot streak of a flaky test), one that failed
    in 5 % of them does not, and neither does one with no earlier run."""
    from sheriff.model.history import rate_at_least

    assert 0.33 < rate_at_least(4, 5) < 0.35 and 0.54 < rate_at_least(5, 5) < 0.56

    def past(shown_in: int, of: int) -> CaseHistory:
        failed = {round(j * of / shown_in) for j in range(shown_in)}  # spread out
        runs = tuple(EarlierRuns(ago=i + 1, runs=1, shown=int(i in failed)) for i in range(of))
        return CaseHistory(priors=FLAKY_FLEET, earlier=runs)

    often = POLICY.decide(case(*FOUR_OF_FIVE, history=past(8, 44)))  # 18 %
    assert often.verdict is Verdict.INTERMITTENT
    assert "at least 34% of runs, 95% sure" in often.reason
    assert "(8 of 44 earlier runs showed the line, 18%): intermittent" in often.reason
    rarely = POLICY.decide(case(*FOUR_OF_FIVE, history=past(2, 44)))  # 5 %
    assert rarely.verdict is Verdict.REGRESSION
    # The rule alone, at its edge: a quarter of 34 % is 8.6 %.
    from sheriff.model.history import _repeats_its_past

    assert _repeats_its_past(4, 5, past(3, 44).earlier)[0]  # 7 %: a regression
    assert not _repeats_its_past(4, 5, past(4, 44).earlier)[0]  # 9 %: comparable


@settings(max_examples=300, deadline=None)
@given(priors=priors, earlier=earlier_runs, open_bug=st.booleans(), data=st.data())
def test_a_case_decided_before_the_cap_as_out_of_reach_is_never_a_regression_at_it(
    priors: Priors, earlier: list[EarlierRuns], open_bug: bool, data: st.DataObject
) -> None:
    """When the policy stops early because no outcome of the runs left could make a
    regression, no outcome does: every way the runs left could come out, decided then,
    is not a regression."""
    n = data.draw(st.integers(0, 4))
    k = data.draw(st.integers(0, n))
    history = CaseHistory(features={"open_bug": open_bug}, priors=priors, earlier=tuple(earlier))
    runs = [done(f"r{i}", A) for i in range(k)] + [done(f"c{i}") for i in range(n - k)]
    decision = POLICY.decide(case(*runs, history=history))
    if "however the" not in decision.reason:
        return
    assert decision.verdict is Verdict.INTERMITTENT
    room = 5 - n
    for extra in range(1, room + 1):  # every run left reproducing, one after another
        more = [done(f"x{i}", A) for i in range(extra)]
        assert POLICY.decide(case(*runs, *more, history=history)).verdict is not (
            Verdict.REGRESSION
        )
    for reproduced in range(room + 1):  # every tally at the cap
        more = [done(f"x{i}", A) for i in range(reproduced)]
        more += [done(f"y{i}") for i in range(room - reproduced)]
        assert POLICY.decide(case(*runs, *more, history=history)).verdict is not (
            Verdict.REGRESSION
        )


# Fleets where a case is often undecided at the cap (flakes repeating a run in five to a
# run in three, regressions mostly failing): where the runs past it matter.
undecided_fleets = st.builds(
    Priors,
    base_rate=st.floats(0.02, 0.6),
    flake=st.builds(RateDistribution, st.floats(1.0, 8.0), st.floats(8.0, 20.0)),
    regression=st.builds(RateDistribution, st.floats(1.0, 3.0), st.floats(0.2, 1.5)),
)


@settings(max_examples=200, deadline=None)
@given(
    priors=priors | undecided_fleets,
    earlier=earlier_runs,
    open_bug=st.booleans(),
    data=st.data(),
)
def test_a_case_cut_short_before_runs_most_is_never_a_regression_on_any_way_on(
    priors: Priors, earlier: list[EarlierRuns], open_bug: bool, data: st.DataObject
) -> None:
    """With runs past the cap allowed (`runs_most`), a case cut short as out of reach is
    not a regression however its runs would have gone on: the policy, followed run by run
    through any order of reproductions and clean runs up to `runs_most`, never says
    regression where it stops, nor asks for a run past `runs_most`."""
    n = data.draw(st.integers(0, 9) | st.integers(3, 5))
    k = data.draw(st.integers(0, n))
    history = CaseHistory(features={"open_bug": open_bug}, priors=priors, earlier=tuple(earlier))
    runs = [done(f"r{i}", A) for i in range(k)] + [done(f"c{i}") for i in range(n - k)]
    decision = POLICY.decide(case(*runs, history=history, runs_most=11))
    if "however the" not in decision.reason:
        return
    assert decision.verdict is Verdict.INTERMITTENT
    room = 10 - n
    order = data.draw(st.lists(st.booleans(), min_size=room, max_size=room))
    for reproduced in range(room + 1):  # reproductions first, then clean runs
        for way in ([True] * reproduced + [False] * (room - reproduced), order):
            more: list = []
            for i, shows in enumerate(way):
                more.append(done(f"x{i}", A) if shows else done(f"y{i}"))
                decided = POLICY.decide(case(*runs, *more, history=history, runs_most=11))
                if decided.kind is DecisionKind.RETRIGGER:  # never past runs_most
                    assert 1 + len(runs) + len(more) + decided.retriggers <= 11
                if decided.kind is DecisionKind.VERDICT:
                    assert decided.verdict is not Verdict.REGRESSION
                    break
