"""A report's tests that its search never looked for are claimed for its culprit only
when their own runs show they began there (`backfill.reports.check_unsearched`)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sheriff.backfill import BackfillSettings, open_report_for_case
from sheriff.backfill.reports import check_unsearched
from sheriff.store.queries import recent_push_ids
from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    push,
    regression,
    regression_case,
)
from tests.backfill.conftest import LINE, START, TEST, A, B, FakeCI, label_on, revision
from tests.backfill.test_engine import _play

OTHER = "windows11-64"
TEST2 = "b/browser_other_chunk.js"
LINE2 = f"TEST-UNEXPECTED-FAIL | {TEST2} | expected 1, got 2"


def _push_id(conn: sa.Connection, index: int) -> int:
    return conn.execute(sa.select(push.c.id).where(push.c.revision == revision(index))).scalar_one()


def _landed_together(ci: FakeCI) -> tuple[int, int, int]:
    """Push 11 broke TEST; the other platform's TEST2 (its chunk ran clean once on each
    push before push 10, and not on pushes 10 and 11) first failed on push 12 too, so its
    case joined the search of TEST's case there (as `Group.landed_with` files it), and the
    report names TEST2 without looking for it. One regression record holds both cases."""
    ci.history()
    for index in range(10):
        ci.add_run(index, [A, B], failed=False, platform=OTHER)
    first = ci.regression_case(12)
    second = ci.regression_case(12, retriggers=4, platform=OTHER, lines=[LINE2])
    with ci.engine.begin() as conn:
        report_id = open_report_for_case(conn, first, START, BackfillSettings())
        assert report_id is not None
        assert open_report_for_case(conn, second, START, serving=report_id) == report_id
        conn.execute(
            sa.update(backfill_report)
            .where(backfill_report.c.id == report_id)
            .values(tests=[TEST2, TEST])
        )
        record = conn.execute(
            sa.insert(regression)
            .values(
                repository_id=conn.execute(sa.select(push.c.repository_id)).scalars().first(),
                status="confirmed",
                tests=[TEST2, TEST],
                failure_lines=[LINE, LINE2],
                configurations=["linux1804-64-qr/opt", f"{OTHER}/opt"],
                labels=sorted({label_on("linux1804-64-qr"), label_on(OTHER)}),
                first_push_id=_push_id(conn, 12),
                last_push_id=_push_id(conn, 12),
                backfill_report_id=report_id,
                opened_at=START,
                updated_at=START,
            )
            .returning(regression.c.id)
        ).scalar_one()
        conn.execute(
            sa.insert(regression_case),
            [{"case_id": c, "regression_id": record} for c in (first, second)],
        )
    return report_id, first, second


def _culprits_named(ci: FakeCI, report_id: int, indexes: range) -> None:
    """Earlier searches (copies of the report) that named pushes `indexes`."""
    with ci.engine.begin() as conn:
        row = conn.execute(sa.select(backfill_report).where(backfill_report.c.id == report_id))
        values = {k: v for k, v in row.one()._mapping.items() if k not in ("id", "case_id")}
        for index in indexes:
            conn.execute(
                sa.insert(backfill_report).values(
                    {**values, "status": "culprit", "culprit_push_id": _push_id(conn, index)}
                )
            )


def _check(ci: FakeCI, report_id: int) -> list[int]:
    """The search of `report_id` names push 11 in a window of pushes 0..12."""
    with ci.engine.begin() as conn:
        window = list(reversed(recent_push_ids(conn, _push_id(conn, 12), 13)))
        return check_unsearched(
            conn, report_id, [LINE], window, 11, START, BackfillSettings(strategy="flake-aware")
        )


def test_a_test_whose_chunk_did_not_run_before_the_culprit_gets_a_search_of_its_own(
    ci: FakeCI,
) -> None:
    report_id, first, second = _landed_together(ci)
    opened = _check(ci, report_id)
    with ci.engine.connect() as conn:
        reports = {r.id: r for r in conn.execute(sa.select(backfill_report))}
        assert opened and len(opened) == 1
        old, new = reports[report_id], reports[opened[0]]
        # The culprit is claimed for what the search looked for, and for that alone.
        assert old.tests == [TEST] and old.case_ids == [first]
        assert new.tests == [TEST2] and new.failure_lines == [LINE2]
        assert new.case_ids == [second] and new.status == "open"
        # It looks from two pushes before the culprit (9) to its own push (12): push 10
        # may be its culprit.
        context = conn.execute(
            sa.select(backfill_record.c.context).where(backfill_record.c.report_id == new.id)
        ).scalar_one()
        assert context["window"] == [_push_id(conn, i) for i in (9, 10, 11, 12)]
        # The second case has a regression record of its own, served by the new search;
        # the old record no longer claims its test.
        records = {r.backfill_report_id: r for r in conn.execute(sa.select(regression))}
        assert records[report_id].tests == [TEST]
        assert records[report_id].failure_lines == [LINE]
        assert records[new.id].tests == [TEST2]
        assert records[new.id].configurations == [f"{OTHER}/opt"]
        moved = {
            r.case_id: r.regression_id
            for r in conn.execute(
                sa.select(regression_case.c.case_id, regression_case.c.regression_id)
            )
        }
        assert moved[second] == records[new.id].id and moved[first] == records[report_id].id


@pytest.mark.parametrize(
    "clean_before, on_culprit, named_before, claimed",
    [
        (1, "F", 0, True),
        (1, "", 0, False),
        (1, "F", 3, False),
        (2, "F", 3, True),
        (3, "sss", 0, False),
    ],
)
def test_a_test_whose_own_runs_show_it_began_on_the_culprit_stays_claimed(
    ci: FakeCI, clean_before: int, on_culprit: str, named_before: int, claimed: bool
) -> None:
    """TEST2 fails at about 5 in 6, and its chunk ran clean once on each push before push
    10. Among the 12 pushes up to push 11, push 11 alone broke tests as far as searches
    named: any other push breaking TEST2 is 1 in 7 likely a priori. One clean run on push
    10 missing it (1 in 6; pushes before, 1 in 36 and less) puts the odds of an earlier
    push at 1 in 35 (below 5 %): with a failing run on push 11 it began there, and the
    claim holds. Without a run on push 11, push 12 (where it first failed) is as likely
    as push 11 but for its prior. With three other culprits named before, one clean run
    on push 10 is not enough, two are. Three clean runs on push 11 say it began later."""
    report_id, _, _ = _landed_together(ci)
    _culprits_named(ci, report_id, range(2, 2 + named_before))
    for _ in range(clean_before):
        ci.add_run(10, [A, B], failed=False, platform=OTHER)
    for run in on_culprit:
        failed = run == "F"
        ci.add_run(11, [A, B], failed=failed, lines=[LINE2] if failed else None, platform=OTHER)
    opened = _check(ci, report_id)
    assert (not opened) is claimed
    with ci.engine.connect() as conn:
        tests = conn.execute(
            sa.select(backfill_report.c.tests).where(backfill_report.c.id == report_id)
        ).scalar_one()
    assert (TEST2 in tests) is claimed


def test_a_test_failing_before_the_culprit_is_never_its(ci: FakeCI) -> None:
    """TEST2's chunk failed it on push 9: however many clean runs on push 10, push 11 did
    not break it."""
    report_id, _, _ = _landed_together(ci)
    ci.add_run(9, [A, B], failed=True, lines=[LINE2], platform=OTHER)
    for _ in range(5):
        ci.add_run(10, [A, B], failed=False, platform=OTHER)
    assert len(_check(ci, report_id)) == 1


def test_a_report_whose_tests_were_all_searched_is_left_alone(ci: FakeCI) -> None:
    ci.history()
    case = ci.regression_case(12)
    with ci.engine.begin() as conn:
        report_id = open_report_for_case(conn, case, START, BackfillSettings())
    assert report_id is not None
    assert _check(ci, report_id) == []


def test_the_search_names_each_regression_its_own_push(engine: sa.Engine) -> None:
    """End to end: push 11 broke TEST and push 10 broke TEST2 on the other platform, whose
    chunk ran on neither. Both first failed on push 12, so one search served both and
    looked for TEST alone; it names push 11 for TEST only, and TEST2's own search, from
    push 9, names push 10."""
    ci = FakeCI(engine, elsewhere={OTHER: (10, LINE2)})
    report_id, _, _ = _landed_together(ci)
    found = {tuple(r["tests"]): r for r in _play(ci, BackfillSettings(strategy="flake-aware"))}
    assert set(found) == {(TEST,), (TEST2,)}
    assert found[TEST,]["id"] == report_id
    assert found[TEST,]["culprit_revision"] == revision(11)
    assert found[TEST2,]["culprit_revision"] == revision(10)
