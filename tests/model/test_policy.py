"""The verdict policies: `seed` is SPEC §3 steps 6-8 exactly; `seed-early` agrees with it."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheriff.model.case import CaseState
from sheriff.model.errorsummary import FailureKind, StructuredFailure
from sheriff.model.policy import (
    POLICIES,
    CaseEvidence,
    DecisionKind,
    RunEvidence,
    UnknownPolicyError,
    Verdict,
    get_policy,
)

SEED = get_policy("seed")
EARLY = get_policy("seed-early")

A = "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got <n>, expected <n>"
B = "TEST-UNEXPECTED-TIMEOUT | dom/a/test_b.html | Test timed out."
C = "TEST-UNEXPECTED-FAIL | dom/c/test_c.html | boom"
ORIGINAL = RunEvidence("orig", resolved=True, result="testfailed", lines_known=True,
                       failure_lines=(A, B))  # fmt: skip


def done(
    task_id: str, *lines: str, result: str = "testfailed", sheriff: bool = True
) -> RunEvidence:
    """A retrigger that is resolved and parsed."""
    outcome = result if lines or result != "testfailed" else "success"
    return RunEvidence(task_id, resolved=True, result=outcome, lines_known=True,
                       failure_lines=lines, requested_by_sheriff=sheriff)  # fmt: skip


def pending(task_id: str, sheriff: bool = True) -> RunEvidence:
    return RunEvidence(task_id, requested_by_sheriff=sheriff)


def case(
    *retriggers: RunEvidence, requested: int = 0, original: RunEvidence = ORIGINAL
) -> CaseEvidence:
    return CaseEvidence(original=original, retriggers=retriggers, requested_not_visible=requested)


# --- seed: planning (step 6) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("retriggers", "requested", "asked"),
    [
        ((), 0, 5),
        ((pending("r1", sheriff=False),), 0, 4),  # a person's retrigger, still pending
        ((pending("r1"), done("r2")), 2, 1),  # visible ones + an action task not run yet
        ((pending("r1"),), 4, 0),
        (tuple(done(f"r{i}") for i in range(7)), 0, 0),  # more than wanted already: none
    ],
)
def test_seed_asks_only_for_the_difference(retriggers, requested, asked) -> None:
    decision = SEED.decide(case(*retriggers, requested=requested))
    if asked:
        assert decision.kind is DecisionKind.RETRIGGER and decision.retriggers == asked
        assert decision.case_state is CaseState.PLANNED
    else:
        assert decision.kind is not DecisionKind.RETRIGGER


def test_seed_never_asks_twice_once_the_request_is_counted() -> None:
    first = SEED.decide(case(pending("r1")))
    assert first.retriggers == 4
    again = SEED.decide(case(pending("r1"), requested=first.retriggers))
    assert again.kind is DecisionKind.WAIT and again.case_state is CaseState.WAITING


def test_seed_plans_before_the_original_is_parsed() -> None:
    unparsed = replace(ORIGINAL, lines_known=False, failure_lines=())
    assert SEED.decide(case(original=unparsed)).retriggers == 5


# --- seed: waiting (step 7) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "waiting_for"),
    [
        (case(*(done(f"r{i}") for i in range(4)), pending("r4")), "1 retrigger"),
        (
            case(*(done(f"r{i}") for i in range(4)),
                 RunEvidence("r4", resolved=True, result="testfailed")),  # not parsed yet
            "1 retrigger",
        ),
        (case(*(done(f"r{i}") for i in range(3)), requested=2), "2 requested runs"),
        (
            case(*(done(f"r{i}", A) for i in range(5)),
                 original=replace(ORIGINAL, lines_known=False)),
            "the original's failure lines",
        ),
    ],
)  # fmt: skip
def test_seed_waits_until_every_run_is_settled(evidence, waiting_for) -> None:
    decision = SEED.decide(evidence)
    assert decision.kind is DecisionKind.WAIT
    assert waiting_for in decision.reason


# --- seed: comparing (step 8) ----------------------------------------------------------------


def test_two_reproductions_make_a_regression_with_per_line_counts() -> None:
    decision = SEED.decide(
        case(done("r1", A), done("r2", A, C), done("r3"), done("r4"), done("r5", C))
    )
    assert decision.kind is DecisionKind.VERDICT and decision.verdict is Verdict.REGRESSION
    assert decision.case_state is CaseState.REGRESSION
    ev = decision.evidence
    assert ev.reproducing == ("r1", "r2")
    assert [(r.line, r.retriggers, r.task_ids) for r in ev.lines] == [
        (A, 2, ("r1", "r2")),
        (B, 0, ()),
    ]
    assert ev.runs_counted == 6 and ev.rule == SEED.rule


def test_one_reproduction_is_intermittent() -> None:
    decision = SEED.decide(case(done("r1", A), done("r2", C), done("r3"), done("r4"), done("r5")))
    assert decision.verdict is Verdict.INTERMITTENT
    assert decision.case_state is CaseState.INTERMITTENT


def test_retriggers_showing_different_lines_of_the_original_both_count() -> None:
    # "at least 2 retriggers show a failure line of the original": any of its lines.
    decision = SEED.decide(case(done("r1", A), done("r2", B), done("r3"), done("r4"), done("r5")))
    assert decision.verdict is Verdict.REGRESSION


def test_a_line_of_another_test_is_no_reproduction() -> None:
    decision = SEED.decide(case(*(done(f"r{i}", C) for i in range(5))))
    assert decision.verdict is Verdict.INTERMITTENT and decision.evidence.reproducing == ()


def test_void_runs_count_as_runs_but_never_as_reproductions() -> None:
    void = (
        RunEvidence("x1", resolved=True, result="exception", failure_lines=(A,)),
        RunEvidence("x2", resolved=True, result="testfailed", log_unparsed=True),
        RunEvidence("x3", resolved=True, result="usercancel"),
    )
    decision = SEED.decide(case(*void, done("r1", A), done("r2")))
    assert decision.kind is DecisionKind.VERDICT  # no replacement runs asked for
    assert decision.verdict is Verdict.INTERMITTENT
    assert decision.evidence.void == ("x1", "x2", "x3")
    assert decision.evidence.runs_counted == 3


def test_a_run_that_failed_without_a_failure_is_void() -> None:
    # A worker pool's storm fails tasks before or beside any test: no failure line, no
    # crash, no failed test in the errorsummary. Such a run says nothing about the test.
    def failed(task_id: str, *lines: str, **kw: object) -> RunEvidence:
        return RunEvidence(task_id, resolved=True, result="testfailed", lines_known=True,
                           failure_lines=lines, **kw)  # type: ignore[arg-type]  # fmt: skip

    group_only = (StructuredFailure("dom/a/mochitest.toml", None, "ERROR", FailureKind.GROUP),)
    storm = failed("s1"), failed("s2", structured_failures=group_only)
    assert all(run.void and run.failed_without_a_failure for run in storm)
    crash = failed("c1", crash_lines=("PROCESS-CRASH | application crashed [@ Foo]",))
    by_summary = failed("e1", structured_failures=(StructuredFailure("a.js", None, "FAIL"),))
    other_test = failed("o1", C)
    assert not any(run.void for run in (crash, by_summary, other_test))
    unread = RunEvidence("u1", resolved=True, result="testfailed")  # lines still to come
    assert not unread.void and not unread.settled
    decision = SEED.decide(case(*storm, done("r1", A), done("r2"), done("r3", A)))
    assert decision.evidence.void == ("s1", "s2")
    assert decision.evidence.runs_counted == 4
    assert decision.verdict is Verdict.REGRESSION  # the seed rule's count is unchanged


def test_every_existing_run_counts_even_beyond_six() -> None:
    runs = [done(f"r{i}") for i in range(7)] + [done("p1", A, sheriff=False), done("p2", B)]
    assert SEED.decide(case(*runs)).verdict is Verdict.REGRESSION


def test_an_original_without_failure_lines_is_intermittent_after_the_runs() -> None:
    bare = replace(ORIGINAL, failure_lines=())
    assert SEED.decide(case(original=bare)).retriggers == 5  # the exact rule still plans
    decision = SEED.decide(case(*(done(f"r{i}", A) for i in range(5)), original=bare))
    assert decision.verdict is Verdict.INTERMITTENT


def test_an_unparsable_original_log_counts_as_no_lines() -> None:
    unparsable = replace(ORIGINAL, lines_known=False, failure_lines=(), log_unparsed=True)
    decision = SEED.decide(case(*(done(f"r{i}", A) for i in range(5)), original=unparsable))
    assert decision.verdict is Verdict.INTERMITTENT


def test_structured_failures_are_counted_as_a_second_source() -> None:
    crash = StructuredFailure("dom/a/test_a.html", "Foo [@ <ptr>]", "CRASH", FailureKind.CRASH)
    fail = StructuredFailure("dom/a/test_a.html", "got <n>", "FAIL")
    original = replace(ORIGINAL, structured_failures=(fail, crash))
    r1 = replace(done("r1", A), structured_failures=(fail,))
    decision = SEED.decide(case(r1, *(done(f"r{i}") for i in range(2, 6)), original=original))
    assert [(s.failure, s.task_ids) for s in decision.evidence.structured] == [
        (fail, ("r1",)),
        (crash, ()),
    ]


def test_decisions_serialise_to_json() -> None:
    decision = SEED.decide(
        case(done("r1", A), done("r2", A), *(done(f"r{i}") for i in range(3, 6)))
    )
    data = json.loads(json.dumps(decision.to_dict()))
    assert data["kind"] == "verdict" and data["verdict"] == "regression"
    assert data["lines"][0] == {"line": A, "retriggers": 2, "task_ids": ["r1", "r2"]}
    assert data["policy"] == "seed" and data["runs_counted"] == 6


def test_settings_for_runs_and_reproductions() -> None:
    evidence = CaseEvidence(ORIGINAL, (done("r1", A),), runs_wanted=2, min_reproductions=1)
    assert SEED.decide(evidence).verdict is Verdict.REGRESSION
    assert SEED.decide(replace(evidence, runs_wanted=4)).retriggers == 2


@pytest.mark.parametrize(
    "bad",
    [
        {"runs_wanted": 0},
        {"min_reproductions": 0},
        {"requested_not_visible": -1},
        {"retriggers": (pending("r1"), pending("r1"))},
        {"retriggers": (pending("orig"),)},
    ],
)
def test_inconsistent_evidence_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CaseEvidence(original=ORIGINAL, **bad)  # type: ignore[arg-type]


# --- seed-early --------------------------------------------------------------------------------


def test_early_regression_cancels_sheriffs_unfinished_runs_only() -> None:
    runs = (done("r1", A), done("r2", B), pending("r3"), pending("r4", sheriff=False),
            RunEvidence("r5", resolved=True, result="testfailed"))  # fmt: skip
    decision = EARLY.decide(case(*runs))
    assert decision.verdict is Verdict.REGRESSION
    assert decision.cancel == ("r3",)
    assert SEED.decide(case(*runs)).kind is DecisionKind.WAIT


def test_early_intermittent_when_two_reproductions_are_out_of_reach() -> None:
    runs = (done("r1", C), done("r2"), done("r3"), done("r4"), pending("r5"))
    decision = EARLY.decide(case(*runs))
    assert decision.verdict is Verdict.INTERMITTENT and decision.cancel == ("r5",)
    still_open = EARLY.decide(
        case(done("r1", A), done("r2"), done("r3"), pending("r4"), pending("r5"))
    )
    assert still_open.kind is DecisionKind.WAIT


def test_early_intermittent_without_retriggers_when_the_original_has_no_lines() -> None:
    decision = EARLY.decide(case(original=replace(ORIGINAL, failure_lines=())))
    assert decision.verdict is Verdict.INTERMITTENT and decision.cancel == ()


def test_early_plans_like_seed_while_undecided() -> None:
    all_at_once = get_policy("seed-early")
    for evidence in (case(), case(pending("r1"), requested=1), case(done("r1", A), requested=4)):
        early, seed = all_at_once.decide(evidence), SEED.decide(evidence)
        assert (early.kind, early.retriggers) == (seed.kind, seed.retriggers)
        assert early.evidence.policy == "seed-early"


@pytest.mark.parametrize(
    ("retriggers", "requested", "asked"),
    [
        ((), 0, 2),  # a first wave that could make it a regression on its own
        ((pending("r1"),), 0, 0),  # a run in flight: wait for it
        ((done("r1"),), 2, 0),  # requested runs not created yet: wait for them
        ((done("r1"), done("r2")), 0, 2),  # neither reproduced: the next wave
        ((done("r1", A), done("r2")), 0, 1),  # one did: one more could decide
        ((done("r1", A), done("r2"), pending("r3")), 0, 0),
        ((done("r1", C), RunEvidence("x", resolved=True, result="exception")), 0, 2),
    ],
)  # fmt: skip
def test_staged_asks_in_waves(retriggers, requested, asked) -> None:
    decision = get_policy("seed-staged").decide(case(*retriggers, requested=requested))
    if asked:
        assert (decision.kind, decision.retriggers) == (DecisionKind.RETRIGGER, asked)
    else:
        assert decision.kind is DecisionKind.WAIT


def test_registry() -> None:
    assert set(POLICIES) == {"seed", "seed-early", "seed-staged"}
    assert get_policy("seed-early").name == "seed-early"
    with pytest.raises(
        UnknownPolicyError, match=r"unknown triage policy 'fast'.*seed, seed-early, seed-staged"
    ):
        get_policy("fast")


# --- seed-early agrees with seed: property over random histories ---------------------------

LINES = (A, B, C)
# Weighted towards test failures, so that reproductions (and early verdicts) are common.
RESULTS = ("testfailed", "testfailed", "testfailed", "success", "busted", "exception", "usercancel")


@dataclass(frozen=True)
class World:
    """A case's complete history, and how far each run has got in one moment of it."""

    runs_wanted: int
    min_reproductions: int
    original: RunEvidence
    finals: tuple[RunEvidence, ...]  # every retrigger as it ends up
    levels: tuple[int, ...]  # 0 not asked for, 1 requested, 2 running, 3 resolved, 4 parsed
    original_ready: bool

    def view(self) -> CaseEvidence:
        runs = []
        for final, level in zip(self.finals, self.levels, strict=True):
            if level == 2:
                runs.append(
                    RunEvidence(final.task_id, requested_by_sheriff=final.requested_by_sheriff)
                )
            elif level == 3:
                runs.append(replace(final, lines_known=False, failure_lines=(), log_unparsed=False))
            elif level == 4:
                runs.append(final)
        original = self.original
        if not self.original_ready:
            original = replace(original, lines_known=False, log_unparsed=False)
        return CaseEvidence(
            original=original,
            retriggers=tuple(runs),
            requested_not_visible=self.levels.count(1),
            runs_wanted=self.runs_wanted,
            min_reproductions=self.min_reproductions,
        )

    def completed(self) -> CaseEvidence:
        return CaseEvidence(
            original=self.original,
            retriggers=self.finals,
            runs_wanted=self.runs_wanted,
            min_reproductions=self.min_reproductions,
        )


@st.composite
def final_runs(draw: st.DrawFn, task_id: str) -> RunEvidence:
    result = draw(st.sampled_from(RESULTS))
    lines = tuple(draw(st.lists(st.sampled_from(LINES), unique=True)))
    if result == "success":
        lines = ()
    elif result == "testfailed" and draw(st.booleans()):
        lines = (A,)  # the commonest history: the failure reproduces
    return RunEvidence(
        task_id,
        resolved=True,
        result=result,
        lines_known=True,
        failure_lines=lines,
        requested_by_sheriff=draw(st.booleans()),
        log_unparsed=draw(st.integers(0, 19)) == 0,
    )


@st.composite
def worlds(draw: st.DrawFn) -> World:
    runs_wanted = draw(st.integers(1, 8))
    existing = draw(st.integers(0, 8))  # retriggers already there when sheriff looks
    total = max(existing, runs_wanted - 1)
    finals = tuple(draw(final_runs(f"r{i}")) for i in range(total))
    levels = tuple(draw(st.integers(1, 4)) for _ in range(existing)) + (0,) * (total - existing)
    unparsed = draw(st.integers(0, 9)) == 0
    original = RunEvidence(
        "orig",
        resolved=True,
        result="testfailed",
        lines_known=not unparsed,
        log_unparsed=unparsed,
        failure_lines=()
        if unparsed
        else tuple(draw(st.lists(st.sampled_from(LINES), unique=True, min_size=1))),
    )
    return World(
        runs_wanted, draw(st.integers(1, 3)), original, finals, levels, draw(st.booleans())
    )


def independent_seed_verdict(evidence: CaseEvidence) -> Verdict:
    """SPEC §3 step 8 written out afresh, to check the policy against."""
    original = set(evidence.original.failure_lines) if evidence.original.lines_known else set()
    showing = 0
    for run in evidence.retriggers:
        infra = run.result in ("exception", "usercancel", "retry", "canceled") or run.log_unparsed
        if not infra and original.intersection(run.failure_lines):
            showing += 1
    return Verdict.REGRESSION if showing >= evidence.min_reproductions else Verdict.INTERMITTENT


@settings(max_examples=500, deadline=None)
@given(world=worlds())
def test_seed_early_decides_only_what_seed_decides_on_the_completed_evidence(world: World) -> None:
    completed = SEED.decide(world.completed())
    assert completed.kind is DecisionKind.VERDICT
    assert completed.verdict is independent_seed_verdict(world.completed())

    seed = SEED.decide(world.view())
    for name in ("seed-early", "seed-staged"):
        early = get_policy(name).decide(world.view())
        if early.kind is DecisionKind.VERDICT:
            assert early.verdict is completed.verdict
            unresolved = {r.task_id for r in world.view().retriggers if not r.resolved}
            assert set(early.cancel) <= unresolved
        elif early.kind is DecisionKind.RETRIGGER:  # never more than seed would ask for
            assert seed.kind is DecisionKind.RETRIGGER
            assert 0 < early.retriggers <= seed.retriggers
        if seed.kind is DecisionKind.VERDICT:  # seed decided: the early ones did, the same way
            assert early.verdict is seed.verdict is completed.verdict
    if seed.kind is DecisionKind.RETRIGGER:  # exactly up to runs_wanted, counting everything
        assert seed.retriggers == world.levels.count(0) > 0


@settings(max_examples=300, deadline=None)
@given(world=worlds(), policy=st.sampled_from(sorted(POLICIES)), data=st.data())
def test_a_pass_sequence_ends_in_the_seed_verdict_never_asking_too_much(
    world: World, policy: str, data: st.DataObject
) -> None:
    """Passes over a history where runs progress in any order, until the seed verdict."""
    expected = SEED.decide(world.completed()).verdict
    could_ask = world.levels.count(0)
    asked = 0
    for _ in range(5 * (len(world.levels) + 2)):
        decision = get_policy(policy).decide(world.view())
        if decision.kind is DecisionKind.VERDICT:
            assert decision.verdict is expected
            return
        if decision.kind is DecisionKind.RETRIGGER:
            asked += decision.retriggers
            assert asked <= could_ask  # never beyond runs_wanted, counting everything
            if policy in ("seed", "seed-early"):
                assert asked == could_ask  # all at once, in one request
            levels = list(world.levels)
            for _ in range(decision.retriggers):
                levels[levels.index(0)] = 1
            world = replace(world, levels=tuple(levels))
            continue
        movable = [i for i, level in enumerate(world.levels) if level < 4]
        choices = movable + ([-1] if not world.original_ready else [])
        pick = data.draw(st.sampled_from(choices))
        if pick == -1:
            world = replace(world, original_ready=True)
        else:
            levels = list(world.levels)
            levels[pick] += 1
            world = replace(world, levels=tuple(levels))
    pytest.fail("no verdict after every run settled")


def test_run_evidence_from_what_taskcluster_and_treeherder_say() -> None:
    suggestions = [
        {"search": "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got 17, expected 3"},
        {"search": "PROCESS-CRASH | application crashed [@ Foo] | dom/a/test_a.html"},
    ]
    summary = '{"action": "test_result", "test": "a.js", "status": "FAIL", "expected": "PASS"}\n'
    running = RunEvidence.from_ci("r1", task_state="running", requested_by_sheriff=True)
    assert not running.resolved and not running.settled and running.requested_by_sheriff
    unparsed = RunEvidence.from_ci("r1", task_state="failed", parse_status="pending")
    assert unparsed.resolved and unparsed.result == "testfailed" and not unparsed.settled
    parsed = RunEvidence.from_ci(
        "r1",
        task_state="failed",
        parse_status="parsed",
        bug_suggestions=suggestions,
        errorsummary=summary,
    )
    assert parsed.settled and not parsed.void
    assert parsed.failure_lines == (
        "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got <n>, expected <n>",
    )
    assert parsed.structured_failures == (StructuredFailure("a.js", None, "FAIL"),)
    broken = RunEvidence.from_ci("r1", task_state="completed", parse_status="failed")
    assert broken.void and broken.settled and broken.result == "success"
    infra = RunEvidence.from_ci("r1", task_state="exception")
    assert infra.void and infra.settled
