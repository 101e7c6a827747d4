"""Failure lines of a test run, normalised so that runs of the same failure compare equal.

A failure line is what Treeherder's log parser keeps of a log's error line (its
`bug_suggestions` entry's `search`): `TEST-UNEXPECTED-<STATUS> | <test> | <message>`, or
`PROCESS-CRASH | <signature> | <test>`. Two runs of the same failure differ in what the
machine, the clock and the allocator chose (timestamps, durations, pointers, ports, pids,
temporary directories, uuids, measured numbers); `normalise_failure_line` replaces those
with placeholders and keeps the rest verbatim.

The test field is kept almost verbatim on purpose: the numbers in `test_bug1804872.html`
tell two tests apart, so only temporary directories and loopback ports are replaced in it.
The message field loses every free-standing number (`got 0.234, expected 0.5` →
`got <n>, expected <n>`) but keeps numbers that are part of a word, a path or a source
position (`h264`, `browser_1.js:334:7`), so the assertion text stays recognisable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

__all__ = [
    "LineKind",
    "crash_accounted_for",
    "crash_lines",
    "failing_test",
    "failure_lines",
    "failure_lines_from_bug_suggestions",
    "line_kind",
    "log_error_lines",
    "normalise_failure_line",
    "strip_log_prefix",
    "unaccounted_crashes",
    "with_crash_lines",
]


class LineKind(StrEnum):
    """What a failure line reports."""

    TEST_FAILURE = "test-failure"  # TEST-UNEXPECTED-*: what SPEC §3 compares
    CRASH = "crash"  # PROCESS-CRASH: kept apart, evidence only


# Prefixes a raw log line carries before the harness's own text (Treeherder strips the
# same ones before it stores `search`): the worker's "[task <ISO time>] ", mozharness's
# "HH:MM:SS LEVEL - " and the "PID 1234 | " / "GECKO(1234) | " of the captured process.
_MOZHARNESS_PREFIX = re.compile(
    r"^\s*(?:\[task [^\]]*\]\s*)?\[?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s+"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL)\s+-\s*"
)
_PROCESS_PREFIX = re.compile(r"^(?:PID \d+|GECKO\(\d+\))\s*\|\s*")
# Reftest harnesses print "REFTEST TEST-UNEXPECTED-FAIL | …"; the kind is the same.
_REFTEST_PREFIX = re.compile(r"^REFTEST\s+(?=TEST-UNEXPECTED-)")

_TEST_FAILURE = re.compile(r"^TEST-UNEXPECTED-[A-Z-]+\b")
_CRASH = re.compile(r"^PROCESS-CRASH\b")
_FIELD_SEPARATOR = re.compile(r"\s+\|\s+|\s+\|$")

_SEP = r"[\\/]+"  # Windows paths appear with \, \\ (JSON-escaped) or /
_STOP = r"[^\s\\/|'\"()\[\]<>,;]"  # one character of a path component

_UUID = re.compile(
    r"\{?\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b\}?"
)
# A temporary directory is replaced up to and including its first (random) component;
# what follows it (a profile file name, say) is the same in every run and stays.
_TEMP_PATHS = (
    re.compile(rf"(?:/private)?/var/folders/{_STOP}+/{_STOP}+/T(?:/{_STOP}+)?"),
    re.compile(rf"(?<![\w.~-])/tmp(?:/{_STOP}+)?"),
    re.compile(
        rf"\b[A-Za-z]:{_SEP}Users{_SEP}{_STOP}+{_SEP}AppData{_SEP}Local{_SEP}Temp"
        rf"(?:{_SEP}{_STOP}+)?",
        re.IGNORECASE,
    ),
    re.compile(rf"\b[A-Za-z]:{_SEP}(?:Windows{_SEP})?Temp(?:{_SEP}{_STOP}+)?", re.IGNORECASE),
)
# Generic worker accounts and task directories: /home/task_1234, Z:\task_1234.
_TASK_DIR = re.compile(r"\btask_\d+\b")

_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
_TIMESTAMPS = (
    # ISO 8601 / RFC 3339: 2026-11-02T08:00:00.123Z, 2026-11-02 08:00:00+00:00.
    re.compile(rf"\b\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]{_CLOCK}(?:Z|[+-]\d{{2}}:?\d{{2}})?)?\b"),
    # JavaScript Date: Thu Oct 08 2020 20:47:46 GMT+0000 (Coordinated Universal Time).
    re.compile(rf"\b{_DAY} {_MONTH} \d{{1,2}} \d{{4}} {_CLOCK}(?: GMT[+-]\d{{4}})?(?: \([^)]*\))?"),
    # HTTP date: Thu, 08 Oct 2020 20:47:46 GMT.
    re.compile(rf"\b{_DAY}, \d{{1,2}} {_MONTH} \d{{4}} {_CLOCK}(?: GMT| [+-]\d{{4}})?"),
    # Time of day alone: 20:47:46, 20:47:46.123.
    re.compile(r"(?<![\w:.])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\w:])"),
)
_IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.]*\w)")
_LOOPBACK_PORT = re.compile(r"(localhost|<ip>|\[[0-9a-fA-F:]+\]):\d{1,5}\b", re.IGNORECASE)
_URL_PORT = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/:|]+):\d{1,5}\b", re.IGNORECASE)
_POINTER = re.compile(r"\b0[xX][0-9a-fA-F]+\b")
# Hashes and revisions: long runs of hex digits that mix digits and letters.
_LONG_HEX = re.compile(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{12,}\b")
_PIDS = (
    re.compile(r"(\b(?:pid|tid|process|thread)\b\s*(?:[:=#]|id\b)?\s*)\d+", re.IGNORECASE),
    re.compile(r"(\bGECKO\()\d+(?=\))"),
    # Gecko's "[Parent 2029, IPC I/O Parent]" / "[Child 1234, Main Thread]".
    re.compile(r"(\[(?:Parent|Child|GPU|RDD|Socket|Utility|GMP|Content|Main)\s+)\d+"),
)
_DURATION = re.compile(
    r"(?<![\w.])(?:\d+h)?(?:\d+m(?!s))?\d+(?:\.\d+)?\s*"
    r"(?:ms|msec|millis(?:econds?)?|us|µs|ns|s|secs?|seconds?|mins?|minutes?|hrs?|hours?)\b",
    re.IGNORECASE,
)
# A free-standing number: not glued to a word, a path, a version or a source position.
_NUMBER = re.compile(
    r"(?<![^\s(\[{,;=<>'\"!*/+~])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"(?:%|px|[kKMG]i?B|bytes?)?(?=$|[\s)\]},;:'\"!?%]|\.(?!\w))"
)
_SPACES = re.compile(r"\s+")
# A crash between tests names the process where a crash in a test names the test
# (mozlog's tbpl formatter): `PROCESS-CRASH | application crashed [@ sig] | pid: 1234`.
_CRASH_PROCESS = re.compile(r"^(pid:?\s*)\d+$", re.IGNORECASE)


def strip_log_prefix(line: str) -> str:
    """Drop what a raw log line carries before the harness text (as Treeherder does)."""
    line = _MOZHARNESS_PREFIX.sub("", line.strip(), count=1)
    line = _PROCESS_PREFIX.sub("", line, count=1)
    return _REFTEST_PREFIX.sub("", line, count=1)


def line_kind(line: str) -> LineKind | None:
    """The kind of a (raw or cleaned) failure line, or None for any other error line."""
    cleaned = strip_log_prefix(line)
    if _TEST_FAILURE.match(cleaned):
        return LineKind.TEST_FAILURE
    if _CRASH.match(cleaned):
        return LineKind.CRASH
    return None


# (pattern, replacement, needles): a rule runs only when one of its needles is in the
# (lower-cased) text, which skips most of the twenty scans on a typical line.
_Rule = tuple[re.Pattern[str], str, tuple[str, ...]]
_TEMP_RULES: tuple[_Rule, ...] = (
    (_TEMP_PATHS[0], "<tmp>", ("/var/folders",)),
    (_TEMP_PATHS[1], "<tmp>", ("/tmp",)),
    (_TEMP_PATHS[2], "<tmp>", ("appdata",)),
    (_TEMP_PATHS[3], "<tmp>", ("temp",)),
    (_TASK_DIR, "task_<n>", ("task_",)),
)
_ADDRESS_RULES: tuple[_Rule, ...] = (
    (_IPV4, "<ip>", (".",)),
    (_LOOPBACK_PORT, r"\1:<port>", (":",)),
    (_URL_PORT, r"\1:<port>", ("://",)),
)
_TEST_RULES = _TEMP_RULES + _ADDRESS_RULES
_MESSAGE_RULES: tuple[_Rule, ...] = (
    (_UUID, "<uuid>", ("-",)),
    *_TEMP_RULES,
    (_TIMESTAMPS[0], "<time>", ("-",)),
    *((pattern, "<time>", (":",)) for pattern in _TIMESTAMPS[1:]),
    *_ADDRESS_RULES,
    (_POINTER, "<ptr>", ("0x",)),
    (_LONG_HEX, "<hex>", ()),
    (_PIDS[0], r"\1<pid>", ("pid", "tid", "process", "thread")),
    (_PIDS[1], r"\1<pid>", ("gecko(",)),
    (_PIDS[2], r"\1<pid>", ("[",)),
    (_DURATION, "<duration>", ()),
    (_NUMBER, "<n>", ()),
)
_DIGIT = re.compile(r"\d")


def _apply(rules: tuple[_Rule, ...], field: str) -> str:
    if not _DIGIT.search(field):  # every rule but the temporary directories needs a digit
        rules = tuple(rule for rule in rules if rule[1] == "<tmp>")
    for pattern, replacement, needles in rules:
        lowered = field.lower()
        if not needles or any(needle in lowered for needle in needles):
            field = pattern.sub(replacement, field)
    return field


def _normalise_test(field: str) -> str:
    return _apply(_TEST_RULES, field)


def _normalise_message(field: str) -> str:
    return _apply(_MESSAGE_RULES, field)


def normalise_failure_line(line: str) -> str:
    """The failure line with what varies between runs of the same failure replaced.

    Pure and idempotent. The test path is kept (bar temporary directories and loopback
    ports), so lines of two different tests never normalise to the same string.
    """
    cleaned = _SPACES.sub(" ", strip_log_prefix(line)).strip()
    fields = [f.strip() for f in _FIELD_SEPARATOR.split(cleaned, maxsplit=2)]
    while len(fields) > 1 and not fields[-1]:  # "… | test | " with an empty message
        fields.pop()
    if len(fields) < 2:
        return _SPACES.sub(" ", _normalise_message(cleaned)).strip()
    kind = fields[0]
    # PROCESS-CRASH puts the signature before the test; TEST-UNEXPECTED the test first.
    test_index = len(fields) - 1 if _CRASH.match(kind) else 1
    out = [kind]
    for index, field in enumerate(fields[1:], start=1):
        if index == test_index and test_index != 1:
            # The process id of a crash between tests changes on every run; a test stays.
            field = _CRASH_PROCESS.sub(r"\1<pid>", field)
        out.append(_normalise_test(field) if index == test_index else _normalise_message(field))
    return _SPACES.sub(" ", " | ".join(out)).strip()


def failing_test(line: str) -> str | None:
    """The test path field of a `TEST-UNEXPECTED-… | test | message` line."""
    parts = [p.strip() for p in line.split(" | ")]
    if len(parts) >= 2 and parts[0].startswith("TEST-UNEXPECTED-") and parts[1]:
        return parts[1]
    return None


def crashed_test(line: str) -> str | None:
    """The test path a `PROCESS-CRASH | signature | test` line names (xpcshell's
    `manifest.toml:path`, the path); None for a crash between tests (`pid: <pid>`), at the
    end of a manifest (the manifest), or any other line."""
    fields = [f.strip() for f in line.split(" | ")]
    if len(fields) < 3 or not _CRASH.match(fields[0]):
        return None
    test = fields[-1].rsplit(":", 1)[-1].strip()
    return test if "/" in test and not test.endswith((".toml", ".ini")) else None


def crash_accounted_for(crash: str, tests: Iterable[str]) -> bool:
    """Whether a `PROCESS-CRASH | signature | test` line is the crash of one of `tests`
    (the tests the run's TEST-UNEXPECTED lines name). xpcshell names the crashed test
    `manifest.toml:path`; a crash between tests names its process (`pid: <pid>`) and a
    crash at the end of a manifest the manifest: those are no failing test's."""
    fields = [f.strip() for f in crash.split(" | ")]
    crashed = fields[-1] if len(fields) >= 3 else ""
    return any(crashed == test or crashed.endswith(":" + test) for test in tests if test)


def unaccounted_crashes(crashes: Iterable[str], lines: Iterable[str]) -> tuple[str, ...]:
    """The normalised `PROCESS-CRASH` lines among `crashes` that are no crash of a test
    one of the run's TEST-UNEXPECTED `lines` names: crashes between tests, de-duplicated."""
    tests = [failing_test(line) or "" for line in lines]
    return tuple(c for c in dict.fromkeys(crashes) if not crash_accounted_for(c, tests))


def failure_lines(lines: Iterable[str], kind: LineKind = LineKind.TEST_FAILURE) -> list[str]:
    """The normalised lines of one kind among raw or cleaned error lines, de-duplicated in order."""
    seen: dict[str, None] = {}
    for line in lines:
        if line_kind(line) is kind:
            seen.setdefault(normalise_failure_line(line), None)
    return list(seen)


def crash_lines(lines: Iterable[str] | None) -> list[str]:
    """The normalised `PROCESS-CRASH` lines among raw or cleaned error lines (signature
    with its pointers replaced, and the test, or `pid: <pid>` for a crash between tests)."""
    return failure_lines(lines or (), LineKind.CRASH)


def with_crash_lines(lines: Iterable[str], raw_lines: Iterable[str] | None) -> list[str]:
    """A run's failure lines and the normalised crash lines among its raw error lines:
    what a search for a regression looks for in it (a crash between tests has no other)."""
    return [*lines, *crash_lines(raw_lines)]


def failure_lines_from_bug_suggestions(
    suggestions: Iterable[Mapping[str, Any]], kind: LineKind = LineKind.TEST_FAILURE
) -> list[str]:
    """Normalised failure lines of a Treeherder `bug_suggestions` list, de-duplicated in order.

    By default only entries whose `search` starts with `TEST-UNEXPECTED-` (SPEC §3 step 8;
    a reftest's `REFTEST TEST-UNEXPECTED-` counts too). `kind=LineKind.CRASH` gives the
    `PROCESS-CRASH` entries instead, which sheriff keeps as evidence but does not compare.
    Entries without a string `search` are skipped.
    """
    searches = (s.get("search") for s in suggestions if isinstance(s, Mapping))
    return failure_lines((s for s in searches if isinstance(s, str)), kind)


def log_error_lines(text: str) -> list[str]:
    """A raw log's failure lines (`TEST-UNEXPECTED-*` and `PROCESS-CRASH`), cleaned of their
    prefixes as Treeherder's parser cleans them, in log order.

    What sheriff reads itself when Treeherder has not parsed a run's `live_backing.log`.
    On the real logs Treeherder parsed (tests/data/treeherder/logs) it finds every such line
    Treeherder extracted and no other; unlike Treeherder it keeps more than forty.
    """
    return [strip_log_prefix(line) for line in text.splitlines() if line_kind(line) is not None]
