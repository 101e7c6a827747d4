"""A report's whole life: opened → matured → backfilled → culprit named, or failed."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from sheriff.backfill import (
    BackfillSettings,
    advance_backfills,
    open_report_for_case,
    pushes_to_watch,
    reports,
)
from sheriff.backfill.evidence import configurations_showing
from sheriff.backfill.reports import regression_of
from sheriff.backfill.strategies import FlakeAware
from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    job,
    job_type,
    push,
    run_observation,
    triage_case,
)
from tests.backfill.conftest import (
    CRASH,
    LINE,
    NOISE,
    START,
    SUITE,
    TEST,
    A,
    B,
    FakeCI,
    revision,
)

HOUR = timedelta(hours=1)


def _open(ci: FakeCI, index: int = 20, platform: str | None = None, **settings) -> int:
    case = ci.regression_case(index, **({"platform": platform} if platform else {}))
    with ci.engine.begin() as conn:
        report_id = open_report_for_case(conn, case, START, BackfillSettings(**settings))
    assert report_id is not None
    return report_id


def _play(ci: FakeCI, settings: BackfillSettings, *, passes: int = 12) -> list[dict]:
    now = START + HOUR
    for _ in range(passes):
        advance_backfills(
            ci.engine,
            now=now,
            actions=ci.enqueue,
            settings=settings,
            task_definition=ci.definition,
        )
        ci.run_requests()
        now += HOUR / 2
    with ci.engine.connect() as conn:
        return reports(conn)


def test_a_regression_opens_one_report_with_the_regressed_lines(ci: FakeCI) -> None:
    ci.history()
    report_id = _open(ci)
    with ci.engine.connect() as conn:
        report = conn.execute(sa.select(backfill_report)).one()
        record = conn.execute(sa.select(backfill_record)).one()
    assert report.id == report_id
    # The noise line no retrigger showed is the run's own intermittent: left out.
    assert report.failure_lines == [LINE]
    assert report.tests == [TEST]
    # Every other run of the label on the push reproduced, yet the rate is not taken as 1.
    assert 0.8 < report.fail_rate < 1.0
    assert record.status == "preliminary"
    assert record.context["manifests"] == ["a/browser.toml", "b/browser.toml"]
    assert record.context["test_manifests"] == ["a/browser.toml", "b/browser.toml"]


def test_opening_twice_or_for_the_same_tests_joins_the_report(ci: FakeCI) -> None:
    ci.history()
    first = _open(ci, 20)
    case = ci.regression_case(16)  # the same regression, seen on an older push
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START) == first
        assert open_report_for_case(conn, case, START) == first
    with ci.engine.connect() as conn:
        report = conn.execute(sa.select(backfill_report)).one()
        record = conn.execute(sa.select(backfill_record)).one()
    assert len(report.case_ids) == 2
    assert report.push_id == record.context["push_id"]  # moved to the older push
    assert record.context["push_id"] != first


def test_a_setting_turns_reports_off(ci: FakeCI) -> None:
    ci.history()
    case = ci.regression_case(20)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START, BackfillSettings(enabled=False)) is None


def test_nothing_happens_before_the_report_matures(ci: FakeCI) -> None:
    ci.history()
    _open(ci)
    summary = advance_backfills(ci.engine, now=START + timedelta(minutes=5), actions=ci.enqueue)
    assert summary.requests == 0 and not ci.sent
    with ci.engine.connect() as conn:
        assert conn.execute(sa.select(backfill_record.c.status)).scalar() == "preliminary"


def test_linear_backfill_names_the_culprit(ci: FakeCI) -> None:
    ci.history()
    _open(ci, strategy="linear")
    settings = BackfillSettings(strategy="linear")
    [report] = _play(ci, settings)
    assert [s["strategy"] for s in ci.sent] == ["backfill"]
    assert ci.sent[0]["input"] == {"depth": 19, "times": 1}
    assert report["status"] == "culprit"
    assert report["culprit_revision"] == revision(11)
    [record] = report["records"]
    assert record["status"] == "successful"
    assert record["actions_triggered"] == 1
    assert record["runs_failed"] + record["runs_successful"] == 19


def test_bisect_finds_an_intermittent_culprit_with_fewer_runs(engine) -> None:
    ci = FakeCI(engine, rate=0.5, seed=3)
    ci.history()
    _open(ci, strategy="bisect")
    [report] = _play(ci, BackfillSettings(strategy="bisect"))
    assert report["status"] == "culprit"
    assert report["culprit_revision"] == revision(11)
    assert {s["strategy"] for s in ci.sent} == {"backfill-task"}
    # The original's MOZHARNESS_TEST_PATHS, as Gecko's own backfill passes it on.
    assert all(s["input"]["test_manifests"] == {SUITE: [A, B]} for s in ci.sent)
    assert report["records"][0]["iterations"] >= 3


def test_label_based_backfill_is_fooled_by_dynamic_chunking(engine) -> None:
    ci = FakeCI(engine)
    ci.history()
    _open(ci, strategy="linear", same_manifests=False)
    [report] = _play(ci, BackfillSettings(strategy="linear", same_manifests=False))
    assert all("test_manifests" not in s["input"] for s in ci.sent)
    # On odd pushes the label ran other manifests: they look clean after the culprit.
    assert report["culprit_revision"] != revision(11)


def test_a_record_that_never_gets_its_runs_fails_on_timeout(ci: FakeCI) -> None:
    ci.history()
    _open(ci)
    settings = BackfillSettings(timeout_hours=4)
    advance_backfills(ci.engine, now=START + HOUR, actions=ci.enqueue, settings=settings)
    advance_backfills(ci.engine, now=START + 2 * HOUR, actions=ci.enqueue, settings=settings)
    summary = advance_backfills(
        ci.engine, now=START + 5 * HOUR, actions=ci.enqueue, settings=settings
    )
    assert summary.statuses == {"failed": 1}
    with ci.engine.connect() as conn:
        [report] = reports(conn)
    assert report["status"] == "failed"
    assert report["reason"].startswith("timed out")


def test_daily_limit_per_platform_holds_records_back(ci: FakeCI) -> None:
    ci.history()
    _open(ci, 20)
    settings = BackfillSettings(max_per_platform_per_day=0)
    advance_backfills(ci.engine, now=START + HOUR, actions=ci.enqueue, settings=settings)
    assert not ci.sent
    with ci.engine.connect() as conn:
        record = conn.execute(sa.select(backfill_record)).one()
    assert record.status == "ready"
    assert "a day" in record.reason


def test_repeated_passes_ask_once(ci: FakeCI) -> None:
    ci.history()
    _open(ci)
    settings = BackfillSettings(strategy="bisect")
    advance_backfills(ci.engine, now=START + HOUR, actions=ci.enqueue, settings=settings)
    first = [s["key"] for s in ci.sent]
    for _ in range(2):
        advance_backfills(ci.engine, now=START + HOUR, actions=ci.enqueue, settings=settings)
    assert first and [s["key"] for s in ci.sent] == first
    with ci.engine.connect() as conn:
        watched = pushes_to_watch(conn)
    assert {w["revision"] for w in watched} == {s["revision"] for s in ci.sent}
    with ci.engine.connect() as conn:
        assert conn.execute(sa.select(backfill_record.c.iterations)).scalar() == 1


def test_waits_for_runs_that_are_still_running(ci: FakeCI) -> None:
    ci.history()
    _open(ci)
    settings = BackfillSettings(strategy="bisect")
    advance_backfills(ci.engine, now=START + HOUR, actions=ci.enqueue, settings=settings)
    for request in ci.sent:
        request["played"] = True
        ci.add_run(
            int(request["revision"], 16),
            [A, B],
            action="backfill-task",
            state="running",
        )
    summary = advance_backfills(
        ci.engine, now=START + 2 * HOUR, actions=ci.enqueue, settings=settings
    )
    assert summary.requests == 0
    with ci.engine.connect() as conn:
        assert conn.execute(sa.select(backfill_record.c.runs_in_progress)).scalar() == len(ci.sent)


def test_flake_aware_counts_the_runs_it_spent_before_its_budget_ends_it(engine) -> None:
    # From the culprit on, the first run of each round shows the regression and the others
    # never finish. The search spends its 24 runs, then waits for those still out rather
    # than say "no culprit found" without them, here until its timeout (world 20261234-3:
    # P 0.876 when it gave up, 0.985 once the runs it had paid for were in).
    ci = FakeCI(engine, rate=0.4, seed=5)
    ci.history()
    _open(ci, strategy="flake-aware")
    settings = BackfillSettings(strategy="flake-aware")
    now = START + HOUR
    for _ in range(40):
        advance_backfills(ci.engine, now=now, actions=ci.enqueue, settings=settings)
        for request in ci.sent:
            if not request.get("played"):
                request["played"] = True
                index = int(request["revision"], 16)
                broken = index >= ci.culprit
                ci.add_run(index, [A, B], action="backfill-task", failed=broken)
                for _ in range(request["input"]["times"] - 1):
                    state = "running" if broken else "completed"
                    ci.add_run(index, [A, B], action="backfill-task", state=state)
        now += HOUR / 4
    assert sum(s["input"]["times"] for s in ci.sent) >= 24
    with ci.engine.connect() as conn:
        [report] = reports(conn)
    assert report["reason"] == f"timed out after {settings.timeout_hours:g} h"


def test_a_case_without_failure_lines_opens_no_report(ci: FakeCI) -> None:
    ci.history()
    case = ci.regression_case(20)
    with ci.engine.begin() as conn:
        conn.execute(sa.update(run_observation).values(failure_lines=[]))
        assert open_report_for_case(conn, case, START) is None


def test_an_outage_holds_one_record_back_and_the_next_pass_goes_on(ci: FakeCI) -> None:
    from sheriff.errors import ServiceError

    ci.history()
    _open(ci)
    settings = BackfillSettings(strategy="bisect")
    advance_backfills(ci.engine, now=START + HOUR, actions=ci.enqueue, settings=settings)
    ci.run_requests()

    def outage(job_ids) -> None:
        raise ServiceError("treeherder unreachable")

    # A failed backfilled run whose log Treeherder has not parsed for us yet.
    ci.add_run(11, [A, B], action="backfill-task", failed=True, observed=False)
    summary = advance_backfills(
        ci.engine, now=START + 2 * HOUR, actions=ci.enqueue, observe=outage, settings=settings
    )
    assert summary.errors and "treeherder unreachable" in summary.errors[0]
    seen: list[int] = []
    advance_backfills(
        ci.engine, now=START + 2 * HOUR, actions=ci.enqueue, observe=seen.extend, settings=settings
    )
    assert seen  # the next pass asked for the observation again


@pytest.mark.parametrize(("rate", "seed"), [(1.0, 1), (0.5, 3), (0.5, 4), (0.4, 5)])
def test_flake_aware_names_an_intermittent_culprit_within_its_budget(
    engine, rate: float, seed: int
) -> None:
    ci = FakeCI(engine, rate=rate, seed=seed)
    ci.history()
    _open(ci, strategy="flake-aware")
    [report] = _play(ci, BackfillSettings(strategy="flake-aware"), passes=30)
    assert {s["strategy"] for s in ci.sent} == {"backfill-task"}
    assert all(s["input"]["test_manifests"] == {SUITE: [A, B]} for s in ci.sent)
    asked = sum(s["input"]["times"] for s in ci.sent)
    assert asked <= 24 + 1  # the budget, and one run to confirm the named push
    # Right or no culprit at all, never a wrong push.
    assert report["culprit_revision"] in (revision(11), None)
    if rate == 1.0:
        assert report["status"] == "culprit" and asked <= 8


def test_flake_aware_finds_no_culprit_when_nothing_regressed(engine) -> None:
    # The "regression" is a flake of the test: it fails a fifth of its runs on every push.
    ci = FakeCI(engine, rate=0.2, seed=7, culprit=0)
    ci.history()
    _open(ci, strategy="flake-aware")
    [report] = _play(ci, BackfillSettings(strategy="flake-aware"), passes=30)
    assert report["culprit_revision"] is None
    assert report["status"] == "failed" and "culprit" in (report["reason"] or "")


@pytest.mark.parametrize("strategy", ["linear", "flake-aware"])
def test_a_crash_between_tests_is_searched_by_its_crash_line(engine, strategy: str) -> None:
    """A regression whose only line is `PROCESS-CRASH | signature | pid: N` (no test named):
    the report looks for the normalised crash line and the search names its culprit."""
    ci = FakeCI(engine, crash=True)
    ci.history()
    _open(ci, strategy=strategy)
    [report] = _play(ci, BackfillSettings(strategy=strategy), passes=20)
    with engine.connect() as conn:
        looked_for = conn.execute(sa.select(backfill_report.c.failure_lines)).scalar_one()
    assert looked_for == [CRASH] and report["tests"] == []
    assert report["status"] == "culprit" and report["culprit_revision"] == revision(11)


def _asked(ci: FakeCI) -> int:
    return sum(s["input"]["times"] for s in ci.sent)


@pytest.mark.parametrize("crash", [False, True])
@pytest.mark.parametrize("known_by", ["case", "runs", "nothing"])
def test_flake_aware_reads_the_runs_of_the_regressions_other_configurations(
    engine, known_by: str, crash: bool
) -> None:
    """The regression also fails on a second platform, whose scheduled runs ran the failing
    manifest on every push (the first one's chunk holds it on even pushes only). Once a
    case there joins the report, or its runs in the window showed the searched line
    without one (a case called intermittent there is still a failure of the regression),
    those runs place the culprit without backfilling it. A platform whose runs never
    showed the line (it failed, but another test) is not read: its runs say nothing of
    where the regression is.
    The same when the regression crashes between tests (its line in the raw lines only)."""
    other = "linux2404-64"
    ci = FakeCI(engine, crash=crash)
    ci.history()
    for index in range(ci.pushes):
        if known_by == "nothing":
            # It fails on every push, but another test's line: not the searched failure.
            ci.add_run(index, [A, B], platform=other, failed=True, lines=[NOISE])
        else:
            ci.add_run(index, [A, B], platform=other)
    _open(ci, strategy="flake-aware")
    if known_by == "case":
        _open(ci, strategy="flake-aware", platform=other)
    [report] = _play(ci, BackfillSettings(strategy="flake-aware"), passes=20)
    assert report["status"] == "culprit" and report["culprit_revision"] == revision(11)
    with engine.connect() as conn:
        record = conn.execute(sa.select(backfill_record)).one()
    # The record counts its own backfilled runs only, never the other platform's runs.
    assert record.runs_successful + record.runs_failed == _asked(ci)
    context = record.context
    with engine.connect() as conn:
        showing = configurations_showing(
            conn, context["window"], context["lines"], context["tests"]
        )
    # The record's own platform, and the other one only where its runs showed the line.
    assert len(showing) == (1 if known_by == "nothing" else 2)
    if known_by == "nothing":
        assert _asked(ci) >= 2
    else:
        # Push 11 failed on the other platform, 10 was clean on both: one run confirms it.
        assert _asked(ci) <= 1


def test_a_flaky_line_the_policy_judged_apart_is_not_searched_for(ci: FakeCI) -> None:
    """A flaky test failed beside the regressed one in the original and in retriggers too:
    the history policy judged each line on its own, and the search looks for the regressed
    line only (the flaky one would make pushes before the culprit look broken)."""
    from tests.backfill.conftest import NOISE

    ci.history()
    case = ci.regression_case(20, retriggers=0)
    for _ in range(4):
        ci.add_run(20, [A, B], action="retrigger", failed=True, lines=[LINE, NOISE])
    line_p = {LINE: 0.99, NOISE: 0.12}
    with ci.engine.begin() as conn:
        conn.execute(
            sa.update(triage_case)
            .where(triage_case.c.id == case)
            .values(evidence={"history": {"facts": {"line_p": line_p}}})
        )
        open_report_for_case(conn, case, START, BackfillSettings())
        report = conn.execute(sa.select(backfill_report)).one()
    assert report.failure_lines == [LINE] and report.tests == [TEST]


TEST2 = "a/browser_broken_later.js"
LINE2 = f"TEST-UNEXPECTED-FAIL | {TEST2} | expected 1, got 2"


def _case_failing_both(ci: FakeCI, index: int, second: str = LINE2) -> int:
    """A regression case on push `index` whose original and four retriggers failed LINE
    (the earlier regression, still failing) and `second` (LINE2, judged a regression's
    line on its own like LINE; or a crash between tests, in the raw lines only)."""
    crash = second.startswith("PROCESS-CRASH")
    lines = [LINE] if crash else [LINE, second]
    seen = {"failure_lines": lines, "raw_failure_lines": [LINE, second]}
    line_p = {LINE: 0.99} if crash else {LINE: 0.99, second: 0.98}
    case = ci.regression_case(index, retriggers=0)
    runs = [ci.add_run(index, [A, B], action="retrigger", failed=True) for _ in range(4)]
    with ci.engine.begin() as conn:
        original = conn.execute(sa.select(triage_case.c.job_id).where(triage_case.c.id == case))
        conn.execute(
            sa.update(run_observation)
            .where(run_observation.c.job_id.in_([original.scalar_one(), *runs]))
            .values(**seen)
        )
        conn.execute(
            sa.update(triage_case)
            .where(triage_case.c.id == case)
            .values(evidence={"history": {"facts": {"line_p": line_p}}})
        )
    return case


def test_a_test_broken_beside_an_earlier_regression_gets_its_own_search(ci: FakeCI) -> None:
    """The regression of push 11 is never backed out; push 20 breaks another test of the
    same chunk. Its cases share the old regression's test and join that search, but its
    own line, never seen in the runs that failed the old one since, gets a search too."""
    ci.history()
    first = _open(ci, 12)
    case = _case_failing_both(ci, 20)
    later = _case_failing_both(ci, 22)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START) == first
        assert open_report_for_case(conn, later, START) == first
        found = conn.execute(sa.select(backfill_report).order_by(backfill_report.c.id)).all()
    assert len(found) == 2 and found[0].id == first
    old, new = found
    assert case in old.case_ids and later in old.case_ids
    # One search for the new line, served from the first case's run; the later case joins.
    assert new.failure_lines == [LINE2] and new.tests == [TEST2]
    assert new.case_ids == [case, later] and new.source == "regression"
    assert new.fail_rate > 0.5  # 4 of the push's 5 other runs showed it


def test_lines_that_failed_together_since_the_search_began_stay_one_search(
    ci: FakeCI,
) -> None:
    """The same two lines already failed together on push 14: one regression of two tests,
    the second one seen late by chance; no second search."""
    ci.history()
    first = _open(ci, 12)
    ci.add_run(14, [A, B], failed=True, lines=[LINE, LINE2])
    case = _case_failing_both(ci, 20)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START) == first
        assert conn.execute(sa.select(sa.func.count()).select_from(backfill_report)).scalar() == 1


def test_a_crash_between_tests_beside_an_earlier_regression_gets_its_own_search(
    ci: FakeCI,
) -> None:
    """The later regression crashes between tests: no line the policy judges, only the
    raw PROCESS-CRASH line, which none of the earlier failing runs showed."""
    ci.history()
    first = _open(ci, 12)
    crash = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + 0x1f2] | pid: 4242"
    case = _case_failing_both(ci, 20, second=crash)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START) == first
        found = conn.execute(sa.select(backfill_report).order_by(backfill_report.c.id)).all()
    assert len(found) == 2 and found[1].tests == []
    assert found[1].failure_lines == [
        "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + <ptr>] | pid: <pid>"
    ]


TIMEOUT = (
    "TEST-UNEXPECTED-TIMEOUT | Last test finished | application timed out after <duration> "
    "with no output"
)


def test_a_timeout_beside_an_earlier_regression_gets_its_own_search(ci: FakeCI) -> None:
    """Push 20 makes the chunk time out beside the regression of push 11, which is never
    backed out: the timeout line names no test, but the policy judged it a regression's
    on its own and no run since push 12 showed it, so it gets a search too; a later case
    of both joins both."""
    ci.history()
    first = _open(ci, 12)
    case = _case_failing_both(ci, 20, second=TIMEOUT)
    later = _case_failing_both(ci, 22, second=TIMEOUT)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START) == first
        assert open_report_for_case(conn, later, START) == first
        found = conn.execute(sa.select(backfill_report).order_by(backfill_report.c.id)).all()
    assert len(found) == 2
    assert found[1].failure_lines == [TIMEOUT] and found[1].tests == ["Last test finished"]
    assert found[1].case_ids == [case, later]


def test_a_timeout_of_another_chunk_is_not_this_chunks(ci: FakeCI) -> None:
    """An open search for a timeout of another suite chunk does not take this chunk's
    timeout in: every hang of every test shows the same line."""
    ci.history()
    first = _open(ci, 12)
    other = _crash_case_in_chunk(ci, 14, 7, "dom/other/browser.toml")
    _original_lines(ci, other, [TIMEOUT], [TIMEOUT])
    with ci.engine.begin() as conn:
        elsewhere = open_report_for_case(conn, other, START)
    case = _case_failing_both(ci, 20, second=TIMEOUT)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START) == first
        found = conn.execute(sa.select(backfill_report).order_by(backfill_report.c.id)).all()
    assert elsewhere not in (None, first)
    assert case not in next(r for r in found if r.id == elsewhere).case_ids
    assert [r.failure_lines for r in found if r.id not in (first, elsewhere)] == [[TIMEOUT]]


def _original_lines(ci: FakeCI, case: int, lines: list[str], raw: list[str]) -> int:
    """Set the failure lines (normalised and raw) of the original run of `case`; its job."""
    with ci.engine.begin() as conn:
        job_id = conn.execute(
            sa.select(triage_case.c.job_id).where(triage_case.c.id == case)
        ).scalar_one()
        conn.execute(
            sa.update(run_observation)
            .where(run_observation.c.job_id == job_id)
            .values(failure_lines=lines, raw_failure_lines=raw)
        )
    return job_id


def _crash_case_in_chunk(ci: FakeCI, index: int, chunk: int, failed_group: str) -> int:
    """A crash case on push `index` whose run is relabelled to chunk `chunk` of the suite,
    its errorsummary's failing group `failed_group` (the crash named no test)."""
    case = ci.regression_case(index)
    label = f"test-linux1804-64-qr/opt-mochitest-browser-chrome-{chunk}"
    with ci.engine.begin() as conn:
        job_id = conn.execute(
            sa.select(triage_case.c.job_id).where(triage_case.c.id == case)
        ).scalar_one()
        type_id = (
            conn.execute(sa.select(job_type.c.id).where(job_type.c.name == label)).scalar()
            or conn.execute(
                sa.insert(job_type).values(name=label, symbol=f"bc{chunk}").returning(job_type.c.id)
            ).scalar_one()
        )
        conn.execute(sa.update(job).where(job.c.id == job_id).values(job_type_id=type_id))
        conn.execute(sa.update(triage_case).where(triage_case.c.id == case).values(label=label))
        conn.execute(
            sa.update(run_observation)
            .where(run_observation.c.job_id == job_id)
            .values(
                structured_failures=[
                    ["", "mozilla::dom::Foo::Bar", "CRASH"],
                    [failed_group, None, "ERROR"],
                ]
            )
        )
    return case


@pytest.mark.parametrize(("group", "joins"), [(A, True), (B, False)])
def test_a_crash_in_another_chunk_joins_the_search_of_the_manifest_it_failed_in(
    engine, group: str, joins: bool
) -> None:
    """Chunks deal manifests differently per platform and build type: the same crash
    between tests shows in another chunk number. Its line names no test; the manifest whose
    group failed with no named test is what ties the two cases (another manifest: another
    failure that happens to crash the same way, searched apart)."""
    ci = FakeCI(engine, crash=True)
    ci.history()
    first_case = _crash_case_in_chunk(ci, 20, chunk=1, failed_group=A)
    later = _crash_case_in_chunk(ci, 22, chunk=3, failed_group=group)
    with ci.engine.begin() as conn:
        first = open_report_for_case(conn, first_case, START)
        assert (open_report_for_case(conn, later, START) == first) is joins
        count = conn.execute(sa.select(sa.func.count()).select_from(backfill_report)).scalar()
    assert count == (1 if joins else 2)


def test_a_crash_between_tests_is_looked_for_in_the_manifest_it_failed_in(engine) -> None:
    """The backfill counts the runs of the manifest whose group failed with no named test
    (any chunk that ran it), not only runs of every manifest of the crashed chunk."""
    ci = FakeCI(engine, crash=True)
    ci.history()
    case = _crash_case_in_chunk(ci, 20, chunk=1, failed_group=A)
    with ci.engine.begin() as conn:
        open_report_for_case(conn, case, START)
        context = conn.execute(sa.select(backfill_record.c.context)).scalar_one()
    assert context["manifests"] == [A]
    assert context["test_manifests"] == [A, B]  # what the chunk ran, for the record


def test_a_crash_judged_beside_a_flaky_tests_line_is_what_the_search_looks_for(
    ci: FakeCI,
) -> None:
    """The policy judged the case on its crash between tests (`history.crash_lines`), not
    on the flaky test's TEST-UNEXPECTED line beside it: the crash line is the regression's,
    the line of the test that failed beside it is not."""
    ci.history()
    case = ci.regression_case(20, retriggers=0)
    raw = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + 0x1f2] | pid: 4242"
    runs = [ci.add_run(20, [A, B], action="retrigger", failed=True) for _ in range(4)]
    original = _original_lines(ci, case, [NOISE], [NOISE, raw])
    with ci.engine.begin() as conn:
        conn.execute(
            sa.update(run_observation)
            .where(run_observation.c.job_id.in_(runs))
            .values(failure_lines=[], raw_failure_lines=[raw])
        )
        conn.execute(
            sa.update(triage_case)
            .where(triage_case.c.id == case)
            .values(evidence={"history": {"crash_lines": [CRASH], "facts": {"line_p": {}}}})
        )
        found = regression_of(conn, original)
    assert found.lines == [CRASH] and found.tests == []
    assert found.fail_rate > 0.5  # all four retriggers crashed


@pytest.mark.parametrize("second_from", [13, 11])
def test_a_line_that_began_after_the_named_culprit_gets_a_search_of_its_own(
    engine, second_from: int
) -> None:
    """Push 11 broke LINE's test and push 13 LINE2's, in the same manifest: the case on
    push 20 failed both, and its search names push 11, where LINE reproduced. LINE2 never
    showed on pushes 11 and 12 although every run there ran its test: it is not push 11's,
    and a search of its own names push 13. When LINE2 began on push 11 too, one search
    names push 11 for both."""
    ci = FakeCI(engine, second=(second_from, LINE2))
    ci.history()
    case = _case_failing_both(ci, 20)
    with ci.engine.begin() as conn:
        assert open_report_for_case(conn, case, START, BackfillSettings()) is not None
    found = _play(ci, BackfillSettings(strategy="flake-aware"), passes=40)
    by_tests = {tuple(r["tests"]): r for r in found}
    if second_from == 11:
        assert list(by_tests) == [(TEST2, TEST)]
        assert by_tests[TEST2, TEST]["culprit_revision"] == revision(11)
        return
    assert set(by_tests) == {(TEST,), (TEST2,)}
    first, split = by_tests[TEST,], by_tests[TEST2,]
    assert first["culprit_revision"] == revision(11)
    assert split["culprit_revision"] == revision(13)
    assert split["cases"] == 1 and split["source"] == "regression"


def test_a_culprit_another_search_named_weighs_in_the_next_search(
    ci: FakeCI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push that broke one test often broke others, each searched apart (one search per
    task): a push another report named stands out in the prior of the next search."""
    ci.history()
    report_id = _open(ci, strategy="flake-aware")
    other_case = ci.regression_case(19)
    with ci.engine.begin() as conn:
        row = conn.execute(sa.select(backfill_report).where(backfill_report.c.id == report_id))
        values = {k: v for k, v in row.one()._mapping.items() if k != "id"}
        culprit_push = conn.execute(
            sa.select(push.c.id).where(push.c.revision == revision(11))
        ).scalar_one()
        conn.execute(
            sa.insert(backfill_report).values(
                {
                    **values,
                    "case_id": other_case,
                    "case_ids": [other_case],
                    "label": "test-linux1804-64-qr/opt-mochitest-plain-1",
                    "status": "culprit",
                    "culprit_push_id": culprit_push,
                }
            )
        )
    seen: list[frozenset[int]] = []
    decide = FlakeAware.decide
    monkeypatch.setattr(
        FlakeAware,
        "decide",
        lambda self, search: seen.append(search.likely) or decide(self, search),
    )
    found = _play(ci, BackfillSettings(strategy="flake-aware"), passes=30)
    report = next(r for r in found if r["id"] == report_id)
    assert report["culprit_revision"] == revision(11)
    with ci.engine.connect() as conn:
        context = conn.execute(
            sa.select(backfill_record.c.context).where(backfill_record.c.report_id == report_id)
        ).scalar_one()
    assert seen and set(seen) == {frozenset({context["window"].index(culprit_push)})}
