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
    "failure_lines",
    "failure_lines_from_bug_suggestions",
    "line_kind",
    "normalise_failure_line",
    "strip_log_prefix",
]


class LineKind(StrEnum):
    """What a failure line reports."""

    TEST_FAILURE = "test-failure"  # TEST-UNEXPECTED-*: what SPEC §3 compares
    CRASH = "crash"  # PROCESS-CRASH: kept apart, evidence only


# Prefixes a raw log line carries before the harness's own text (Treeherder strips the
# same ones before it stores `search`): mozharness's "HH:MM:SS LEVEL - " and the
# "PID 1234 | " / "GECKO(1234) | " of the process whose output was captured.
_MOZHARNESS_PREFIX = re.compile(
    r"^\s*\[?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s+"
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


def _normalise_test(field: str) -> str:
    for pattern in _TEMP_PATHS:
        field = pattern.sub("<tmp>", field)
    field = _TASK_DIR.sub("task_<n>", field)
    field = _IPV4.sub("<ip>", field)
    field = _LOOPBACK_PORT.sub(r"\1:<port>", field)
    return _URL_PORT.sub(r"\1:<port>", field)


def _normalise_message(field: str) -> str:
    field = _UUID.sub("<uuid>", field)
    for pattern in _TEMP_PATHS:
        field = pattern.sub("<tmp>", field)
    field = _TASK_DIR.sub("task_<n>", field)
    for pattern in _TIMESTAMPS:
        field = pattern.sub("<time>", field)
    field = _IPV4.sub("<ip>", field)
    field = _LOOPBACK_PORT.sub(r"\1:<port>", field)
    field = _URL_PORT.sub(r"\1:<port>", field)
    field = _POINTER.sub("<ptr>", field)
    field = _LONG_HEX.sub("<hex>", field)
    for pattern in _PIDS:
        field = pattern.sub(r"\1<pid>", field)
    field = _DURATION.sub("<duration>", field)
    return _NUMBER.sub("<n>", field)


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
        out.append(_normalise_test(field) if index == test_index else _normalise_message(field))
    return _SPACES.sub(" ", " | ".join(out)).strip()


def failure_lines(lines: Iterable[str], kind: LineKind = LineKind.TEST_FAILURE) -> list[str]:
    """The normalised lines of one kind among raw or cleaned error lines, de-duplicated in order."""
    seen: dict[str, None] = {}
    for line in lines:
        if line_kind(line) is kind:
            seen.setdefault(normalise_failure_line(line), None)
    return list(seen)


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
