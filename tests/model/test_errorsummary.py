"""Errorsummary parsing on Treeherder's real files: failures, completeness, odd content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sheriff.model.errorsummary import (
    FailureKind,
    StructuredFailure,
    failures_from_errorsummary,
    parse_errorsummary,
)


def _read(reference: Path, name: str) -> str:
    return (reference / "treeherder" / "logs" / f"{name}_errorsummary.log").read_text("utf-8")


@pytest.mark.parametrize(
    "name",
    [
        "mochitest-browser-chrome",
        "mochitest-browser-chrome_2",
        "mochitest-browser-chrome_pass",
        "mochitest-browser-chrome_cf1",
        "mochitest-browser-chrome_cf1_pass",
        "mochitest-browser-chrome_cf2",
        "mochitest-browser-chrome_cf3_pass",
    ],
)
def test_real_finished_files_are_complete(reference: Path, name: str) -> None:
    summary = parse_errorsummary(_read(reference, name))
    assert summary.complete, summary.incomplete_reason
    assert summary.groups


def test_infra_file_without_group_results_is_incomplete(reference: Path) -> None:
    summary = parse_errorsummary(_read(reference, "mochitest-browser-chrome_infra"))
    assert not summary.complete
    assert "group_result" in (summary.incomplete_reason or "")
    assert summary.failures == (StructuredFailure("automation.py", None, "TIMEOUT"),)


def test_failing_file_lists_tests_and_groups(reference: Path) -> None:
    failures = failures_from_errorsummary(_read(reference, "mochitest-browser-chrome"))
    tests = [f for f in failures if f.kind is FailureKind.TEST]
    groups = [f.test for f in failures if f.kind is FailureKind.GROUP]
    assert {f.test for f in tests} == {
        "toolkit/components/pictureinpicture/tests/browser_fullscreen.js",
        "toolkit/components/pictureinpicture/tests/browser_videoSelection.js",
    }
    assert len(tests) == 5 and all(f.status == "FAIL" for f in tests)
    assert groups == [
        "dom/workers/test/browser.ini",
        "browser/components/preferences/tests/browser.ini",
        "toolkit/components/pictureinpicture/tests/browser.ini",
    ]
    rejection = next(f for f in tests if (f.subtest or "").startswith("A promise chain"))
    assert "<time>" in (rejection.subtest or "") and "2020" not in (rejection.subtest or "")


def test_passing_file_has_no_failures(reference: Path) -> None:
    assert failures_from_errorsummary(_read(reference, "mochitest-browser-chrome_pass")) == []


@pytest.mark.parametrize("n", [1, 2, 3])
def test_confirm_failure_runs_match_the_original_group(reference: Path, n: int) -> None:
    original = {
        f.key for f in failures_from_errorsummary(_read(reference, "mochitest-browser-chrome"))
    }
    failed = failures_from_errorsummary(_read(reference, f"mochitest-browser-chrome_cf{n}"))
    passed = failures_from_errorsummary(_read(reference, f"mochitest-browser-chrome_cf{n}_pass"))
    assert len(failed) == 1 and failed[0].key in original
    assert passed == []


def test_two_runs_of_different_tests_share_no_failure(reference: Path) -> None:
    first = {
        f.key for f in failures_from_errorsummary(_read(reference, "mochitest-browser-chrome"))
    }
    other = failures_from_errorsummary(_read(reference, "mochitest-browser-chrome_2"))
    assert other and not first & {f.key for f in other}


def test_ten_identical_lines_are_one_failure_and_legacy_file_is_incomplete(
    reference: Path,
) -> None:
    summary = parse_errorsummary(_read(reference, "plain-chunked"))
    ten = parse_errorsummary(
        (reference / "treeherder/logs/plain-chunked_errorsummary_10_lines.log").read_text()
    )
    assert ten.failures == summary.failures
    assert ten.failures == (
        StructuredFailure(
            "toolkit/content/tests/widgets/test_videocontrols_video_direction.html",
            "Test timed out.",
            "FAIL",
        ),
    )
    assert not ten.complete and "test_groups" in (ten.incomplete_reason or "")


def test_astral_characters_survive(reference: Path) -> None:
    text = (reference / "treeherder/logs/plain-chunked_errorsummary_astral.log").read_text("utf-8")
    (failure,) = failures_from_errorsummary(text)
    assert failure.test.endswith("🍆") and failure.subtest == "Test timed out. 𐂁"


def test_group_names_with_colons(reference: Path) -> None:
    text = (reference / "treeherder/logs/xpcshell-errorsummary-with-colon.log").read_text()
    summary = parse_errorsummary(text)
    assert summary.complete and summary.failures == ()
    assert any(":" in group for group in summary.group_results)
    assert set(summary.group_results) == set(summary.groups)


def test_cut_off_last_line_makes_it_incomplete(reference: Path) -> None:
    text = _read(reference, "mochitest-browser-chrome")
    cut = text[: text.rindex('"group"')]
    summary = parse_errorsummary(cut)
    assert not summary.complete and "cut off" in (summary.incomplete_reason or "")
    assert len(summary.failures) == 8  # everything before the cut is kept


@pytest.mark.parametrize("text", ["", "\n\n", "not json\n", "[1, 2]\n"])
def test_garbage_is_incomplete_never_an_exception(text: str) -> None:
    summary = parse_errorsummary(text)
    assert not summary.complete and summary.failures == ()


def _lines(*entries: dict[str, object]) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def test_statuses_crashes_logs_and_known_intermittents() -> None:
    text = _lines(
        {"action": "test_groups", "groups": ["a/x.toml"]},
        {"action": "test_result", "test": "a/t1.js", "subtest": "s", "status": "FAIL",
         "expected": "PASS"},
        {"action": "test_result", "test": "a/t2.js", "status": "FAIL", "expected": "FAIL"},
        {"action": "test_result", "test": "a/t3.js", "status": "FAIL", "expected": "PASS",
         "known_intermittent": ["FAIL"]},
        {"action": "test_result", "test": "a/t4.js", "status": "PASS"},
        {"action": "test_result", "test": "a/t5.js", "status": "TIMEOUT"},
        {"action": "crash", "test": "a/t6.js", "signature": "mozilla::Foo [@ 0x7f00ab]"},
        {"action": "log", "level": "ERROR", "message": "leaked 1234 bytes in pid 77"},
        {"action": "log", "level": "WARNING", "message": "nothing"},
        {"action": "group_result", "group": "a/x.toml", "status": "FAIL"},
    )  # fmt: skip
    summary = parse_errorsummary(text)
    assert summary.complete
    assert summary.failures == (
        StructuredFailure("a/t1.js", "s", "FAIL"),
        StructuredFailure("a/t5.js", None, "TIMEOUT"),
        StructuredFailure("a/t6.js", "mozilla::Foo [@ <ptr>]", "CRASH", FailureKind.CRASH),
        StructuredFailure("", "leaked <n> bytes in pid <pid>", "ERROR", FailureKind.LOG),
        StructuredFailure("a/x.toml", None, "FAIL", FailureKind.GROUP),
    )
