"""What a bug suggestion really says: is there an open intermittent bug for this failure?

Treeherder's `bugs.open_recent` (Bugscache.search, treeherder/model/models.py) is every
unresolved bug whose summary contains the line's search term, the failing test's file
name: besides the test's intermittent bug it finds meta bugs, permanent-failure ("Perma")
bugs, the bug filed for the regression itself, other tests of the same name, bugs sharing
a crash signature, and Treeherder's internal issues (`id` null, an `internal_id`: one
person's classification, not a bug anyone triaged). Treeherder's own UI drops the list
when it holds more than `TOO_MANY` (ui/helpers/testSummary.js: too_many_open_recent).

A suggestion shows an open intermittent bug when one of its open bugs has a Bugzilla id,
the `intermittent-failure` keyword, a summary that names the failing test and is not a
meta or permanent-failure bug.

    >>> bug = {"id": 1734, "summary": "Intermittent dom/a/test_b.html | single tracking bug",
    ...        "keywords": "intermittent-failure", "resolution": ""}
    >>> intermittent_bugs({"path_end": "dom/a/test_b.html", "bugs": {"open_recent": [bug]}})
    [1734]
    >>> meta = dict(bug, id=1500, summary="[meta] Intermittent failures in dom/a (test_b.html)")
    >>> intermittent_bugs({"path_end": "dom/a/test_b.html", "bugs": {"open_recent": [meta]}})
    []
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["TOO_MANY", "intermittent_bugs", "is_intermittent_bug"]

TOO_MANY = 20  # Treeherder's thBugSuggestionLimit
_META = re.compile(r"\[meta\]", re.IGNORECASE)
# Mozilla's names for a test that fails every time: "Perma …", "permafail", "permanent".
_PERMANENT = re.compile(r"\bperma(?:nent|fail|[- ]?failing)?\b", re.IGNORECASE)


def is_intermittent_bug(bug: Mapping[str, Any], test: str | None) -> bool:
    """Whether an `open_recent` bug is an open intermittent bug of `test`."""
    if not isinstance(bug.get("id"), int) or bug.get("resolution") or bug.get("dupe_of"):
        return False  # an internal issue, a resolved bug or a duplicate
    keywords = {k.strip() for k in str(bug.get("keywords") or "").split(",")}
    if "intermittent-failure" not in keywords or "meta" in keywords:
        return False
    summary = str(bug.get("summary") or "")
    if _META.search(summary) or _PERMANENT.search(summary):
        return False
    if not test:
        return False
    # The summary names the test: its path, or at least its file name as a whole word.
    name = test.replace("\\", "/").rsplit("/", 1)[-1]
    pattern = rf"(?:^|[\s/\\|]){re.escape(name)}(?:$|[\s|])"
    return test in summary or re.search(pattern, summary) is not None


def intermittent_bugs(suggestion: Mapping[str, Any]) -> list[int]:
    """The ids of the open intermittent bugs of a bug suggestion's failing test."""
    bugs = (suggestion.get("bugs") or {}).get("open_recent") or []
    if len(bugs) > TOO_MANY:
        return []  # a search term this common says nothing (Treeherder shows none either)
    test = suggestion.get("path_end")
    return [b["id"] for b in bugs if isinstance(b, Mapping) and is_intermittent_bug(b, test)]
