"""What counts as a reproduction in a backfill run (sheriff.backfill.evidence)."""

from sheriff.backfill.evidence import RunView, classify, reproduces

TEST = "dom/base/test/test_popup.html"
NEW = f"TEST-UNEXPECTED-TIMEOUT | {TEST} | Test timed out after <duration>"
OLD = f"TEST-UNEXPECTED-FAIL | {TEST} | Assertion failure: mState == <n>"


def test_a_flake_of_the_regressed_test_with_its_old_line_is_no_reproduction() -> None:
    assert reproduces([NEW], [NEW], [TEST])
    assert not reproduces([OLD], [NEW], [TEST])
    assert not reproduces([], [NEW], [TEST])


def test_without_a_known_line_a_failure_of_the_test_reproduces() -> None:
    assert reproduces([OLD], [], [TEST])
    assert not reproduces(["TEST-UNEXPECTED-FAIL | other/test.html | x"], [], [TEST])


def test_a_timeout_report_counts_for_the_timeout_regression_whose_culprit_it_named() -> None:
    from sheriff.backfill.status import report_claims

    # Two timeout regressions fail on push "p9"; the report there names the later one's.
    early = {"tests": ["a/t1.html"], "failure": "timeout", "culprit_revision": "c3"}
    late = {"tests": ["a/t2.html"], "failure": "timeout", "culprit_revision": "c8"}
    for g in (early, late):
        g["failed_on"] = ["p9"]
    both = [early, late]
    report = {"tests": ["Last test finished"], "revision": "p9", "culprit_revision": "c8"}
    assert report_claims(report, late, both) and not report_claims(report, early, both)
    # Naming neither, it counts (wrong) against both.
    stray = {**report, "culprit_revision": "c5"}
    assert report_claims(stray, late, both) and report_claims(stray, early, both)


def test_a_report_searching_a_timeout_beside_a_named_test_is_about_the_timeout() -> None:
    from sheriff.backfill.status import report_about, report_claims

    timeout = {"tests": ["a/t1.html"], "failure": "timeout", "culprit_revision": "c3"}
    timeout["failed_on"] = ["p9"]
    other = {"tests": ["b/t2.html"], "failure": "same", "culprit_revision": "c8"}
    other["failed_on"] = ["p12"]
    both = [timeout, other]
    mixed = {"tests": ["b/t2.html", "Last test finished"], "revision": "p9"}
    assert report_about(mixed, timeout) and report_about(mixed, other)
    # Naming the timeout's culprit, it is right for the timeout and wrong for the other.
    assert report_claims({**mixed, "culprit_revision": "c3"}, timeout, both)
    assert report_claims({**mixed, "culprit_revision": "c3"}, other, both)
    # A report of named tests alone is not about a timeout failing on its push.
    named = {"tests": ["b/t2.html"], "revision": "p9"}
    assert not report_about(named, timeout)
    # Nor is a mixed one opened where the timeout never failed.
    assert not report_about({**mixed, "revision": "p12"}, timeout)


def test_a_backfill_run_that_failed_without_a_failure_line_is_unknown() -> None:
    def run(result: str, lines: list[str] | None) -> RunView:
        return RunView(1, 1, "completed", result, "backfill", "parsed", lines)

    assert classify(run("testfailed", []), [NEW], [TEST]) == "unknown"  # a storm: infra
    assert classify(run("testfailed", [OLD]), [NEW], [TEST]) == "clean"
    assert classify(run("testfailed", [NEW]), [NEW], [TEST]) == "reproduced"
    assert classify(run("success", []), [NEW], [TEST]) == "clean"


def test_a_report_on_a_test_that_regressed_twice_counts_for_the_one_failing_on_its_push() -> None:
    from sheriff.backfill.status import report_claims

    # One test broken at c4 (fixed at p9), broken again at c34.
    first = {"tests": ["a/t.html"], "culprit_revision": "c4", "failed_on": ["p5", "p6"]}
    second = {"tests": ["a/t.html"], "culprit_revision": "c34", "failed_on": ["p36"]}
    both = [first, second]
    late = {"tests": ["a/t.html"], "revision": "p36", "culprit_revision": "c34"}
    assert report_claims(late, second, both) and not report_claims(late, first, both)
    early = {"tests": ["a/t.html"], "revision": "p5", "culprit_revision": "c5"}
    assert report_claims(early, first, both) and not report_claims(early, second, both)
    # Opened where neither failed an original run: it counts (wrong) against both.
    stray = {"tests": ["a/t.html"], "revision": "p20", "culprit_revision": "c20"}
    assert report_claims(stray, first, both) and report_claims(stray, second, both)


def test_a_report_on_a_crash_line_is_about_the_test_the_crash_names() -> None:
    """A crash the TEST-UNEXPECTED lines did not account for is searched by its line
    alone (the report lists no test), yet the line names the test it crashed in: the
    report is that test's regression's, not a timeout regression's failing on its push."""
    from sheriff.backfill.status import report_claims, tests_named

    crash = "PROCESS-CRASH | application crashed [@ Destroy + <ptr>] | a/t1.html"
    crashed = {"tests": ["a/t1.html"], "culprit_revision": "c3", "failed_on": ["p9"]}
    timeout = {"tests": ["a/t2.html"], "failure": "timeout", "culprit_revision": "c8"}
    timeout["failed_on"] = ["p9"]
    both = [crashed, timeout]
    report = {"tests": tests_named([], [crash]), "revision": "p9", "culprit_revision": "c3"}
    assert report["tests"] == ["a/t1.html"]
    assert report_claims(report, crashed, both) and not report_claims(report, timeout, both)
    # A crash between tests names no test: such a report stays test-less.
    between = "PROCESS-CRASH | application crashed [@ Destroy + <ptr>] | pid: <pid>"
    assert tests_named([], [between]) == []
    bare = {"tests": [], "revision": "p9", "culprit_revision": "c8"}
    assert report_claims(bare, timeout, both)
