"""Structured failures of a test run, read from its mozlog errorsummary artifact.

An errorsummary is one JSON object per line, written by mozlog's errorsummary formatter:
a `test_groups` line first (the manifests the task runs), then the unexpected results
(`test_result`), `crash` and `log` (level ERROR/CRITICAL) lines as they happen, and at the
end of the suite one `group_result` line per group that ran tests. Those closing
`group_result` lines are how a reader knows the harness finished: a file with groups but
no `group_result` at all, or no `test_groups` line (older harnesses: nothing tells that the
suite ended), or a line that is not JSON (usually a cut-off last line), is *incomplete*
(SPEC §3 step 4: such a run gets the verdict infra and is not retriggered). A group may
lack its result in a complete file: Treeherder's real passing files omit the result of a
group whose tests were all skipped, so a missing result alone is not incompleteness.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sheriff.model.failure_lines import normalise_failure_line

__all__ = [
    "ErrorSummary",
    "FailureKind",
    "StructuredFailure",
    "failures_from_errorsummary",
    "parse_errorsummary",
]


class FailureKind(StrEnum):
    """Which errorsummary action a structured failure comes from."""

    TEST = "test"  # test_result with an unexpected status
    CRASH = "crash"  # crash
    LOG = "log"  # log at level ERROR or CRITICAL
    GROUP = "group"  # group_result that did not pass


@dataclass(frozen=True, order=True)
class StructuredFailure:
    """One failure as (test, subtest, status); texts that vary between runs are normalised.

    For a crash, `subtest` is the normalised crash signature; for an error log line,
    `test` is empty and `subtest` the normalised message; for a group, `test` is the
    manifest (group) and `subtest` is None.
    """

    test: str
    subtest: str | None
    status: str
    kind: FailureKind = FailureKind.TEST

    @property
    def key(self) -> tuple[str, str | None, str]:
        """The (test, subtest, status) tuple that two runs of the same failure share."""
        return (self.test, self.subtest, self.status)


@dataclass(frozen=True)
class ErrorSummary:
    """What an errorsummary says: its failures, its groups, and whether it is complete."""

    failures: tuple[StructuredFailure, ...]
    groups: tuple[str, ...]
    group_results: dict[str, str] = field(default_factory=dict)
    incomplete_reason: str | None = None

    @property
    def complete(self) -> bool:
        """True when the harness wrote the closing `group_result` of every group."""
        return self.incomplete_reason is None


_PASSING = frozenset({"PASS", "OK", "SKIP"})
_LOG_LEVELS = frozenset({"ERROR", "CRITICAL"})
# A group with no tests to run is reported as such; `default` is mozlog's catch-all.
_IGNORED_GROUPS = frozenset({"default"})


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return normalise_failure_line(str(value))


def _unexpected(entry: dict[str, Any]) -> bool:
    status = entry.get("status")
    expected = entry.get("expected")
    if expected is None:  # mozlog omits `expected` when the status was the expected one
        return status not in _PASSING
    known = entry.get("known_intermittent") or []
    return status != expected and status not in known


def _failure(entry: dict[str, Any]) -> StructuredFailure | None:
    action = entry.get("action")
    if action == "test_result" and _unexpected(entry):
        return StructuredFailure(
            str(entry.get("test", "")), _text(entry.get("subtest")), str(entry.get("status"))
        )
    if action == "crash":
        signature = _text(entry.get("signature")) or ""
        return StructuredFailure(
            str(entry.get("test") or ""), signature, "CRASH", FailureKind.CRASH
        )
    if action == "log" and str(entry.get("level", "")).upper() in _LOG_LEVELS:
        level = str(entry["level"]).upper()
        return StructuredFailure("", _text(entry.get("message")) or "", level, FailureKind.LOG)
    if action == "group_result" and entry.get("status") not in _PASSING:
        return StructuredFailure(
            str(entry.get("group", "")), None, str(entry.get("status")), FailureKind.GROUP
        )
    return None


def parse_errorsummary(text: str) -> ErrorSummary:
    """Parse an errorsummary file's text; never raises on malformed content.

    Lines that are not JSON objects are skipped and make the summary incomplete (a cut
    last line is the usual case: the task died while writing it).
    """
    failures: dict[StructuredFailure, None] = {}
    groups: list[str] | None = None
    group_results: dict[str, str] = {}
    problems: list[str] = []
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python goes
            entry = None
        if not isinstance(entry, dict):
            cut = number == len(lines) and not text.endswith("\n")
            problems.append(f"line {number} is {'cut off' if cut else 'not a JSON object'}")
            continue
        action = entry.get("action")
        if action == "test_groups" and isinstance(entry.get("groups"), list):
            groups = (groups or []) + [str(g) for g in entry["groups"]]
        elif action == "group_result" and "group" in entry:
            group_results[str(entry["group"])] = str(entry.get("status"))
        failure = _failure(entry)
        if failure is not None:
            failures.setdefault(failure, None)
    if not lines or all(not raw.strip() for raw in lines):
        problems.append("the file is empty")
    elif groups is None:
        problems.append("no test_groups line, so no way to tell the suite finished")
    elif not group_results and any(g not in _IGNORED_GROUPS for g in groups):
        problems.append(
            f"none of its {len(groups)} groups has a group_result: the suite never ended"
        )
    return ErrorSummary(
        failures=tuple(failures),
        groups=tuple(dict.fromkeys(groups or [])),
        group_results=group_results,
        incomplete_reason="; ".join(problems) or None,
    )


def failures_from_errorsummary(text: str) -> list[StructuredFailure]:
    """The structured failures of an errorsummary, de-duplicated in order of appearance."""
    return list(parse_errorsummary(text).failures)
