"""The simulated Bugscache: what Treeherder's bug search finds for a failure line.

Treeherder's `Bugscache.search` (treeherder/model/models.py) is a substring search of bug
summaries for the line's search term (the test's file name, or a crash signature): every
unresolved bug whose summary contains it is in `open_recent`. So besides an intermittent
test's tracking bug it finds meta bugs, permanent-failure bugs, the bug filed for a
regression, crash bugs of a shared signature, and Treeherder's internal issues (`id`
null, an `internal_id`, an occurrence count) filed while classifying. Each bug is drawn
once per test (or per regression) from the seed; bugs filed because of a regression exist
only on pushes some time after it landed.
"""

from __future__ import annotations

from typing import Any

from sheriff.sim import draws
from sheriff.sim.artifacts import FailureLine
from sheriff.sim.entities import Task
from sheriff.sim.world import World

META_SHARE = 0.15  # failing tests whose directory has an open meta bug naming them
PERMA_SHARE = 0.6  # regressed tests that get a "Perma" bug, two pushes after the culprit
REGRESSION_BUG_SHARE = 0.5  # regressed tests that get a regression bug, a push after it
INTERNAL_SHARE = 0.4  # failures someone classified into an internal issue (no Bugzilla id)
CRASH_BUGS = 3  # bugs sharing a crash signature


def _bug(
    bug_id: int | None,
    internal_id: int,
    summary: str,
    keywords: str,
    *,
    crash_signature: str = "",
    occurrences: int | None = None,
) -> dict[str, Any]:
    """A bug as Bugscache.serialize renders it."""
    return {
        "id": bug_id,
        "internal_id": internal_id,
        "status": "NEW",
        "resolution": "",
        "summary": summary,
        "dupe_of": None,
        "crash_signature": crash_signature,
        "keywords": keywords,
        "whiteboard": "",
        "occurrences": occurrences,
    }


def _internal_id(world: World, *keys: object) -> int:
    return 30_000 + int(draws.unit(world.seed, "internal-id", *keys) * 60_000)


def open_bugs(world: World, task: Task, line: FailureLine) -> list[dict[str, Any]]:
    """`bugs.open_recent` of one error line of `task`'s run."""
    test = line.test
    if not test:
        return []
    catalog = world.catalog
    name = test.rsplit("/", 1)[-1]
    mode = catalog.failure_mode(test)
    if line.text.startswith("PROCESS-CRASH") and mode.crash_signature:
        signature = mode.crash_signature
        return [
            _bug(
                1_600_000 + int(draws.unit(world.seed, "crash-bug", signature, i) * 1e5),
                _internal_id(world, "crash", signature, i),
                f"Crash in [@ {signature}]",
                "crash",
                crash_signature=f"[@ {signature}]",
            )
            for i in range(CRASH_BUGS)
        ]
    found: list[dict[str, Any]] = []
    bug = catalog.known_bug.get(test)
    if bug is not None:
        found.append(
            _bug(
                bug,
                bug - 1_000_000,
                f"Intermittent {test} | single tracking bug",
                "intermittent-failure,intermittent-testcase",
            )
        )
    push = task.push.index
    for index, by_manifest in enumerate(catalog.regressed):
        if not any(test in tests for tests in by_manifest.values()):
            continue
        culprit = world.scenario.regressions[index].push
        culprit_bug = 1_900_000 + culprit
        filed = (
            # (pushes after the culprit, share, kind, summary, keywords)
            (1, REGRESSION_BUG_SHARE, "regression", f"{name} fails after bug {culprit_bug}",
             "regression"),
            (2, PERMA_SHARE, "perma",
             f"Perma failing {test} | TEST-UNEXPECTED-{mode.status} since bug {culprit_bug}",
             "intermittent-failure,regression"),
        )  # fmt: skip
        for after, share, kind, summary, keywords in filed:
            if push >= culprit + after and _drawn(world, share, f"{kind}-bug", test):
                bug_id = 1_950_000 + int(draws.unit(world.seed, f"{kind}-bug-id", test) * 4e4)
                found.append(_bug(bug_id, _internal_id(world, kind, test), summary, keywords))
        if _drawn(world, INTERNAL_SHARE, "internal-issue", test):
            found.append(_internal_issue(world, test, mode.status))
    if (
        bug is None
        and test in catalog.flaky_tests
        and _drawn(world, INTERNAL_SHARE, "internal-issue", test)
    ):
        found.append(_internal_issue(world, test, mode.status))
    if _drawn(world, META_SHARE, "meta-bug", test.rsplit("/", 1)[0]):
        folder = test.rsplit("/", 1)[0]
        found.append(
            _bug(
                1_500_000 + int(draws.unit(world.seed, "meta-bug-id", folder) * 1e5),
                _internal_id(world, "meta", folder),
                f"[meta] Intermittent failures in {folder} ({name} and others)",
                "meta",
            )
        )
    # Bugscache.search orders by trigram similarity: the shortest summaries first, here.
    return sorted(found, key=lambda b: len(b["summary"]))


def _internal_issue(world: World, test: str, status: str) -> dict[str, Any]:
    occurrences = 1 + int(draws.unit(world.seed, "occurrences", test) * 4)
    return _bug(
        None,
        _internal_id(world, "issue", test),
        f"Intermittent {test} | TEST-UNEXPECTED-{status}",
        "",
        occurrences=occurrences,
    )


def _drawn(world: World, share: float, *keys: object) -> bool:
    return draws.unit(world.seed, *keys) < share
