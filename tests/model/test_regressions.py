"""Grouping regression cases into regressions (sheriff.model.regressions)."""

from dataclasses import replace

from sheriff.model.regressions import (
    CaseFacts,
    Group,
    clean_runs_to_stop,
    group_cases,
    match,
    merge_target,
    merged_stop,
    stopped_failing,
)


def case(
    case_id: int, push: int, tests=(), lines=(), config: str = "linux/opt", began=None
) -> CaseFacts:
    return CaseFacts(
        case_id, push, frozenset(tests), frozenset(lines), config, began=dict(began or {})
    )


def test_cases_sharing_a_test_across_pushes_and_configurations_are_one_regression() -> None:
    cases = [
        case(1, 11, ["a.js"], config="linux/opt"),
        case(2, 11, ["a.js"], config="win/debug"),
        case(3, 12, ["a.js"]),
        case(4, 15, ["a.js", "b.js"]),
        case(5, 13, ["c.js"]),
    ]
    groups = group_cases(cases)
    assert [sorted(g.case_ids) for g in groups] == [[1, 2, 3, 4], [5]]
    assert groups[0].configurations == {"linux/opt", "win/debug"}
    assert (groups[0].first_push, groups[0].last_push) == (11, 15)
    # b.js failed beside a.js on a later push only: not taken in as this regression's test.
    assert groups[0].tests == {"a.js"}


def test_a_run_failing_two_regressions_does_not_chain_them() -> None:
    # Regression 1 breaks a.js from push 5; regression 2 breaks b.js from push 6 on one
    # configuration; a run at push 8 fails both and joins the older. b.js's later cases
    # stay with regression 2 (taking b.js into regression 1 made them join it).
    cases = [
        case(1, 5, ["t/a.js"]),
        case(2, 6, ["t/b.js"], config="android/opt"),
        case(3, 8, ["t/a.js", "t/b.js"], config="android/opt"),
        case(4, 9, ["t/b.js"], config="android/opt"),
    ]
    groups = group_cases(cases)
    assert [sorted(g.case_ids) for g in groups] == [[1, 3], [2, 4]]
    assert groups[0].tests == {"t/a.js"}


def test_a_line_naming_no_test_groups_only_within_one_suite_chunk() -> None:
    timeout = "TEST-UNEXPECTED-TIMEOUT | Last test finished | application timed out"

    def run(case_id: int, push: int, label: str) -> CaseFacts:
        tests = frozenset({"Last test finished"})
        return CaseFacts(case_id, push, tests, frozenset({timeout}), "x/opt", label)

    groups = group_cases(
        [
            run(1, 10, "test-linux/opt-mochitest-plain-2"),
            run(2, 11, "test-windows/debug-mochitest-plain-2"),  # the same chunk elsewhere
            run(3, 12, "test-linux/opt-mochitest-plain-3"),  # another chunk: another test
            run(4, 13, "test-linux/opt-xpcshell-2"),
        ]
    )
    assert [sorted(g.case_ids) for g in groups] == [[1, 2], [3], [4]]


def test_a_shared_failure_line_without_a_test_groups_too() -> None:
    crash = "PROCESS-CRASH | application crashed [@ mozilla::Foo]"
    groups = group_cases([case(1, 3, lines=[crash]), case(2, 4, lines=[crash])])
    assert len(groups) == 1


def test_the_same_test_far_away_or_after_it_stopped_is_a_new_regression() -> None:
    far = group_cases([case(1, 1, ["a.js"]), case(2, 40, ["a.js"])], neighbours=12)
    assert len(far) == 2
    stopped = Group(1, {"a.js"}, set(), 5, 8, stopped_at=9)
    assert match(case(3, 10, ["a.js"]), [stopped]) is None
    assert match(case(3, 7, ["a.js"]), [stopped]) is stopped


def test_the_group_sharing_most_wins() -> None:
    one = Group(1, {"a.js"}, set(), 5, 5)
    two = Group(2, {"a.js", "b.js"}, set(), 5, 5)
    assert match(case(3, 5, ["a.js", "b.js"]), [one, two]) is two
    assert match(case(3, 5, ["a.js"]), [one, two]) is one  # a tie: the oldest


def test_a_test_that_began_failing_on_a_regressions_culprit_push_joins_it() -> None:
    # A push broke a.js and b.js (another suite); its search named push 15. b.js's first
    # case comes on push 18, sharing no test: it began failing on push 15, so it is the
    # same breakage, and the regression takes b.js in (its later cases match by test).
    landed = Group(1, {"t/a.js"}, set(), 16, 18, culprit_at=15, configurations={"linux/opt"})
    line = "TEST-UNEXPECTED-FAIL | t/b.js | broken"
    b = case(2, 18, ["t/b.js"], [line], began={"t/b.js": 15})
    assert match(b, [landed]) is landed
    assert landed.grown(b) == ({"t/a.js", "t/b.js"}, {line})
    # Began failing on another push, on another configuration only, or after the
    # regression stopped: a regression of its own.
    assert match(case(3, 18, ["t/b.js"], began={"t/b.js": 16}), [landed]) is None
    assert match(replace(b, configuration="win/opt"), [landed]) is None
    assert match(b, [replace(landed, stopped_at=17)]) is None
    assert match(case(4, 18, ["t/b.js"]), [landed]) is None  # no onset known


def test_before_its_search_names_a_push_a_regression_landed_where_its_tests_began() -> None:
    group = Group(1, {"t/a.js"}, set(), 16, 16, onsets=frozenset({15}), configurations={"x/o"})
    assert match(case(2, 17, ["t/b.js"], config="x/o", began={"t/b.js": 15}), [group]) is group
    assert match(case(3, 17, ["t/c.js"], config="x/o", began={"t/c.js": 16}), [group]) is None
    # Once a culprit is named it is the push the regression landed with.
    named = replace(group, culprit_at=14)
    assert match(case(2, 17, ["t/b.js"], config="x/o", began={"t/b.js": 15}), [named]) is None


def test_a_later_case_takes_in_only_its_tests_that_began_with_the_regression() -> None:
    # A run failing the regression's a.js beside flaky f.js (failing since long before):
    # the regression does not take f.js in; beside c.js that began on its culprit, it does.
    group = Group(1, {"t/a.js"}, set(), 10, 12, culprit_at=10, configurations={"linux/opt"})
    flake = case(2, 13, ["t/a.js", "t/f.js"], began={"t/a.js": 10})
    assert match(flake, [group]) is group
    assert group.grown(flake)[0] == {"t/a.js"}
    both = case(3, 13, ["t/a.js", "t/c.js"], began={"t/a.js": 10, "t/c.js": 10})
    assert group.grown(both)[0] == {"t/a.js", "t/c.js"}


def test_stopped_failing_needs_clean_pushes_in_a_row() -> None:
    assert stopped_failing(10, [(11, 2, 0), (12, 1, 0)]) == 11
    assert stopped_failing(10, [(11, 2, 0), (12, 0, 1), (13, 1, 0)]) is None
    assert stopped_failing(10, [(11, 2, 0), (12, 0, 1), (13, 1, 0), (14, 3, 0)]) == 13
    assert stopped_failing(10, [(11, 0, 0), (12, 1, 0), (13, 1, 0)]) == 12  # 11 ran nothing
    assert stopped_failing(10, [(9, 5, 0), (11, 1, 0)]) is None


def test_clean_runs_to_stop_grow_with_the_places_a_streak_was_looked_for() -> None:
    assert clean_runs_to_stop(1.0, looks=50) == 1  # a permanent one never runs clean
    assert clean_runs_to_stop(0.6) == 6  # 0.4 ** 6 < 0.01 < 0.4 ** 5
    # Over 40 later pushes a streak of 6 turns up by chance far above 1 % of the time;
    # 40 * 0.4 ** 10 < 0.01 < 40 * 0.4 ** 9.
    assert clean_runs_to_stop(0.6, looks=40) == 10
    counts = [clean_runs_to_stop(0.3, looks=n) for n in range(0, 200, 7)]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    # A chance streak of that length somewhere along the pushes stays below the doubt.
    for rate, looks in [(0.2, 10), (0.5, 45), (0.9, 100)]:
        assert looks * (1 - rate) ** clean_runs_to_stop(rate, looks=looks) <= 0.01


def test_regressions_with_the_same_culprit_merge_into_the_oldest() -> None:
    assert merge_target({1: "p17", 2: "p11", 3: "p17", 4: None}) == {3: 1}


def test_a_merged_regression_stopped_only_where_its_latest_failing_record_stopped() -> None:
    # (last failing push, stop push or None)
    assert merged_stop([(7, 8), (10, None)]) is None  # failing at 10, past the stop at 8
    assert merged_stop([(7, 8), (10, 13)]) == 13
    assert merged_stop([(14, 16), (12, 13)]) == 16  # the earlier record's end says nothing
    assert merged_stop([(14, 16), (12, None)]) == 16
    assert merged_stop([(14, 16), (14, None)]) is None
    assert merged_stop([(14, 16), (14, 18)]) == 18
