"""Failure-line normalisation: runs of one failure compare equal, two tests never do."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheriff.model.failure_lines import (
    LineKind,
    crash_lines,
    crashed_test,
    failure_lines,
    failure_lines_from_bug_suggestions,
    line_kind,
    log_error_lines,
    normalise_failure_line,
    strip_log_prefix,
)

# --- strategies -------------------------------------------------------------------------

_WORD = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_SEGMENT = st.from_regex(r"[a-z][a-zA-Z0-9_-]{0,10}", fullmatch=True)
_FILE = st.from_regex(
    r"(test_|browser_)?[a-zA-Z0-9][a-zA-Z0-9_-]{0,12}\.(js|html|xhtml|py|toml)", fullmatch=True
)


@st.composite
def repo_test_paths(draw: st.DrawFn) -> str:
    """Repository-relative test paths, as harnesses print them (wpt ones start with /)."""
    segments = draw(st.lists(_SEGMENT, min_size=0, max_size=4))
    lead = draw(st.sampled_from(["", "/"]))
    return lead + "/".join([*segments, draw(_FILE)])


_HEX = "0123456789abcdef"
_RANDOM_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=3, max_size=10)
_DATETIMES = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
)
_JS_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def _js_date(moment: datetime) -> str:
    return moment.strftime(f"{_JS_DAYS[moment.weekday()]} %b %d %Y %H:%M:%S GMT+0000 (UTC)")


# Each slot kind renders one thing that varies between runs of the same failure.
_SLOTS: dict[str, st.SearchStrategy[str]] = {
    "iso-time": _DATETIMES.map(lambda d: d.isoformat().replace("+00:00", "Z")),
    "clock": _DATETIMES.map(lambda d: d.strftime("%H:%M:%S")),
    "js-date": _DATETIMES.map(_js_date),
    "took-ms": st.integers(0, 10**7).map(lambda n: f"took {n}ms"),
    "after-s": st.integers(0, 10**4).map(lambda n: f"after {n}s"),
    "paren-s": st.floats(0, 1000, allow_nan=False).map(lambda f: f"({f:.1f}s)"),
    "seconds": st.integers(1, 10**4).map(lambda n: f"{n} seconds"),
    "pointer": st.text(_HEX, min_size=4, max_size=16).map(lambda h: f"0x{h}"),
    "localhost": st.integers(1, 65535).map(lambda p: f"localhost:{p}"),
    "loopback": st.integers(1, 65535).map(lambda p: f"127.0.0.1:{p}"),
    "url": st.integers(1, 65535).map(lambda p: f"http://localhost:{p}/tests/file.html"),
    "pid": st.integers(1, 10**6).map(lambda n: f"pid {n}"),
    "pid-eq": st.integers(1, 10**6).map(lambda n: f"[pid = {n}]"),
    "PID": st.integers(1, 10**6).map(lambda n: f"PID {n}"),
    "gecko": st.integers(1, 10**6).map(lambda n: f"GECKO({n})"),
    "tmp": _RANDOM_NAME.map(lambda r: f"/tmp/tmp{r}/profile/prefs.js"),
    "win-tmp": st.tuples(st.integers(1, 10**5), _RANDOM_NAME).map(
        lambda t: f"C:\\Users\\task_{t[0]}\\AppData\\Local\\Temp\\{t[1]}\\prefs.js"
    ),
    "mac-tmp": st.tuples(_RANDOM_NAME, _RANDOM_NAME, _RANDOM_NAME).map(
        lambda t: f"/var/folders/{t[0]}/{t[1]}/T/{t[2]}/prefs.js"
    ),
    "uuid": st.uuids().map(lambda u: "{" + str(u) + "}"),
    "got-expected": st.tuples(st.floats(-1e6, 1e6), st.integers(-1000, 1000)).map(
        lambda t: f"got {t[0]:.3f}, expected {t[1]}"
    ),
}


@st.composite
def failures(draw: st.DrawFn) -> tuple[str, str, list[str | None]]:
    """A failure mode: its status, test, and a message template (None marks a slot)."""
    status = draw(st.sampled_from(["FAIL", "TIMEOUT", "ERROR", "PASS", "CRASH"]))
    parts = draw(st.lists(st.one_of(_WORD, st.sampled_from(sorted(_SLOTS))), max_size=8))
    return status, draw(repo_test_paths()), parts


def _render(draw: st.DrawFn, status: str, test: str, parts: list[str]) -> str:
    words = [draw(_SLOTS[p]) if p in _SLOTS else p for p in parts]
    prefix = draw(
        st.one_of(
            st.just(""),
            st.tuples(_DATETIMES, st.sampled_from(["INFO", "WARNING", "ERROR"])).map(
                lambda t: f"{t[0]:%H:%M:%S}  {t[1]} -  "
            ),
        )
    )
    return f"{prefix}TEST-UNEXPECTED-{status} | {test} | {' '.join(words)}"


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(failure=failures(), data=st.data())
def test_same_failure_in_two_runs_normalises_the_same(failure, data) -> None:
    status, test, parts = failure
    first = _render(data.draw, status, test, parts)
    second = _render(data.draw, status, test, parts)
    assert normalise_failure_line(first) == normalise_failure_line(second)


@settings(max_examples=200, deadline=None)
@given(a=failures(), b=failures(), data=st.data())
def test_lines_of_two_different_tests_never_normalise_the_same(a, b, data) -> None:
    status, test_a, parts_a = a
    _, test_b, parts_b = b
    if test_a == test_b:
        return
    first = _render(data.draw, status, test_a, parts_a)
    # Even the very same message, and the same failure mode, must not merge two tests.
    second = _render(data.draw, status, test_b, data.draw(st.sampled_from([parts_a, parts_b])))
    assert normalise_failure_line(first) != normalise_failure_line(second)


@settings(max_examples=100, deadline=None)
@given(failure=failures(), data=st.data())
def test_normalisation_is_idempotent_and_keeps_the_test(failure, data) -> None:
    status, test, parts = failure
    once = normalise_failure_line(_render(data.draw, status, test, parts))
    assert normalise_failure_line(once) == once
    assert once.split(" | ")[:2] == [f"TEST-UNEXPECTED-{status}", test]


# --- examples -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "TEST-UNEXPECTED-FAIL | dom/a/test_x.html | got 0.234, expected 0.5",
            "TEST-UNEXPECTED-FAIL | dom/a/test_x.html | got <n>, expected <n>",
        ),
        (
            "12:01:26     INFO - TEST-UNEXPECTED-TIMEOUT | automation.py | timed out after 370 s",
            "TEST-UNEXPECTED-TIMEOUT | automation.py | timed out after <duration>",
        ),
        (
            "TEST-UNEXPECTED-FAIL | a/test_1804872-2.html | at b.js:334:7 with h264 (1.5s)",
            "TEST-UNEXPECTED-FAIL | a/test_1804872-2.html | at b.js:334:7 with h264 (<duration>)",
        ),
        (
            "PROCESS-CRASH | application crashed [@ libc.so + 0x1ccb5] | dom/x/mochitest.toml",
            "PROCESS-CRASH | application crashed [@ libc.so + <ptr>] | dom/x/mochitest.toml",
        ),
        (
            "TEST-UNEXPECTED-FAIL | x.js | Rejection date: Thu Oct 08 2020 20:47:46 GMT+0000 "
            "(Coordinated Universal Time) - false == true",
            "TEST-UNEXPECTED-FAIL | x.js | Rejection date: <time> - false == true",
        ),
        (
            "  GECKO(8692) | TEST-UNEXPECTED-FAIL | a.js | pid 12",
            "TEST-UNEXPECTED-FAIL | a.js | pid <pid>",
        ),
        ("REFTEST TEST-UNEXPECTED-PASS | r.html | ok", "TEST-UNEXPECTED-PASS | r.html | ok"),
        (
            "[task 2026-11-02T08:00:01.123Z] 08:00:01     INFO - TEST-UNEXPECTED-FAIL | a.js | x",
            "TEST-UNEXPECTED-FAIL | a.js | x",
        ),
    ],
)
def test_normalise_examples(line: str, expected: str) -> None:
    assert normalise_failure_line(line) == expected


def test_line_kinds() -> None:
    assert line_kind("21:30:46  WARNING -  TEST-UNEXPECTED-FAIL | a | b") is LineKind.TEST_FAILURE
    assert line_kind("REFTEST TEST-UNEXPECTED-FAIL | a == b | c") is LineKind.TEST_FAILURE
    assert line_kind("PROCESS-CRASH | application crashed [@ x] | t.js") is LineKind.CRASH
    assert line_kind("[taskcluster:error] exit status 1") is None
    assert line_kind("INFO - TEST-PASS | a | b") is None
    assert strip_log_prefix("21:47:57    ERROR -  gmake: *** x") == "gmake: *** x"


# --- real Treeherder data -----------------------------------------------------------------


def _logview(reference: Path, name: str) -> list[str]:
    data = json.loads((reference / "treeherder" / "logs" / f"{name}.logview.json").read_text())
    return [error["line"] for error in data["errors"]]


def test_repeated_timeouts_of_one_run_are_one_failure(reference: Path) -> None:
    lines = _logview(reference, "taskcluster-timeout")
    assert failure_lines(lines) == [
        "TEST-UNEXPECTED-TIMEOUT | automation.py | application timed out after <duration> with "
        "no output"
    ]


def test_same_line_at_other_times_compares_equal(reference: Path) -> None:
    lines = _logview(reference, "mochitest-end")
    timed_out = [line for line in lines if "Test timed out." in line]
    assert len(timed_out) == 4 and len(set(timed_out)) == 4  # four timestamps…
    assert len({normalise_failure_line(line) for line in timed_out}) == 1  # …one failure
    assert failure_lines(lines)[:3] == [
        "TEST-UNEXPECTED-FAIL | dom/canvas/test/crossorigin/test_webgl_crossorigin_textures.html"
        " | Test timed out. -",
        "TEST-UNEXPECTED-FAIL | SimpleTest | this test already called finish!",
        "TEST-UNEXPECTED-ERROR | dom/canvas/test/crossorigin/test_webgl_crossorigin_textures.html"
        " | called finish() multiple times",
    ]


def test_distinct_subtests_stay_distinct(reference: Path) -> None:
    lines = [line for line in _logview(reference, "wpt-multiple") if line_kind(line)]
    assert len({normalise_failure_line(line) for line in lines}) == len(
        {strip_log_prefix(line) for line in lines}
    )


def test_crashes_are_their_own_kind_one_per_test(reference: Path) -> None:
    lines = _logview(reference, "xpcshell-crash")
    assert failure_lines(lines) == []
    crashes = failure_lines(lines, LineKind.CRASH)
    tests = {strip_log_prefix(line).rsplit(" | ", 1)[1] for line in lines if line_kind(line)}
    assert len(crashes) == len(tests) > 1
    assert all("<ptr>" in crash and "0x" not in crash for crash in crashes)


def test_reftest_keeps_both_files_and_drops_pixel_counts(reference: Path) -> None:
    assert failure_lines(_logview(reference, "reftest-fail")) == [
        "TEST-UNEXPECTED-FAIL | layout/reftests/bugs/1804872-2.html == "
        "layout/reftests/bugs/1804872-2-ref.html | image comparison, max difference: <n>, "
        "number of differing pixels: <n>"
    ]


def test_bug_suggestions_keep_test_unexpected_lines_only(reference: Path) -> None:
    # Treeherder stores each error line, cleaned of its log prefix, as `search`.
    errors = _logview(reference, "mochitest-end") + _logview(reference, "leak")
    suggestions = [{"search": strip_log_prefix(line), "bugs": {}} for line in errors]
    suggestions += [{"search": None}, {"no-search": 1}, "not a dict"]  # type: ignore[list-item]
    lines = failure_lines_from_bug_suggestions(suggestions)
    assert all(line.startswith("TEST-UNEXPECTED-") for line in lines)
    assert len(lines) == len(set(lines)) == 8
    assert lines[-1].startswith("TEST-UNEXPECTED-FAIL | leakcheck large nsGlobalWindowInner")
    crashes = failure_lines_from_bug_suggestions(suggestions, LineKind.CRASH)
    assert crashes == [
        "PROCESS-CRASH | application crashed [@ libc.so + <ptr>] | "
        "dom/canvas/test/crossorigin/mochitest.toml"
    ]


def _logs_treeherder_parsed(reference: Path) -> list[tuple[str, list[str], list[dict]]]:
    out = []
    for parsed in sorted((reference / "treeherder/logs").glob("*.logview.json")):
        name = parsed.name.removesuffix(".logview.json")
        raw = gzip.decompress((reference / f"treeherder/logs/{name}.log.gz").read_bytes())
        errors = json.loads(parsed.read_text())["errors"]
        out.append((name, raw.decode("utf-8", "replace").splitlines(), errors))
    return out


def test_raw_logs_give_the_failure_lines_treeherder_extracted_and_no_other(
    reference: Path,
) -> None:
    """Sheriff's own reading of a live_backing.log (when Treeherder has not parsed it)
    against Treeherder's parse of the same real logs."""
    checked = 0
    for name, lines, errors in _logs_treeherder_parsed(reference):
        ours = log_error_lines("\n".join(lines))
        extracted = [
            strip_log_prefix(e["line"]) for e in errors if line_kind(e["line"]) is not None
        ]
        # Every TEST-UNEXPECTED-* / PROCESS-CRASH line Treeherder extracted is found ...
        assert [line for line in extracted if line not in ours] == [], name
        # ... none is invented: each is such a line of the log, and where Treeherder kept
        # every error line (fewer than its cap of 40) the two lists are the same.
        cleaned = {strip_log_prefix(line) for line in lines}
        assert all(line in cleaned and line_kind(line) for line in ours), name
        if len(errors) < 40:
            assert ours == extracted, name
        # And they normalise as the lines of Treeherder's bug suggestions do.
        assert failure_lines(ours) == failure_lines(extracted), name
        checked += len(extracted)
    assert checked >= 50  # mochitest, reftest, wpt, xpcshell crash, leak and timeout logs


def test_a_log_without_failure_lines_gives_none() -> None:
    assert log_error_lines("") == []
    assert (
        log_error_lines("[task 2026-11-02T08:00:00.000Z] 08:00:01 INFO - TEST-PASS | a | ok") == []
    )
    line = "[task 2026-11-02T08:00:00.000Z] 08:00:01 INFO - TEST-UNEXPECTED-FAIL | a.js | boom"
    assert log_error_lines(f"x\n{line}\ny") == ["TEST-UNEXPECTED-FAIL | a.js | boom"]


def test_a_crash_between_tests_normalises_its_process_id() -> None:
    """`PROCESS-CRASH | signature | pid: N` (mozlog names the process when no test ran):
    two runs of one crash differ in the pointer and the pid only."""
    one = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo + 0x1a2b] | pid: 4242"
    two = "12:00:01  WARNING -  PROCESS-CRASH | application crashed [@ mozilla::dom::Foo + 0xff]"
    two += " | pid: 77"
    assert (
        crash_lines([one])
        == crash_lines([two])
        == ["PROCESS-CRASH | application crashed [@ mozilla::dom::Foo + <ptr>] | pid: <pid>"]
    )
    other = "PROCESS-CRASH | application crashed [@ mozilla::dom::Bar + 0x1] | pid: 4242"
    assert crash_lines([other]) != crash_lines([one])
    # A crash in a test keeps the test; TEST-UNEXPECTED lines are not crash lines.
    assert crash_lines(
        ["PROCESS-CRASH | crashed [@ x] | dom/a/test_1.html", "TEST-UNEXPECTED-FAIL | a | b"]
    ) == ["PROCESS-CRASH | crashed [@ x] | dom/a/test_1.html"]


def test_a_crash_line_names_the_test_it_crashed_in_and_no_other() -> None:
    sig = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo + <ptr>]"
    assert crashed_test(f"{sig} | dom/a/test_1.html") == "dom/a/test_1.html"
    assert crashed_test(f"{sig} | dom/a/xpcshell.toml:dom/a/test_b.js") == "dom/a/test_b.js"
    assert crashed_test(f"{sig} | pid: <pid>") is None  # between tests
    assert crashed_test(f"{sig} | dom/a/xpcshell.toml") is None  # at a manifest's end
    assert crashed_test("TEST-UNEXPECTED-FAIL | dom/a/test_1.html | boom") is None
