"""benchmarks/worlds.py's summary: the per-world targets counted over the worlds."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

WORLDS = Path(__file__).parents[2] / "benchmarks" / "worlds.py"


def _worlds_script() -> Any:
    spec = importlib.util.spec_from_file_location("worlds_benchmark", WORLDS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _metrics(precision: float, recall: float) -> dict[str, Any]:
    return {
        "scenario": "w",
        "precision": precision,
        "recall": recall,
        "eligible": 10,
        "retriggers": 15,
        "retriggers_per_eligible_case": 1.5,
        "calibration": {"bins": [[0, 0.0, 0]] * 10},
        "culprits": {"in_scope": 1, "correct": 1, "found": 1, "backfill_runs": 4},
        "wrong_verdicts": [],
    }


def test_the_summary_counts_the_worlds_that_meet_each_per_world_target() -> None:
    rows = [
        ("a", _metrics(0.5, 0.9), _metrics(1.0, 0.89), None),  # both met (0.89 >= 0.88)
        ("b", _metrics(0.5, 1.0), _metrics(0.97, 0.97), None),  # neither
        ("c", _metrics(0.5, 0.5), _metrics(0.98, 0.2), None),  # precision only
    ]
    lines = _worlds_script().summary(rows)
    assert lines[0] == ("worlds meeting precision >= 0.98: 2 of 3; recall >= seed's - 0.02: 1 of 3")
    assert "target precision >= 0.98 on every world: MISSED" in lines
    assert "target recall >= seed's - 0.02 on every world: MISSED" in lines


def test_the_summary_pools_the_missed_regression_cases_by_kind() -> None:
    a, b = _metrics(1.0, 0.5), _metrics(1.0, 0.5)
    a["missed_by_kind"] = {"same line, flaky test got worse, later": 3}
    b["missed_by_kind"] = {
        "crash line, test not flaky before, later": 5,
        "same line, flaky test got worse, later": 1,
    }
    lines = _worlds_script().summary([("a", a, a, None), ("b", b, b, None)])
    start = lines.index("missed regression cases by kind (the regression's line, test, when):")
    assert lines[start + 1 : start + 3] == [
        "     5 crash line, test not flaky before, later",
        "     4 same line, flaky test got worse, later",
    ]
