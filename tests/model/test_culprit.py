"""The flake-aware culprit search (sheriff.model.culprit), on windows drawn at random."""

from __future__ import annotations

import doctest
import random

from sheriff.model import culprit as culprit_module
from sheriff.model.backfill import estimate_fail_rate
from sheriff.model.culprit import CulpritSearch

WINDOW = 20


def _search(
    rng: random.Random,
    culprit: int | None,
    rate: float,
    flake: float,
    likely: frozenset[int] = frozenset(),
) -> tuple[int | str | None, int]:
    """One search over a window whose pushes each have one scheduled run (80 %) and whose
    last push had five retriggers; returns (what it named, runs it spent). `likely`: the
    pushes other searches named."""

    def draw(i: int) -> bool:
        return rng.random() < (rate if culprit is not None and i >= culprit else flake)

    runs = []
    for i in range(WINDOW):
        failed = draw(i)
        runs.append([int(failed), int(not failed)] if rng.random() < 0.8 else [0, 0])
    last = WINDOW - 1
    runs[last] = [0, 0]
    for _ in range(5):
        runs[last][0 if draw(last) else 1] += 1
    search = CulpritSearch(fail_rate=estimate_fail_rate(runs[last][0], 5), likely=likely)
    spent = [0] * WINDOW
    for _ in range(60):
        view = [(r, c) for r, c in runs]
        view[last] = (view[last][0] + 1, view[last][1])  # the original failed there
        step = search.next_step(view, spent=spent)
        if step.culprit is not None:
            return step.culprit, sum(spent)
        if step.no_culprit:
            return None, sum(spent)
        if step.extend:
            return "extend", sum(spent)
        assert step.test is not None and step.times >= 1
        for _ in range(step.times):
            runs[step.test][0 if draw(step.test) else 1] += 1
        spent[step.test] += step.times
    raise AssertionError("the search never ended")


def test_docstring_example_runs() -> None:
    assert doctest.testmod(culprit_module).failed == 0


def test_a_permanent_regression_is_found_in_a_handful_of_runs() -> None:
    rng = random.Random(1)
    results = [_search(rng, rng.randint(3, 18), 1.0, 0.0) for _ in range(100)]
    assert all(isinstance(named, int) for named, _ in results)
    assert sum(runs for _, runs in results) / len(results) <= 8


def test_intermittent_regressions_among_flakes_are_named_right_or_not_at_all() -> None:
    rng = random.Random(2)
    right = wrong = spent = 0
    trials = 400
    for _ in range(trials):
        culprit = rng.randint(3, 18)
        named, runs = _search(rng, culprit, rng.uniform(0.3, 1.0), rng.choice((0.0, 0.02, 0.05)))
        right += named == culprit
        wrong += isinstance(named, int) and named != culprit
        spent += runs
    # Measured: 1.25 % wrong, 73 % right (the rest "no culprit" within the budget), 13.4
    # runs a search; regressions failing 30-100 % of runs, flakes up to 5 % around them.
    # (Before stop 34's parent rule and flake prior: 1.0 % wrong, 73 % right, 12.8 runs.)
    assert wrong / trials <= 0.02
    assert right / trials >= 0.7
    assert spent / trials <= 14


def test_regressions_in_flaky_tests_are_named_right_or_not_at_all() -> None:
    rng = random.Random(4)
    right = wrong = 0
    trials = 400
    for _ in range(trials):
        culprit = rng.randint(3, 18)
        flake = rng.choice((0.05, 0.1, 0.2))
        named, _ = _search(rng, culprit, rng.uniform(0.3, 1.0), flake)
        right += named == culprit
        wrong += isinstance(named, int) and named != culprit
    # Measured: 1.25 % wrong, 50.5 % right; the search that gave up on any parent that
    # reproduced, with a flake prior of mean 3 %: 2.0 % wrong, 37.5 % right.
    assert wrong / trials <= 0.02
    assert right / trials >= 0.45


def test_a_culprit_on_the_searchs_own_push_is_named_there() -> None:
    """The commonest window: the case that opened the search is on the culprit itself.
    Its retriggers are what tell its push from a flake there: a variant that weighed the
    original's failure alone on that push (its retriggers being the luckiest runs of the
    regression) named 20 right culprits instead of 59 on 30 drawn worlds and tripled the
    backfill runs, and these draws, which never put the culprit there, did not show it."""
    rng = random.Random(11)
    last = WINDOW - 1
    permanent = [_search(rng, last, 1.0, 0.0) for _ in range(100)]
    assert all(named == last for named, _ in permanent)
    assert sum(runs for _, runs in permanent) / len(permanent) <= 4  # measured 2.3
    intermittent = [
        _search(rng, last, rng.uniform(0.3, 1.0), rng.choice((0.0, 0.02, 0.05)))[0]
        for _ in range(200)
    ]
    # Measured: 72.5 % right, 0.5 % wrong, the rest "no culprit" within the budget.
    assert sum(named == last for named in intermittent) / len(intermittent) >= 0.65
    wrong = sum(isinstance(named, int) and named != last for named in intermittent)
    assert wrong / len(intermittent) <= 0.02


def test_a_range_of_flakes_alone_names_no_culprit() -> None:
    rng = random.Random(3)
    named = [_search(rng, None, 0.0, rng.uniform(0.02, 0.3))[0] for _ in range(300)]
    assert sum(isinstance(n, int) for n in named) / len(named) <= 0.02  # measured 1 %


def test_one_clean_run_of_an_intermittent_regression_does_not_clear_a_push() -> None:
    search = CulpritSearch(fail_rate=0.5)
    runs = [(0, 1)] * 10 + [(0, 1), (3, 2)]  # push 10 passed once, push 11 failed 3 of 5
    post = search.posterior(runs)
    assert post.culprit[11] < 0.95 and post.culprit[10] > 0.05
    step = search.next_step(runs)
    assert step.culprit is None and step.test is not None


def test_the_named_push_must_reproduce_twice() -> None:
    search = CulpritSearch(fail_rate=1.0)
    runs = [(0, 4)] * 5 + [(1, 0)] + [(1, 0)] * 3 + [(4, 0)]
    assert search.posterior(runs).best()[0] == 5
    step = search.next_step(runs)
    assert step.test == 5 and step.times == 1 and "confirming" in step.why
    runs[5] = (2, 0)
    assert search.next_step(runs).culprit == 5


def test_a_parent_that_reproduced_is_run_again_then_weighed() -> None:
    # Push 5 reproduced 6 of 6, its parent once: a flake of the test, or the regression
    # unlucky there. Four rounds of runs on the parent (2 a round at 50 %) tell them apart.
    search = CulpritSearch(fail_rate=0.5)
    runs = [(0, 3)] * 4 + [(1, 6), (6, 0), (1, 0), (5, 0)]
    step = search.next_step(runs)
    assert step.test == 4 and "parent reproduced" in step.why
    runs[4] = (1, 7)
    assert search.next_step(runs).culprit == 5


def test_mass_on_the_oldest_push_asks_to_look_further_back() -> None:
    search = CulpritSearch(fail_rate=1.0)
    step = search.next_step([(3, 0)] * 6)
    assert step.extend


def test_the_budget_ends_a_search_with_no_culprit() -> None:
    search = CulpritSearch(fail_rate=0.1, budget=10)
    runs = [(0, 2)] * 5 + [(1, 9)]
    step = search.next_step(runs, spent=[2] * 5 + [0])
    assert step.no_culprit and "10 runs spent" in step.why


def test_runs_still_coming_are_counted_before_the_budget_ends_the_search() -> None:
    search = CulpritSearch(fail_rate=0.5, budget=10)
    runs = [(0, 2)] * 5 + [(1, 0), (4, 1)]
    spent = [2] * 5 + [2, 0]
    assert search.next_step(runs, spent=spent).no_culprit
    # Push 5 reproduced once of the two asked, the other still runs: it is counted first.
    assert search.next_step(runs, spent=spent, waiting=frozenset({5})).why == "waiting for runs"
    # Likewise when every push has had its most runs: the last are counted first.
    search = CulpritSearch(fail_rate=0.5, budget=100)
    runs, spent = [(0, 1), (1, 1), (2, 1)], [16, 16, 0]
    assert "no push left" in search.next_step(runs, spent=spent).why
    assert search.next_step(runs, spent=spent, waiting=frozenset({1})).why == "waiting for runs"


def test_a_push_that_has_not_reproduced_and_waits_holds_every_decision() -> None:
    search = CulpritSearch(fail_rate=1.0)
    runs = [(0, 1)] + [(0, 0)] * 9 + [(1, 0)] * 9 + [(4, 0)]
    assert search.next_step(runs).test == 5
    assert search.next_step(runs, waiting=frozenset({3})).test is None


def test_a_failing_push_waiting_for_runs_lets_the_search_go_on_around_it() -> None:
    search = CulpritSearch(fail_rate=1.0)
    runs = [(0, 1)] + [(0, 0)] * 9 + [(1, 0)] * 9 + [(4, 0)]
    # Push 12 reproduced and waits for the rest of its runs: the search goes on.
    assert search.next_step(runs, waiting=frozenset({12})).test == 5


def test_the_own_push_of_a_flaky_test_gets_runs_of_its_own() -> None:
    """A flaky test broken on the search's own push: its parent flakes, and splitting the
    mass ran only the parent, so the culprit's rate rested on a few retriggers and most such
    searches ended without a culprit. Measured on these draws: 48 % right, 2.0 % wrong
    (splitting alone: 37 % right, 2.0 % wrong; 4,000 draws of each of two seeds)."""
    rng = random.Random(21)
    last = WINDOW - 1
    named = [
        _search(rng, last, rng.uniform(0.5, 1.0), rng.choice((0.05, 0.15, 0.3)))[0]
        for _ in range(400)
    ]
    assert sum(n == last for n in named) / len(named) >= 0.43
    assert sum(isinstance(n, int) and n != last for n in named) / len(named) <= 0.03


def test_an_own_push_with_fewer_runs_than_its_parent_is_run() -> None:
    search = CulpritSearch(fail_rate=0.6)
    runs = [(0, 1)] * 17 + [(1, 7), (3, 1)]  # the parent flaked once in eight
    step = search.next_step(runs, spent=[0] * 17 + [8, 0])
    assert step.test == 18 and step.times == search.runs_for_a_round()
    # While its own runs are coming, the search runs elsewhere.
    step = search.next_step(runs, spent=[0] * 17 + [8, 2], waiting=frozenset({18}))
    assert step.test != 18


def test_a_push_another_search_named_is_searched_first_but_not_blamed() -> None:
    """Measured on 2,000 draws each: 81 % right in 11.2 runs when the push another search
    named is the culprit (74 %, 13.0 runs without it); 1.45 % wrong when it is the push
    after the culprit (0.85 % without)."""
    rng = random.Random(2)
    trials = 400

    def draws(offset: int) -> tuple[float, float, float]:
        right = wrong = spent = 0
        for _ in range(trials):
            culprit = rng.randint(3, 18)
            rate, flake = rng.uniform(0.3, 1.0), rng.choice((0.0, 0.02, 0.05))
            named, runs = _search(rng, culprit, rate, flake, frozenset({culprit + offset}))
            right += named == culprit
            wrong += isinstance(named, int) and named != culprit
            spent += runs
        return right / trials, wrong / trials, spent / trials

    right, wrong, runs = draws(0)
    assert right >= 0.77 and wrong <= 0.02 and runs <= 12
    right, wrong, runs = draws(1)
    assert right >= 0.65 and wrong <= 0.03
