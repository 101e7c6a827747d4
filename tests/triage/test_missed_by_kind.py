"""`sim run`'s missed regression cases counted by what their regression was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sheriff.triage.report import render_report
from sheriff.triage.simrun import missed_by_kind, missed_kind

REGRESSIONS: list[dict[str, Any]] = [
    {"index": 0, "culprit_push": 10, "failure": "same", "flaky_tests": ["a.js"]},
    {"index": 1, "culprit_push": 20, "failure": "crash", "flaky_tests": []},
]


def _wrong(push: int, verdict: str, truth: str, failures: list[list[Any]]) -> dict[str, Any]:
    return {"push_index": push, "verdict": verdict, "truth": truth, "failures": failures}


def test_a_missed_case_is_told_by_its_regressions_line_test_and_distance_from_the_onset() -> None:
    # The flaky test that got worse, 3 pushes after the regression's push: at the onset.
    assert missed_kind([["a.js", 0]], 13, REGRESSIONS) == (
        "same line, flaky test got worse, within 3 pushes of the onset"
    )
    assert missed_kind([["a.js", 0]], 14, REGRESSIONS) == "same line, flaky test got worse, later"
    # A flake beside the regressed test does not make the case a flaky test's.
    assert missed_kind([["flake.js", None], ["b.js", 1]], 20, REGRESSIONS) == (
        "crash line, test not flaky before, within 3 pushes of the onset"
    )
    # The regressed test of a regression that was flaky in another of its tests.
    assert missed_kind([["c.js", 0]], 30, REGRESSIONS) == "same line, test not flaky before, later"


def test_only_missed_regression_cases_are_counted_most_first() -> None:
    wrong = [
        _wrong(30, "intermittent", "regression", [["a.js", 0]]),
        _wrong(21, "intermittent", "regression", [["b.js", 1]]),
        _wrong(40, "intermittent", "regression", [["a.js", 0]]),
        _wrong(12, "regression", "intermittent", [["a.js", None]]),  # a false regression
    ]
    counts = missed_by_kind(wrong, REGRESSIONS)
    assert counts == {
        "same line, flaky test got worse, later": 2,
        "crash line, test not flaky before, within 3 pushes of the onset": 1,
    }
    assert list(counts) == [
        "same line, flaky test got worse, later",
        "crash line, test not flaky before, within 3 pushes of the onset",
    ]


def test_the_demo_report_says_where_the_missed_cases_came_from(tmp_path: Path) -> None:
    metrics: dict[str, Any] = {
        "scenario": "w",
        "policy": "history",
        "virtual_hours": 1.0,
        "wall_seconds": 1.0,
        "cases": 3,
        "truth": {"regression": 3, "intermittent": 0, "infra": 0},
        "verdicts": {
            "regression": 1,
            "intermittent": 2,
            "infra": 0,
            "not-eligible": 0,
            "classified": 0,
            "pending": 0,
        },
        "precision": 1.0,
        "recall": 0.33,
        "time_to_verdict_minutes": {"p50": 10.0, "p95": 20.0},
        "retriggers": 4,
        "retriggers_per_eligible_case": 1.3,
        "excess_retriggers": 0,
        "http_requests": {"taskcluster": 1, "treeherder": 1},
        "missed_by_kind": {"same line, flaky test got worse, later": 2},
    }
    text = render_report(metrics, tmp_path / "d.db")
    assert (
        "  missed regression cases: 2, by kind:\n       2 same line, flaky test got worse, later\n"
    ) in text
    assert "missed regression cases" not in render_report(
        {**metrics, "missed_by_kind": {}}, tmp_path / "d.db"
    )
