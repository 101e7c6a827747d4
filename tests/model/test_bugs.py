"""What a bug suggestion really says about an open intermittent bug (sheriff.model.bugs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sheriff.model.bugs import TOO_MANY, intermittent_bugs

TEST = "dom/events/test/browser_drag_3_1.js"


def _bug(**fields: Any) -> dict[str, Any]:
    bug = {
        "id": 1734001,
        "internal_id": 734001,
        "status": "NEW",
        "resolution": "",
        "summary": f"Intermittent {TEST} | single tracking bug",
        "dupe_of": None,
        "crash_signature": "",
        "keywords": "intermittent-failure,intermittent-testcase",
        "whiteboard": "",
        "occurrences": None,
    }
    return {**bug, **fields}


def _suggestion(*bugs: dict[str, Any], test: str = TEST) -> dict[str, Any]:
    return {
        "search": f"TEST-UNEXPECTED-FAIL | {test} | timed out",
        "path_end": test,
        "bugs": {"open_recent": list(bugs), "all_others": []},
    }


def test_the_tests_tracking_bug_counts() -> None:
    assert intermittent_bugs(_suggestion(_bug())) == [1734001]


@pytest.mark.parametrize(
    "noise",
    [
        _bug(
            id=1500001, summary="[meta] Intermittent failures in dom/events (browser_drag_3_1.js)"
        ),
        _bug(id=1500002, keywords="meta"),
        _bug(id=1990001, summary=f"Perma failing {TEST} | TEST-UNEXPECTED-FAIL since bug 1900011"),
        _bug(id=1990002, summary=f"Permanent failure in {TEST}"),
        _bug(
            id=1950001, summary="browser_drag_3_1.js fails after bug 1900011", keywords="regression"
        ),
        _bug(id=None, internal_id=31234, keywords="", occurrences=2),  # an internal issue
        _bug(id=1700001, summary="Intermittent dom/events/test/browser_drag_3_10.js | timeout"),
        _bug(id=1600001, summary="Crash in [@ mozilla::dom::Document::Destroy]", keywords="crash"),
        _bug(id=1734002, resolution="FIXED"),
        _bug(id=1734003, dupe_of=1734001),
    ],
)
def test_what_a_full_text_search_also_finds_is_no_intermittent_bug(noise: dict) -> None:
    assert intermittent_bugs(_suggestion(noise)) == []
    assert intermittent_bugs(_suggestion(noise, _bug())) == [1734001]


def test_a_search_term_that_finds_too_many_bugs_says_nothing() -> None:
    many = [_bug(id=1734001 + i) for i in range(TOO_MANY + 1)]
    assert intermittent_bugs(_suggestion(*many)) == []
    assert len(intermittent_bugs(_suggestion(*many[:TOO_MANY]))) == TOO_MANY


def test_treeherders_own_sample_answer(reference: Path) -> None:
    """Treeherder's bug_suggestions sample (tests/ui/mock): its open intermittent bugs count,
    a line without a test path or without bugs gives none."""
    answer = json.loads((reference / "treeherder/bug_suggestions.json").read_text())
    found = {s["search"][:40]: intermittent_bugs(s) for s in answer}
    assert [ids for ids in found.values() if ids] == [[1622925], [1643980]]
