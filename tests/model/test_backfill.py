"""Culprit search: runs per push, outcomes, culprit, bisect planning."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheriff.model.backfill import (
    BisectPlan,
    Outcome,
    PushRuns,
    Step,
    began_after,
    estimate_fail_rate,
    find_culprit,
    other_onset_odds,
    outcome,
    plan_bisect,
    runs_needed,
)

F, C, U = Outcome.FAILING, Outcome.CLEAN, Outcome.UNKNOWN


@pytest.mark.parametrize(
    ("rate", "runs"), [(1.0, 1), (0.96, 1), (0.8, 2), (0.5, 5), (0.3, 8), (0.0, 8)]
)
def test_runs_needed_keeps_missing_an_intermittent_regression_unlikely(rate, runs) -> None:
    assert runs_needed(rate) == runs


@given(st.floats(min_value=0.32, max_value=1.0))
def test_runs_needed_is_enough_and_not_more(rate: float) -> None:
    n = runs_needed(rate)
    assert (1 - rate) ** n < 0.05
    assert n == 1 or (1 - rate) ** (n - 1) >= 0.05


def test_runs_needed_rejects_a_meaningless_probability() -> None:
    with pytest.raises(ValueError):
        runs_needed(0.5, miss_probability=1.5)


def test_fail_rate_from_retriggers_is_not_overconfident() -> None:
    assert estimate_fail_rate(5, 5) == pytest.approx(6 / 7)
    assert runs_needed(estimate_fail_rate(5, 5)) == 2  # one passing run is not enough
    assert estimate_fail_rate(2, 5) == pytest.approx(3 / 7)
    assert estimate_fail_rate(0, 5) == 0.2  # the floor
    assert estimate_fail_rate(0, 0) == 0.5  # no retriggers: nothing says it is permanent


def test_outcome_needs_enough_clean_runs_but_one_reproduction() -> None:
    assert outcome(PushRuns(reproduced=1, clean=7), 5) is F
    assert outcome(PushRuns(clean=4), 5) is U
    assert outcome(PushRuns(clean=5), 5) is C
    assert outcome(PushRuns(), 1) is U


@pytest.mark.parametrize(
    ("outcomes", "culprit"),
    [
        ([C, C, F, F], 2),
        ([C, U, F], None),  # the push after the newest clean one is not known to fail
        ([F, F, F], None),  # nothing clean: the culprit is older than the window
        ([C, F, C, F, F], 3),  # the newest clean push bounds the search
        ([U, C, F], 2),
        ([C, F, C, U], 1),  # only clean pushes below a failing one count
    ],
)
def test_culprit_is_the_failing_push_after_the_newest_clean_one(outcomes, culprit) -> None:
    assert find_culprit(outcomes) == culprit


def test_bisect_bounds_the_range_first_then_tests_the_middle() -> None:
    assert plan_bisect([U] * 20 + [F]) == BisectPlan(Step.TEST, pushes=(0,))
    assert plan_bisect([C] + [U] * 19 + [F]) == BisectPlan(Step.TEST, pushes=(10,))


def test_bisect_halves_between_clean_and_failing() -> None:
    window = [C] + [U] * 9 + [F] + [U] * 9 + [F]
    assert plan_bisect(window).pushes == (5,)


def test_bisect_extends_when_the_oldest_push_fails() -> None:
    assert plan_bisect([F, U, U, F]).step is Step.EXTEND


def test_bisect_skips_untestable_pushes() -> None:
    window = [C, U, U, U, F]
    assert plan_bisect(window, frozenset({2})).pushes in {(1,), (3,)}
    assert plan_bisect(window, frozenset({1, 2, 3})).step is Step.STUCK


def test_bisect_finds_the_culprit() -> None:
    assert plan_bisect([C, C, F, U, F]) == BisectPlan(Step.FOUND, culprit=2)


def test_bisect_needs_a_failing_push_at_the_end() -> None:
    with pytest.raises(ValueError):
        plan_bisect([C, U])


@given(
    size=st.integers(min_value=2, max_value=40),
    data=st.data(),
)
def test_bisect_converges_on_the_true_culprit(size: int, data: st.DataObject) -> None:
    culprit = data.draw(st.integers(min_value=1, max_value=size - 1))
    truth = [C if i < culprit else F for i in range(size)]
    outcomes = [U] * (size - 1) + [F]
    rounds = 0
    while True:
        plan = plan_bisect(outcomes)
        if plan.step is Step.FOUND:
            break
        assert plan.step is Step.TEST
        for i in plan.pushes:
            outcomes[i] = truth[i]
        rounds += 1
        assert rounds <= size
    assert plan.culprit == culprit
    assert rounds <= size.bit_length() + 2


def _runs(*pairs: tuple[int, int]) -> list[PushRuns]:
    return [PushRuns(reproduced=k, clean=c) for k, c in pairs]


def test_a_line_first_shown_after_clean_runs_on_the_culprit_began_after_it() -> None:
    # Window of five pushes; the search named push 1.
    runs = {
        "old": _runs((0, 1), (2, 0), (1, 0), (1, 0), (3, 0)),  # reproduced on the culprit
        "new": _runs((0, 1), (0, 2), (0, 1), (1, 0), (3, 0)),  # 3 clean runs, then always
    }
    assert began_after(runs, culprit=1) == ["new"]


def test_a_line_of_an_intermittent_regression_needs_more_clean_runs_to_have_begun_later() -> None:
    # Failing half its runs since push 3: two clean runs on pushes 1-2 miss it 1 in 4.
    half = _runs((0, 0), (0, 1), (0, 1), (1, 1), (2, 2))
    assert began_after({"new": half}, culprit=1) == []
    # Five clean runs there would have shown it (1 in 32).
    more = _runs((0, 0), (0, 3), (0, 2), (1, 1), (2, 2))
    assert began_after({"new": more}, culprit=1) == ["new"]


def test_a_line_seen_on_or_before_the_culprit_or_never_clean_there_stays() -> None:
    assert began_after({"x": _runs((1, 0), (0, 3), (1, 0))}, culprit=1) == []
    assert began_after({"x": _runs((0, 0), (0, 0), (1, 0))}, culprit=1) == []


def test_the_odds_of_another_onset_weigh_each_push_by_the_runs_it_must_call_misses() -> None:
    # Culprit at index 2, first failure at 3; a 50 % test; pushes break tests 1 in 10.
    # Before: push 1 must have its 2 clean runs miss (1/4), push 0 those of 0 and 1 (1/8).
    # After: push 3 explains the culprit's clean run, which the culprit calls a miss (2).
    odds = other_onset_odds([1, 2, 1, 0], 2, 3, 0.5, 0.1)
    assert odds == pytest.approx(0.1 * (1 / 4 + 1 / 8 + 2))
    # No run anywhere: every push as likely as its prior.
    assert other_onset_odds([0, 0, 0, 0], 2, 3, 0.5, 0.1) == pytest.approx(0.3)
    # Failing before the culprit: never its.
    assert other_onset_odds([0, 0, 0, 0], 2, 1, 0.5, 0.1) == math.inf
    # First failing on the culprit, many clean runs before: the culprit's.
    assert other_onset_odds([5, 5, 0], 2, 2, 0.2, 0.1) < 0.01
