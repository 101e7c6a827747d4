"""The history policy: its Bayesian model, prior fitting, and the decision at each wave."""

from __future__ import annotations

import doctest
import json
import math
from dataclasses import replace

import pytest

from sheriff.model import history as history_module
from sheriff.model.history import (
    ONSET_CLEAN_PUSHES,
    CaseHistory,
    EarlierRuns,
    HistoryPolicy,
    PastCase,
    Priors,
    RateDistribution,
    began_failing,
    configured,
    first_failures,
    fit_priors,
    regression_lines,
    same_configuration,
)
from sheriff.model.policy import (
    CaseEvidence,
    Decision,
    DecisionKind,
    RunEvidence,
    UnknownPolicyError,
    Verdict,
    get_policy,
)

A = "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got <n>, expected <n>"
OTHER = "TEST-UNEXPECTED-FAIL | dom/z/test_z.html | boom"
ORIGINAL = RunEvidence("orig", resolved=True, result="testfailed", lines_known=True,
                       failure_lines=(A,))  # fmt: skip
POLICY = get_policy("history")
NEUTRAL = CaseHistory()  # no facts, default priors (P = 0.5 before retriggers)


def done(task_id: str, *lines: str) -> RunEvidence:
    result = "testfailed" if lines else "success"
    return RunEvidence(task_id, resolved=True, result=result, lines_known=True,
                       failure_lines=lines, requested_by_sheriff=True)  # fmt: skip


def pending(task_id: str) -> RunEvidence:
    return RunEvidence(task_id, requested_by_sheriff=True)


def case(*retriggers: RunEvidence, history: CaseHistory = NEUTRAL, **kw: object) -> CaseEvidence:
    return CaseEvidence(ORIGINAL, tuple(retriggers), history=history, **kw)  # type: ignore[arg-type]


def test_registered_beside_the_seed_family() -> None:
    assert POLICY.name == "history" and getattr(POLICY, "needs_history", False)
    assert get_policy("seed").name == "seed"
    with pytest.raises(UnknownPolicyError, match="history, seed"):
        get_policy("nope")


def test_docstring_example_runs() -> None:
    result = doctest.testmod(history_module)
    assert result.attempted > 0 and result.failed == 0


# -- the model ---------------------------------------------------------------------------


def test_beta_binomial_likelihood_matches_a_direct_sum() -> None:
    rate = RateDistribution(2.0, 3.0)
    # P(k=1 of 2, in a given order) = E[f (1 - f)] = a b / ((a + b)(a + b + 1))
    assert math.exp(rate.log_likelihood(1, 2)) == pytest.approx(2 * 3 / (5 * 6))
    assert rate.log_likelihood(0, 0) == 0.0


def test_reproductions_raise_and_clean_runs_lower_the_probability() -> None:
    priors = Priors()
    p0 = priors.posterior({}, k=0, n=0)
    assert p0 == pytest.approx(0.5)
    assert priors.posterior({}, k=1, n=1) > 0.85
    assert priors.posterior({}, k=0, n=1) < p0
    assert priors.posterior({}, k=0, n=3) < priors.posterior({}, k=0, n=1)


def test_unfitted_priors_are_weak_defaults() -> None:
    priors = fit_priors([])
    assert priors.cases == 0 and priors.base_rate == 0.5
    assert priors.flake.mean == pytest.approx(0.1)
    assert all(lr == (0.0, 0.0) for lr in priors.feature_log_lr.values())


def test_priors_are_fitted_from_past_cases() -> None:
    flakes = [PastCase(p=0.01, k=0, n=3, features={"open_bug": True}) for _ in range(30)]
    regressions = [PastCase(p=0.99, k=2, n=2, features={"open_bug": False}) for _ in range(10)]
    priors = fit_priors(flakes + regressions)
    assert priors.cases == 40
    assert priors.base_rate == pytest.approx((10 * 0.99 + 30 * 0.01 + 1) / 42)
    assert priors.flake.mean == pytest.approx(0.1)  # 90 runs of flakes, none reproduced: floor
    assert priors.regression.mean == pytest.approx(0.8)  # all reproduced: the ceiling
    on, off = priors.feature_log_lr["open_bug"]
    assert on < 0 < off  # an open intermittent bug speaks for a flake


def test_the_flake_rate_is_never_fitted_below_its_default() -> None:
    # The policy's intermittent verdicts are the flakes that did not repeat (those that did
    # were called regressions and are left out): fitted from them alone the rate would
    # fall toward zero and make every flake that repeats once a regression.
    quiet = [PastCase(p=0.01, k=0, n=5, regression=False) for _ in range(200)]
    assert fit_priors(quiet).flake.mean == pytest.approx(0.1)
    noisy = [PastCase(p=0.2, k=2, n=5, regression=False) for _ in range(200)]
    assert fit_priors(noisy).flake.mean == pytest.approx((400 + 1) / (1000 + 10))


def test_the_regression_rate_is_never_fitted_above_its_default() -> None:
    # The policy's regression verdicts are the regressions that repeated (those that did
    # not were called intermittent and are left out): fitted from them alone the rate
    # would rise toward one and make the next regression that passes a retrigger a flake.
    loud = [PastCase(p=0.99, k=5, n=5, regression=True) for _ in range(200)]
    assert fit_priors(loud).regression.mean == pytest.approx(0.8)
    # One clean retrigger then weighs what a fifth of a regression's runs passing says.
    assert math.exp(fit_priors(loud).regression.log_likelihood(0, 1)) == pytest.approx(0.2)
    half = [PastCase(p=0.99, k=3, n=5, regression=True) for _ in range(200)]
    assert fit_priors(half).regression.mean == pytest.approx((600 + 2.4) / (1000 + 3))


def test_rates_are_fitted_from_verdicts_when_known() -> None:
    # Cases left between the bounds at the cap (P 0.7, one of five reproduced) count where
    # their verdict put them: they no longer drag a regression's repeat rate down.
    confident = [PastCase(p=0.99, k=3, n=3, regression=True) for _ in range(10)]
    undecided = [PastCase(p=0.7, k=1, n=5, regression=False) for _ in range(20)]
    by_verdict = fit_priors(confident + undecided)
    by_p = fit_priors(confident + [replace(c, regression=None) for c in undecided])
    assert by_verdict.regression.mean == pytest.approx(0.8)  # the ceiling
    assert by_p.regression.mean < 0.5
    assert by_verdict.base_rate == pytest.approx((10 + 1) / (30 + 2))


def test_a_fact_is_fitted_against_the_retrigger_only_probability() -> None:
    def past(p_retriggers: float | None) -> list[PastCase]:
        return [
            PastCase(p=0.99, k=1, n=1, features={"open_bug": False}, p_retriggers=p_retriggers)
        ] * 20 + [
            PastCase(p=0.01, k=0, n=2, features={"open_bug": True}, p_retriggers=p_retriggers)
        ] * 20

    # Labelled by the final p, which the fact itself helped make, it looks decisive...
    fitted = fit_priors(past(None)).feature_log_lr["open_bug"][1]
    assert fitted == pytest.approx(math.log(5.0))
    # ...labelled by what the runs alone said, it says nothing here.
    assert abs(fit_priors(past(0.5)).feature_log_lr["open_bug"][1]) < 0.05


def test_history_cannot_outweigh_retriggers_alone() -> None:
    strong = {name: (5.0, 5.0) for name in history_module.FEATURES}
    priors = Priors(feature_log_lr=strong)
    features = dict.fromkeys(history_module.FEATURES, True)
    assert priors.prior_log_odds(features) == pytest.approx(math.log(20.0))


# -- the decision at each wave -------------------------------------------------------------


def test_waits_for_the_original_lines() -> None:
    unparsed = RunEvidence("orig", resolved=True, result="testfailed")
    decision = POLICY.decide(CaseEvidence(unparsed, history=NEUTRAL))
    assert decision.kind is DecisionKind.WAIT and "original" in decision.reason
    assert decision.p_regression is None


def test_first_wave_without_history_is_small() -> None:
    decision = POLICY.decide(case())
    assert decision.kind is DecisionKind.RETRIGGER
    assert 1 <= decision.retriggers < 5
    assert decision.p_regression == pytest.approx(0.5)
    # just enough: one run fewer could not have decided either way
    priors, size = Priors(), decision.retriggers
    assert priors.posterior({}, k=size - 1, n=size - 1) < POLICY.upper
    assert priors.posterior({}, k=0, n=size - 1) > POLICY.lower or size - 1 < 2


def test_no_regression_before_a_retrigger_reproduced() -> None:
    # Clean for 20 pushes, failing on both other configurations of this push: history
    # alone says regression, yet the verdict waits for a reproduction on this push.
    quiet = tuple(EarlierRuns(ago, runs=1, other_runs=2) for ago in range(20, 0, -1))
    history = CaseHistory(earlier=(*quiet, EarlierRuns(0, other_runs=2, other_shown=2)))
    first = POLICY.decide(case(history=history))
    assert first.p_regression is not None and first.p_regression >= POLICY.upper
    assert first.kind is DecisionKind.RETRIGGER and first.retriggers == 1
    assert POLICY.decide(case(done("r1", A), history=history)).verdict is Verdict.REGRESSION
    # Every run spent: the model weighs it all. Failing on most pushes since one, clean
    # before, stays a regression though five retriggers were lucky.
    since = same_configuration((False,) * 20 + (True, True, False, True, True, True, True))
    clean = [done(f"r{i}") for i in range(5)]
    decision = POLICY.decide(case(*clean, history=CaseHistory(earlier=since)))
    assert decision.p_regression is not None and decision.p_regression >= POLICY.at_cap
    assert decision.verdict is Verdict.REGRESSION and "all 6 runs used" in decision.reason


def test_waits_while_the_wave_is_in_flight() -> None:
    decision = POLICY.decide(case(pending("r1"), pending("r2")))
    assert decision.kind is DecisionKind.WAIT and "2 runs in flight" in decision.reason
    decision = POLICY.decide(case(requested_not_visible=1))
    assert decision.kind is DecisionKind.WAIT


def test_reproductions_make_a_regression_and_cancel_what_is_left() -> None:
    runs = (done("r1", A), done("r2", A), done("r3", A), pending("r4"))
    decision = POLICY.decide(case(*runs))
    assert decision.kind is DecisionKind.VERDICT and decision.verdict is Verdict.REGRESSION
    assert decision.p_regression >= POLICY.upper
    assert decision.cancel == ("r4",)


def test_clean_runs_make_an_intermittent_only_after_min_clean_runs() -> None:
    priors = Priors(base_rate=0.01)  # the fleet says nearly every case is a flake
    history = CaseHistory(priors=priors)
    assert POLICY.decide(case(history=history)).kind is DecisionKind.RETRIGGER
    one = POLICY.decide(case(done("r1"), history=history))
    assert one.kind is DecisionKind.RETRIGGER and one.p_regression <= POLICY.lower
    two = POLICY.decide(case(done("r1"), done("r2"), history=history))
    assert two.verdict is Verdict.INTERMITTENT


def test_retriggers_that_failed_without_a_failure_are_not_clean_runs() -> None:
    # A fleet where most cases are flakes, yet 3 reproductions of 3 would still make a
    # regression (P 0.88): the runs left can change the verdict.
    priors = Priors(base_rate=0.03)
    history = CaseHistory(priors=priors)
    storm = [
        RunEvidence(f"s{i}", resolved=True, result="testfailed", lines_known=True) for i in range(2)
    ]
    # Two clean retriggers would make it intermittent; two storm failures are no evidence.
    decision = POLICY.decide(case(*storm, history=history))
    assert decision.verdict is None and decision.kind is DecisionKind.RETRIGGER
    assert decision.details["n"] == 0 and decision.evidence.void == ("s0", "s1")
    both = POLICY.decide(case(*storm, done("r1"), done("r2"), history=history))
    assert both.verdict is Verdict.INTERMITTENT and both.details["n"] == 2


def test_an_open_intermittent_bug_decides_after_one_clean_retrigger() -> None:
    priors = Priors(base_rate=0.2, feature_log_lr={"open_bug": (math.log(0.05), 0.0)})
    history = CaseHistory(features={"open_bug": True}, priors=priors)
    # The bug alone brings P below `lower`, and sheriff never saw the test fail: a
    # regression may keep the bug's failure line, one retrigger must show the test passes.
    first = POLICY.decide(case(history=history))
    assert first.p_regression <= POLICY.lower
    assert first.kind is DecisionKind.RETRIGGER and first.retriggers == 1
    decision = POLICY.decide(case(done("r1"), history=history))
    assert decision.verdict is Verdict.INTERMITTENT
    assert decision.p_regression <= POLICY.lower
    # The retrigger failed the same way: no intermittent verdict on the bug's word.
    again = POLICY.decide(case(done("r1", A), history=history))
    assert again.verdict is not Verdict.INTERMITTENT
    # A deployment may still trust its bugs outright.
    trusting = HistoryPolicy(min_clean_runs_with_bug=0)
    assert trusting.decide(case(history=history)).verdict is Verdict.INTERMITTENT


def test_an_open_bug_and_failures_on_earlier_pushes_decide_without_retriggers() -> None:
    # The bug and sheriff's own record of the test failing now and then both say flake.
    priors = Priors(base_rate=0.2, feature_log_lr={"open_bug": (math.log(0.05), 0.0)})
    scattered = same_configuration((True,) + (False,) * 5 + (True,) + (False,) * 5)
    known = CaseHistory(features={"open_bug": True}, priors=priors, earlier=scattered)
    decision = POLICY.decide(case(history=known))
    assert decision.verdict is Verdict.INTERMITTENT and decision.p_regression <= POLICY.lower
    # Without the bug the same record still needs its clean retriggers.
    unknown = replace(known, features={"open_bug": False})
    assert POLICY.decide(case(history=unknown)).kind is DecisionKind.RETRIGGER


def test_the_waiver_holds_only_where_a_reproduction_would_not_matter() -> None:
    # Both tests have an open bug and failed on earlier pushes. One fails a run in four: a
    # reproduction would still say flake, and the history decides alone. The other failed
    # twice in sixty runs: one reproduction would make its failure worth a second look
    # (P > waiver_ceiling), so an intermittent verdict waits for one clean retrigger.
    priors = Priors(base_rate=0.1)
    often = same_configuration(((True,) + (False,) * 3) * 5)
    rarely = tuple(
        EarlierRuns(ago, runs=1, shown=int(ago == 17), other_runs=2, other_shown=int(ago == 9))
        for ago in range(20, 0, -1)
    )
    flaky = CaseHistory(features={"open_bug": True}, priors=priors, earlier=often)
    assert priors.posterior({"open_bug": True}, k=1, n=1, earlier=often) <= POLICY.waiver_ceiling
    decision = POLICY.decide(case(history=flaky))
    assert decision.verdict is Verdict.INTERMITTENT and decision.retriggers == 0
    seldom = replace(flaky, earlier=rarely)
    assert priors.posterior({"open_bug": True}, k=1, n=1, earlier=rarely) > POLICY.waiver_ceiling
    asked = POLICY.decide(case(history=seldom))
    assert asked.kind is DecisionKind.RETRIGGER and asked.retriggers == 1
    assert asked.p_regression <= POLICY.lower  # low already: only the waiver is withheld
    assert "one that reproduced would make P 0.14, above 0.1" in asked.reason
    settled = POLICY.decide(case(done("r1"), history=seldom))
    assert settled.verdict is Verdict.INTERMITTENT
    # With the waiver's ceiling at 1 (every reproduction "would not matter") the old rule.
    trusting = replace(POLICY, waiver_ceiling=1.0)
    assert trusting.decide(case(history=seldom)).verdict is Verdict.INTERMITTENT


def test_another_configuration_failing_speeds_up_a_regression() -> None:
    # Two other configurations of the push show the line; the test never failed before.
    quiet = tuple(EarlierRuns(ago, runs=1, other_runs=2) for ago in range(10, 0, -1))
    history = CaseHistory(earlier=(*quiet, EarlierRuns(0, other_runs=2, other_shown=2)))
    neutral_first = POLICY.decide(case(done("r1", A)))
    informed_first = POLICY.decide(case(done("r1", A), history=history))
    assert informed_first.p_regression > neutral_first.p_regression
    assert informed_first.verdict is Verdict.REGRESSION


def test_earlier_runs_on_the_configuration_tell_a_regression_from_a_flake() -> None:
    priors = Priors()
    clean_then_failing = same_configuration((False,) * 6 + (True, True, True))
    scattered = same_configuration((True,) + (False,) * 5 + (True,) + (False,) * 5)
    assert priors.posterior({}, k=0, n=0, earlier=clean_then_failing) > 0.95
    assert priors.posterior({}, k=0, n=0, earlier=scattered) < 0.1  # prior 0.5
    # a streak: a regression on the first reproduction
    history = CaseHistory(earlier=clean_then_failing)
    assert POLICY.decide(case(done("r1", A), history=history)).verdict is Verdict.REGRESSION
    # scattered failures: two clean retriggers settle it as a flake
    history = CaseHistory(earlier=scattered)
    decision = POLICY.decide(case(done("r1"), done("r2"), history=history))
    assert decision.verdict is Verdict.INTERMITTENT
    assert decision.to_dict()["history"]["earlier_runs"] == [e.to_list() for e in scattered]


def test_other_configurations_tell_a_flake_from_a_regression() -> None:
    # Clean on this configuration; on the others the test failed now and then all along
    # (a flake, likely everywhere), or only since three pushes (a regression that landed
    # there and reached this configuration now).
    def history(failed_on_others) -> tuple[EarlierRuns, ...]:
        return tuple(
            EarlierRuns(ago, runs=1, other_runs=3, other_shown=int(failed_on_others(ago)))
            for ago in range(30, 0, -1)
        )

    priors = Priors()
    scattered = priors.posterior({}, k=1, n=2, earlier=history(lambda ago: ago % 6 == 0))
    recent = priors.posterior({}, k=1, n=2, earlier=history(lambda ago: ago <= 3))
    alone = priors.posterior({}, k=1, n=2, earlier=history(lambda ago: False))
    assert scattered < 0.2 < 0.5 < alone < 0.95 < recent


def test_a_long_clean_record_does_not_count_against_a_new_regression() -> None:
    priors = Priors()
    clean = same_configuration((False,) * 12)
    assert priors.posterior({}, k=1, n=1, earlier=clean) >= priors.posterior({}, k=1, n=1) - 0.01


def test_a_test_failing_often_since_the_first_known_push_is_no_regression_here() -> None:
    # A test that failed about two runs in three on every push sheriff knows: nothing shows
    # it ever passed, so nothing shows a change (world 20261211-12 called such a flake a
    # regression on push after push). The same failures after a clean stretch are one.
    often = (True, True, False, True, False, True, True, False, True, True)
    priors = Priors()
    since_the_start = same_configuration(often)
    after_clean = same_configuration((False,) * 6 + often)
    assert priors.posterior({}, k=2, n=3, earlier=since_the_start) < 0.5
    assert priors.posterior({}, k=2, n=3, earlier=after_clean) > 0.95


# A test that flakes about one run in four, failed every run for fifteen pushes (a
# regression, since fixed) and flakes again (world 20261216-14).
FLAKES = (False, True, False, False, False, True, False, False)
CAME_AND_WENT = same_configuration(FLAKES + (True,) * 15 + (False, False) + FLAKES * 2)
FIXED_THEN_CLEAN = same_configuration((False,) * 8 + (True,) * 15 + (False,) * 18)


def test_a_regression_that_came_and_went_is_not_how_often_the_test_flakes() -> None:
    priors = Priors(base_rate=0.3, flake=RateDistribution(3.0, 17.0))
    # A fresh failure that one retrigger did not reproduce is the test's flake again; read
    # as "failing since the old regression's push" it had P 0.17 (on that world such
    # failures, called regressions, made 59 false regression verdicts).
    assert priors.posterior({}, k=0, n=1, earlier=CAME_AND_WENT) < 0.05
    assert priors.posterior({}, k=1, n=3, earlier=CAME_AND_WENT) < 0.05
    span = priors.past_regression(0, 1, CAME_AND_WENT)
    assert span is not None
    assert (span.first_ago, span.last_ago, span.shown, span.runs) == (33, 19, 15, 15)
    # The same fixed regression, then clean runs, then a failure that reproduces: a new
    # regression (P 0.57 before a past regression could come and go).
    assert priors.posterior({}, k=1, n=1, earlier=FIXED_THEN_CLEAN) > 0.95
    # Reproductions still raise P and clean runs still lower it.
    ps = [priors.posterior({}, k=k, n=3, earlier=CAME_AND_WENT) for k in range(4)]
    assert ps == sorted(ps) and ps[3] > 0.5


def test_without_a_failure_before_no_past_regression_is_weighed() -> None:
    clean = same_configuration((False,) * 20)
    assert history_module._past_windows(clean).spans == ()
    assert Priors().past_regression(1, 1, clean) is None
    # Scattered flakes are no past regression: the flake rate tells them.
    scattered = same_configuration(FLAKES * 4)
    assert Priors(flake=RateDistribution(3.0, 17.0)).past_regression(0, 1, scattered) is None
    # A regression failing about half its runs and never fixed, clean on the last three
    # pushes by chance, did not come and go: three clean runs are no fall from one in two
    # (world 20261217-7 lost such cases), though the same three after a span failing
    # every run are one.
    half = (True, False, True, True, False, True, False, True, True, False) * 2
    spans = history_module._past_windows(same_configuration((False,) * 8 + half + (False,) * 3))
    assert (23, 5) not in {(s.first_ago, s.last_ago) for s in spans.spans}  # all of it
    every = history_module._past_windows(
        same_configuration((False,) * 8 + (True,) * 10 + (False,) * 3)
    )
    assert (13, 4) in {(s.first_ago, s.last_ago) for s in every.spans}


def test_the_evidence_names_a_past_regression() -> None:
    history = CaseHistory(priors=Priors(base_rate=0.3, flake=RateDistribution(3.0, 17.0)),
                          earlier=CAME_AND_WENT)  # fmt: skip
    decision = POLICY.decide(case(done("r1"), done("r2"), history=history))
    assert decision.verdict is Verdict.INTERMITTENT
    said = decision.to_dict()["history"]["past_regression"]
    assert said == {"from_pushes_ago": 33, "to_pushes_ago": 19, "runs": 15, "showed_line": 15}
    plain = POLICY.decide(case(done("r1"), done("r2")))
    assert "past_regression" not in plain.to_dict()["history"]


def test_at_the_cap_a_regression_needs_p_at_least_at_cap() -> None:
    # Two of five reproduced: the seed rule's regression. A fleet where regressions are
    # rare and flakes repeat often makes that an intermittent; one where regressions are
    # common and flakes rarely repeat makes it a regression.
    runs = [done("r1", A), done("r2", A), done("r3"), done("r4"), done("r5")]
    flaky_fleet = Priors(base_rate=0.05, flake=RateDistribution(6.0, 14.0))
    decision = POLICY.decide(case(*runs, history=CaseHistory(priors=flaky_fleet)))
    assert decision.kind is DecisionKind.VERDICT and decision.verdict is Verdict.INTERMITTENT
    assert decision.p_regression is not None and decision.p_regression < POLICY.at_cap
    assert "all 6 runs used" in decision.reason
    regression_fleet = Priors(base_rate=0.5, flake=RateDistribution(0.5, 19.5))
    decision = POLICY.decide(case(*runs, history=CaseHistory(priors=regression_fleet)))
    assert decision.verdict is Verdict.REGRESSION
    assert decision.p_regression is not None and decision.p_regression >= POLICY.at_cap
    # Between 0.5 and at_cap: more likely a regression, yet an intermittent verdict, since
    # a false regression costs more than a missed one; a lower at_cap flips it.
    middle = Priors(base_rate=0.4, flake=RateDistribution(1.0, 19.0))  # P about 0.62
    decision = POLICY.decide(case(*runs, history=CaseHistory(priors=middle)))
    assert decision.p_regression is not None and 0.5 <= decision.p_regression < POLICY.at_cap
    assert decision.verdict is Verdict.INTERMITTENT and f"< {POLICY.at_cap}" in decision.reason
    lenient = history_module.configured(at_cap=0.5)
    assert lenient.decide(case(*runs, history=CaseHistory(priors=middle))).verdict is (
        Verdict.REGRESSION
    )


def test_a_case_the_cap_would_call_intermittent_takes_more_runs_while_p_is_high_enough() -> None:
    """Two of five reproduced, P about 0.62: the cap says intermittent, yet five more runs
    could still tell a regression from a flake. With `runs_most` the case asks for them;
    without it (and when P is all but settled) the cap decides as before."""
    runs = [done("r1", A), done("r2", A), done("r3"), done("r4"), done("r5")]
    middle = CaseHistory(priors=Priors(base_rate=0.4, flake=RateDistribution(1.0, 19.0)))
    at_the_cap = POLICY.decide(case(*runs, history=middle))
    assert at_the_cap.verdict is Verdict.INTERMITTENT
    going_on = POLICY.decide(case(*runs, history=middle, runs_most=11))
    assert going_on.kind is DecisionKind.RETRIGGER and 1 <= going_on.retriggers <= 5
    assert going_on.p_regression == at_the_cap.p_regression
    assert "all 6 runs used, < 0.8 at the cap, yet P >= 0.1: up to 11 runs" in going_on.reason
    settled = CaseHistory(priors=Priors(base_rate=0.05, flake=RateDistribution(6.0, 14.0)))
    low = POLICY.decide(case(*runs, history=settled, runs_most=11))
    assert low.p_regression is not None and low.p_regression < POLICY.extend_from
    assert low.verdict is Verdict.INTERMITTENT and "all 6 runs used" in low.reason


def test_past_the_cap_only_upper_or_lower_decide_until_runs_most() -> None:
    """Past the cap a case is not called a regression at `at_cap`: more runs are what it
    went on for. Sure either way it is decided; at `runs_most` the cap's rule again."""
    runs = [done("r1", A), done("r2", A), done("r3"), done("r4"), done("r5")]
    middle = CaseHistory(priors=Priors(base_rate=0.4, flake=RateDistribution(1.0, 19.0)))

    def decide(*more: str | None) -> Decision:
        extra = [done(f"s{i}", *((line,) if line else ())) for i, line in enumerate(more)]
        return POLICY.decide(case(*runs, *extra, history=middle, runs_most=11))

    one_more = decide(A)  # 3 of 6: P about 0.88, over at_cap, under upper
    assert one_more.p_regression is not None
    assert POLICY.at_cap <= one_more.p_regression < POLICY.upper
    assert one_more.kind is DecisionKind.RETRIGGER and "past the cap of 6 runs" in one_more.reason
    assert decide(A, A, A, A, None).verdict is Verdict.REGRESSION  # 6 of 10, P >= upper
    last = decide(A, A, None, None, None)  # 4 of 10, P about 0.8 - a hair
    assert last.verdict is Verdict.INTERMITTENT and "all 11 runs used" in last.reason
    # Where the runs past the cap stop, only `upper` makes a regression: 5 of 10 is P
    # about 0.95, a regression at the cap's `at_cap`, not past it.
    unsure = decide(A, A, A, None, None)
    assert unsure.p_regression is not None and POLICY.at_cap <= unsure.p_regression < POLICY.upper
    assert unsure.verdict is Verdict.INTERMITTENT and "< 0.98 past the cap" in unsure.reason
    assert decide(None, None, None, None, None).verdict is Verdict.INTERMITTENT


def test_a_regression_at_the_cap_is_decided_there_whatever_runs_most() -> None:
    runs = [done("r1", A), done("r2", A), done("r3"), done("r4"), done("r5")]
    fleet = CaseHistory(priors=Priors(base_rate=0.5, flake=RateDistribution(0.5, 19.5)))
    decision = POLICY.decide(case(*runs, history=fleet, runs_most=11))
    assert decision.verdict is Verdict.REGRESSION and "all 6 runs used" in decision.reason


def test_a_case_out_of_reach_at_the_cap_is_not_cut_while_runs_past_it_could_turn_it() -> None:
    """A clean test, two of four reproduced, one run left: no outcome of that run makes a
    regression at the cap, but the runs past it could, so the case is not cut short."""
    fleet = Priors(
        base_rate=0.077, flake=RateDistribution(3.67, 16.33), regression=RateDistribution(1.5, 0.5)
    )
    quiet = tuple(EarlierRuns(ago, runs=1, other_runs=1) for ago in range(10, 0, -1))
    history = CaseHistory(priors=fleet, earlier=(*quiet, EarlierRuns(0, other_runs=1)))
    runs = [done("r1", A), done("r2", A), done("r3"), done("r4")]
    cut = POLICY.decide(case(*runs, history=history))
    assert cut.verdict is Verdict.INTERMITTENT and "however the 1 run left" in cut.reason
    going_on = POLICY.decide(case(*runs, history=history, runs_most=11))
    assert going_on.kind is DecisionKind.RETRIGGER and going_on.retriggers == 1


def test_runs_most_is_never_below_runs_wanted() -> None:
    with pytest.raises(ValueError, match="runs_most"):
        case(runs_wanted=6, runs_most=5)


def test_the_threshold_at_the_cap_lies_between_the_bounds() -> None:
    with pytest.raises(ValueError, match="at_cap"):
        history_module.configured(at_cap=0.99)
    with pytest.raises(ValueError, match="at_cap"):
        history_module.configured(at_cap=0.01)


def test_never_asks_beyond_runs_wanted() -> None:
    decision = POLICY.decide(case(done("r1", A), runs_wanted=3))
    assert decision.kind is DecisionKind.RETRIGGER and decision.retriggers == 1


def test_an_original_without_lines_is_intermittent() -> None:
    bare = RunEvidence("orig", resolved=True, result="testfailed", lines_known=True)
    decision = POLICY.decide(CaseEvidence(bare, history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT


def test_evidence_says_why() -> None:
    history = CaseHistory(features={"open_bug": False}, facts={"earlier_pushes_with_line": 0})
    decision = POLICY.decide(case(done("r1", A), pending("r2"), history=history))
    data = json.loads(json.dumps(decision.to_dict()))
    assert data["p_regression"] == decision.p_regression
    h = data["history"]
    assert h["k"] == 1 and h["n"] == 1 and h["features"] == {"open_bug": False}
    assert h["facts"] == {"earlier_pushes_with_line": 0}
    assert h["thresholds"] == {
        "lower": 0.05,
        "upper": 0.98,
        "at_cap": 0.8,
        "min_clean_runs": 2,
        "min_clean_runs_with_bug": 1,
        "waiver_ceiling": 0.1,
        "extend_from": 0.1,
    }
    assert h["priors"]["cases"] == 0 and "P(regression)" in data["reason"]


def test_seed_decisions_are_unchanged_in_form() -> None:
    data = get_policy("seed").decide(case()).to_dict()
    assert "p_regression" not in data and "history" not in data


@pytest.mark.parametrize(
    "bad",
    [
        {"upper": 0.4},
        {"lower": 0.6},
        {"lower": 0.0},
        {"min_clean_runs": -1},
        {"min_clean_runs_with_bug": -1},
    ],
)
def test_bad_thresholds_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        configured(**bad)  # type: ignore[arg-type]


def test_configured_thresholds_apply() -> None:
    strict = configured(upper=0.999)
    assert isinstance(strict, HistoryPolicy) and strict.upper == 0.999
    runs = (done("r1", A), done("r2", A), done("r3", A))
    assert POLICY.decide(case(*runs)).kind is DecisionKind.VERDICT
    assert strict.decide(case(*runs)).kind is DecisionKind.RETRIGGER


def test_at_the_cap_no_reproduction_and_nothing_before_is_no_regression() -> None:
    """Five clean retriggers, the line never shown on an earlier push: however the other
    configurations of this push failed (a flaky test with a high rate does that), the cap
    does not make a regression of it."""
    quiet = tuple(EarlierRuns(ago, runs=1, other_runs=4) for ago in range(20, 0, -1))
    history = CaseHistory(earlier=(*quiet, EarlierRuns(0, other_runs=9, other_shown=5)))
    clean = [done(f"r{i}") for i in range(5)]
    decision = POLICY.decide(case(*clean, history=history))
    assert decision.p_regression is not None and decision.p_regression >= POLICY.at_cap
    assert decision.verdict is Verdict.INTERMITTENT
    assert "never shown on an earlier push" in decision.reason


def test_an_unparsed_original_is_compared_by_its_errorsummarys_tests() -> None:
    """Treeherder could not parse the original's log: the errorsummary's failing tests
    stand in for its lines, retriggers whose lines name them reproduce it, and without
    history to weigh the seed rule's count decides, staged."""
    from sheriff.model.errorsummary import FailureKind, StructuredFailure

    unparsed = RunEvidence(
        "orig",
        resolved=True,
        result="testfailed",
        log_unparsed=True,
        structured_failures=(
            StructuredFailure("dom/a/test_a.html", None, "FAIL", FailureKind.TEST),
        ),
    )
    first = POLICY.decide(CaseEvidence(unparsed, history=NEUTRAL))
    assert first.kind is DecisionKind.RETRIGGER and first.retriggers == 2
    again = [done("r1", A), done("r2", A)]
    decision = POLICY.decide(CaseEvidence(unparsed, tuple(again), history=NEUTRAL))
    assert decision.verdict is Verdict.REGRESSION and decision.details["k"] == 2
    decision = POLICY.decide(CaseEvidence(unparsed, (done("r1", OTHER), done("r2", A))))
    assert decision.kind is DecisionKind.RETRIGGER and decision.retriggers == 1
    clean = [done("r1", OTHER), done("r2", A), *(done(f"r{i}") for i in range(3, 6))]
    decision = POLICY.decide(CaseEvidence(unparsed, tuple(clean), history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT and decision.details["k"] == 1
    # Without an errorsummary either, there is nothing to compare: intermittent at once.
    bare = replace(unparsed, structured_failures=())
    decision = POLICY.decide(CaseEvidence(bare, history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT and "no failure line" in decision.reason


CRASH = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + <ptr>] | pid: <pid>"
OTHER_CRASH = "PROCESS-CRASH | application crashed [@ mozilla::Baz::Qux + <ptr>] | pid: <pid>"


def crashed(task_id: str, *crashes: str) -> RunEvidence:
    result = "testfailed" if crashes else "success"
    return RunEvidence(task_id, resolved=True, result=result, lines_known=True,
                       crash_lines=crashes, requested_by_sheriff=True)  # fmt: skip


def test_a_crash_between_tests_is_compared_by_its_crash_line() -> None:
    """An original whose only failure line is a PROCESS-CRASH line (it names no test):
    under `history` retriggers with the same normalised crash line reproduce it and the
    seed rule's count decides, saying so: staged, as in `seed-staged` (waves just large
    enough that the verdict could be due, decided once the runs left cannot change it);
    `seed` never compares crash lines."""
    original = crashed("orig", CRASH)
    first = POLICY.decide(CaseEvidence(original, history=NEUTRAL))
    assert first.kind is DecisionKind.RETRIGGER and first.retriggers == 2
    two = [crashed("r1", CRASH), crashed("r2", CRASH)]
    decision = POLICY.decide(CaseEvidence(original, tuple(two), history=NEUTRAL))
    assert decision.verdict is Verdict.REGRESSION and decision.details["k"] == 2
    assert "PROCESS-CRASH" in decision.reason and "same signature" in decision.reason
    assert "3 more runs could not change it" in decision.reason
    assert decision.to_dict()["history"]["crash_lines"] == [CRASH]
    # While a run is in flight, no new wave; then one more, as one could make it due.
    half = [crashed("r1", CRASH), crashed("r2"), pending("r3")]
    decision = POLICY.decide(CaseEvidence(original, tuple(half), history=NEUTRAL))
    assert decision.kind is DecisionKind.WAIT
    decision = POLICY.decide(CaseEvidence(original, tuple(half[:2]), history=NEUTRAL))
    assert decision.kind is DecisionKind.RETRIGGER and decision.retriggers == 1
    # No crash in four: the run in flight cannot make two; it is cancelled.
    clean = [*(crashed(f"r{i}") for i in range(1, 5)), pending("r5")]
    decision = POLICY.decide(CaseEvidence(original, tuple(clean), history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT and decision.details["k"] == 0
    assert decision.cancel == ("r5",)
    two = [*two, *(crashed(f"r{i}") for i in range(3, 6))]
    # Another signature is another crash: one reproduction is not a regression.
    one = [
        crashed("r1", CRASH),
        crashed("r2", OTHER_CRASH),
        *(crashed(f"r{i}") for i in range(3, 6)),
    ]
    decision = POLICY.decide(CaseEvidence(original, tuple(one), history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT and decision.details["k"] == 1
    # The seed rule compares TEST-UNEXPECTED lines only (SPEC §3 step 8): intermittent.
    seed = get_policy("seed").decide(CaseEvidence(original, tuple(two)))
    assert seed.verdict is Verdict.INTERMITTENT and seed.evidence.reproducing == ()


def _crash_past(since: int) -> tuple[EarlierRuns, ...]:
    """40 earlier pushes of the crash's suite chunk (one run on the case's configuration,
    four on others): the signature on a quarter of the runs of the last `since` pushes,
    never before them."""
    return tuple(
        EarlierRuns(
            ago,
            runs=1,
            shown=int(ago <= since and ago % 4 == 0),
            other_runs=4,
            other_shown=int(ago <= since),
        )
        for ago in range(40, 0, -1)
    )


def test_a_crash_new_in_its_chunk_is_a_regression_once_it_reproduced() -> None:
    """A crash between tests with its suite chunk's past: a signature never seen for 30
    pushes that crashes a quarter of the chunk's runs since is a regression as soon as a
    retrigger reproduced it (P >= upper, as for a test line), where the seed rule's count
    needs two; one that crashed as often all along stays intermittent at 1 of 5. Short of
    the count, a run left that could make it a regression at the cap is asked for, not cut
    short, and once every run is in, P >= at_cap makes it one, as for a test line."""
    original = crashed("orig", CRASH)
    one = (crashed("r1", CRASH), *(crashed(f"r{i}") for i in range(2, 6)))
    none_in_four = tuple(crashed(f"r{i}") for i in range(1, 5))
    new, steady = (CaseHistory(crashes={CRASH: _crash_past(since)}) for since in (10, 40))

    decision = POLICY.decide(CaseEvidence(original, one[:1], history=new))
    assert decision.verdict is Verdict.REGRESSION and decision.p_regression >= POLICY.upper
    assert "the signature on 12 of 200 earlier runs of its suite chunk" in decision.reason
    past = decision.to_dict()["history"]["crash_past"]
    assert past["earlier_pushes_with_crash"] == 10 and past["earlier_runs_crashed"] == 12
    assert past["line"] == CRASH and past["p"] >= POLICY.upper

    decision = POLICY.decide(CaseEvidence(original, one, history=steady))
    assert decision.verdict is Verdict.INTERMITTENT and decision.p_regression < 0.1
    assert "2 needed for a regression, the seed rule" in decision.reason
    # Without the chunk's past (no store), the count alone, as before.
    decision = POLICY.decide(CaseEvidence(original, one, history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT

    decision = POLICY.decide(CaseEvidence(original, none_in_four, history=new))
    assert decision.kind is DecisionKind.RETRIGGER and decision.retriggers == 1
    decision = POLICY.decide(CaseEvidence(original, none_in_four, history=steady))
    assert decision.verdict is Verdict.INTERMITTENT
    assert "1 more run could not change it" in decision.reason
    # All runs used short of the count: the chunk's past weighs them as a test line's does
    # at the cap (P >= at_cap, once reproduced or shown on an earlier push).
    none_in_five = (*none_in_four, crashed("r5"))
    decision = POLICY.decide(CaseEvidence(original, none_in_five, history=new))
    assert decision.verdict is Verdict.REGRESSION and decision.p_regression >= POLICY.at_cap
    assert "all runs used" in decision.reason
    assert f">= {POLICY.at_cap} at the cap" in decision.reason
    assert decision.to_dict()["history"]["crash_past"]["earlier_runs_crashed"] == 12
    decision = POLICY.decide(CaseEvidence(original, none_in_five, history=steady))
    assert decision.verdict is Verdict.INTERMITTENT
    # Seen once on the push before, not reproduced in five: P short of at_cap.
    once = CaseHistory(crashes={CRASH: _crash_past(1)})
    decision = POLICY.decide(CaseEvidence(original, none_in_five, history=once))
    assert decision.verdict is Verdict.INTERMITTENT and decision.p_regression < POLICY.at_cap
    # A retrigger that crashed otherwise does not reproduce it.
    other = (crashed("r1", OTHER_CRASH), *one[1:])
    decision = POLICY.decide(CaseEvidence(original, other, history=once))
    assert decision.verdict is Verdict.INTERMITTENT and decision.details["k"] == 0


def test_a_crash_between_tests_beside_a_test_failure_is_judged_on_its_own() -> None:
    """A crash that no TEST-UNEXPECTED line of the original accounts for is judged by its
    crash line whenever the test lines do not make the case a regression: a crash
    regression fails in runs where another test flakes. A crash of a test that one of the
    lines names is that line's failure: the lines decide, as before. The crash's count is
    staged: its waves are the lines' waves or just enough to make it due, if larger."""

    def lines_alone(*runs: RunEvidence) -> Decision:
        return POLICY.decide(CaseEvidence(ORIGINAL, runs, history=NEUTRAL))

    original = replace(ORIGINAL, crash_lines=(CRASH,))
    first = POLICY.decide(CaseEvidence(original, history=NEUTRAL))
    assert lines_alone().kind is DecisionKind.RETRIGGER and lines_alone().retriggers == 3
    assert first.kind is DecisionKind.RETRIGGER and first.retriggers == 3
    crashing = [
        replace(done(f"r{i}"), result="testfailed", crash_lines=(CRASH,)) for i in range(1, 6)
    ]
    decision = POLICY.decide(CaseEvidence(original, tuple(crashing), history=NEUTRAL))
    assert decision.verdict is Verdict.REGRESSION and decision.details["k"] == 5
    assert "none of its failure lines accounts for it" in decision.reason
    assert "its failure lines: P(regression)" in decision.reason
    assert regression_lines(decision.to_dict()) == [CRASH]
    # Two crashes are a regression whatever the lines and the runs in flight would say.
    early = (*crashing[:2], pending("r3"))
    decision = POLICY.decide(CaseEvidence(original, early, history=NEUTRAL))
    assert decision.verdict is Verdict.REGRESSION and decision.details["k"] == 2
    assert decision.cancel == ("r3",)
    # Neither the test line nor the crash came back: intermittent.
    clean = [done(f"r{i}") for i in range(1, 6)]
    decision = POLICY.decide(CaseEvidence(original, tuple(clean[:2]), history=NEUTRAL))
    assert decision.kind is DecisionKind.RETRIGGER and decision.retriggers == 3
    assert lines_alone(*clean[:2]).retriggers == 3
    decision = POLICY.decide(CaseEvidence(original, tuple(clean), history=NEUTRAL))
    assert decision.verdict is Verdict.INTERMITTENT and decision.details["k"] == 0
    # Once the crash can no longer make a regression, lines still to decide go on alone.
    flaky = [done("r1", A), done("r2", A), done("r3"), done("r4", A)]
    alone = lines_alone(*flaky)
    assert alone.kind is not DecisionKind.VERDICT
    decision = POLICY.decide(CaseEvidence(original, tuple(flaky), history=NEUTRAL))
    assert (decision.kind, decision.reason) == (alone.kind, alone.reason)
    # The crash of the failing test itself (xpcshell names it `manifest:test`).
    own = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + <ptr>] | "
    for crash in (own + "dom/a/test_a.html", own + "xpcshell.toml:dom/a/test_a.html"):
        original = replace(ORIGINAL, crash_lines=(crash,))
        runs = [
            replace(done(f"r{i}"), result="testfailed", crash_lines=(crash,)) for i in range(1, 6)
        ]
        decision = POLICY.decide(CaseEvidence(original, tuple(runs), history=NEUTRAL))
        assert decision.verdict is Verdict.INTERMITTENT and decision.details["k"] == 0


def test_the_flake_prior_is_wide_until_the_fleets_flakes_are_seen() -> None:
    """On a repository's first pushes nothing says how often its flakes fail: a test
    failing three of five retriggers on push 2, having failed five of nine runs on push 1
    and passed push 0's one run, is what a flake failing half its runs does, and a prior
    sure that flakes fail a run in ten called it a regression. The flake prior starts wide
    and narrows as the model's own intermittent verdicts come in."""
    earlier = (
        EarlierRuns(2, runs=0, other_runs=1),
        EarlierRuns(1, runs=4, shown=2, other_runs=5, other_shown=3),
        EarlierRuns(0, other_runs=1),
    )
    unseen = fit_priors([])
    seen = fit_priors([PastCase(p=0.01, k=0, n=2, regression=False)] * 10)
    assert unseen.flake.a + unseen.flake.b == pytest.approx(5.0)
    assert seen.flake.a + seen.flake.b == pytest.approx(20.0)
    half = fit_priors([PastCase(p=0.01, k=0, n=2, regression=False)] * 5)
    assert 5.0 < half.flake.a + half.flake.b < 20.0
    # Not a regression at the cap (at_cap 0.8) with nothing fitted ...
    assert unseen.posterior({}, k=3, n=5, earlier=earlier) < HistoryPolicy().at_cap
    # ... where the narrow prior, with the same base rate, made it one.
    narrow = replace(unseen, flake=RateDistribution(2.0, 18.0))
    assert narrow.posterior({}, k=3, n=5, earlier=earlier) > HistoryPolicy().at_cap


def test_a_case_no_run_left_could_make_a_regression_is_decided_without_them() -> None:
    """A test that failed about half its runs on every earlier push: even five
    reproductions of five would leave P far below `at_cap`, and 5 of 5 is a rate the test
    already showed, so the cap's five retriggers would only reach the verdict it gives
    anyway."""
    flaky = tuple(
        EarlierRuns(ago, runs=2, shown=1, other_runs=4, other_shown=2) for ago in range(30, 0, -1)
    )
    decision = POLICY.decide(case(history=CaseHistory(earlier=flaky)))
    assert decision.verdict is Verdict.INTERMITTENT and decision.retriggers == 0
    assert "however the 5 runs left came out" in decision.reason
    assert "but the test failed at a comparable rate before this push" in decision.reason
    # A test that never failed before: the runs left can make it a regression.
    quiet = tuple(EarlierRuns(ago, runs=2, other_runs=4) for ago in range(30, 0, -1))
    assert POLICY.decide(case(history=CaseHistory(earlier=quiet))).kind is DecisionKind.RETRIGGER
    # Past failures at a rate the retriggers could beat: 4 of 5 would be news.
    rare = tuple(
        EarlierRuns(ago, runs=2, shown=int(ago == 7), other_runs=4) for ago in range(30, 0, -1)
    )
    assert POLICY.decide(case(history=CaseHistory(earlier=rare))).kind is DecisionKind.RETRIGGER


def test_a_verdict_cut_short_counts_for_the_base_rate_but_teaches_no_repeat_rate() -> None:
    """A case decided before the cap because no outcome could make a regression stopped
    on the fit's own belief, often after a flaky test reproduced 3 of 3: its tally must
    not teach the flakes' repeat rate (they would "repeat" more and more), while its
    verdict still counts as an intermittent one."""
    settled = [PastCase(p=0.01, k=0, n=2, regression=False)] * 10
    cut = [PastCase(p=0.2, k=3, n=3, regression=False, out_of_reach=True)] * 10
    alone, both = fit_priors(settled), fit_priors(settled + cut)
    assert both.flake == alone.flake and both.regression == alone.regression
    # For the base rate each counts by its P(regression): forced, not sure.
    assert both.base_rate == pytest.approx((10 * 0.2 + 1) / (20 + 2)) and both.cases == 20
    # Fitted as ordinary verdicts, the same tallies would have taught that flakes repeat.
    plain = [PastCase(p=0.2, k=3, n=3, regression=False)] * 10
    assert fit_priors(settled + plain).flake.mean > alone.flake.mean
    # The policy marks such a verdict in its evidence, and the store reads the mark back.
    flaky = tuple(
        EarlierRuns(ago, runs=2, shown=1, other_runs=4, other_shown=2) for ago in range(30, 0, -1)
    )
    decision = POLICY.decide(case(history=CaseHistory(earlier=flaky)))
    assert decision.details["out_of_reach"] is True
    from sheriff.store.history import _past_case

    past = _past_case(decision.p_regression, {"history": decision.details}, regression=False)
    assert past is not None and past.out_of_reach


def test_a_push_where_other_tests_began_failing_is_where_a_regression_likely_landed() -> None:
    # Clean on 50 pushes, then failing about one run in six since the push 30 back (the
    # 11-test regression of world 20261229-10 failed its tests 18 % of runs): spread
    # over every earlier push, the change point barely beats a flake's story; at a push
    # where three other tests began failing, it does: two of five retriggers reproduced
    # make the case a regression at the cap (P >= 0.8) there, and not without.
    since = {29, 23, 17, 11, 4}
    runs = [
        EarlierRuns(ago, runs=1, shown=int(ago in since), other_runs=3) for ago in range(80, 0, -1)
    ]
    landing = [replace(e, onsets=3) if e.ago == 30 else e for e in runs]
    fewer = [replace(e, onsets=2) if e.ago == 30 else e for e in runs]
    priors = Priors()
    spread = priors.posterior({}, k=2, n=5, earlier=runs)
    assert priors.posterior({}, k=2, n=5, earlier=fewer) == spread
    assert spread < POLICY.at_cap < priors.posterior({}, k=2, n=5, earlier=landing)
    # Another regression's push, long before this test changed, never lowers P.
    elsewhere = [replace(e, onsets=5) if e.ago == 60 else e for e in runs]
    assert priors.posterior({}, k=2, n=5, earlier=elsewhere) >= spread
    # A flake failing now and then all along is a flake, whatever began failing beside it.
    scattered = [replace(e, shown=int(e.ago % 7 == 0)) for e in landing]
    assert priors.posterior({}, k=2, n=5, earlier=scattered) < 0.1


def test_tests_begin_failing_only_after_a_clean_stretch() -> None:
    failing = [{"a"}, {"b"}, *([set()] * (ONSET_CLEAN_PUSHES - 2)), {"a", "c", "d"}, {"c", "e"}]
    began = first_failures(failing)
    assert began[:ONSET_CLEAN_PUSHES] == [frozenset()] * ONSET_CLEAN_PUSHES
    assert began[ONSET_CLEAN_PUSHES:] == [{"c", "d"}, {"e"}]
    n = ONSET_CLEAN_PUSHES
    assert began_failing(failing) == {"c": n, "d": n, "e": n + 1}
