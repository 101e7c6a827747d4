"""The history facts of a case and the fleet's priors, read from the store on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from sheriff.model.failure_lines import failing_test
from sheriff.model.history import EarlierRuns, PastCase, fit_priors
from sheriff.model.job import job_from_task
from sheriff.store.history import (
    LOOKBACK_PUSHES,
    PassCache,
    PushHistory,
    fleet_priors,
    past_cases,
)
from sheriff.store.loader import load_jobs, load_push_manifests
from sheriff.store.schema import (
    backfill_report,
    job,
    push,
    regression,
    repository,
    run_observation,
    triage_case,
)
from tests.factories import new_task_id, report_row, task_on_push

LINUX, WIN = "linux1804-64-qr", "windows11-64-24h2"
A, OTHER = "dom/a/browser.toml", "dom/z/browser.toml"
LINE = "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got <n>"
RAW = "TEST-UNEXPECTED-FAIL | dom/a/test_a.html | got 3"
NOW = datetime(2026, 11, 2, 20, tzinfo=UTC)


def load(engine, specs):
    """specs: (push, label, platform, manifests, failure lines or None for a pass) → job ids."""
    jobs, lines = [], []
    for push_index, label, plat, manifests, failed in specs:
        task = task_on_push(push_index, label, plat, manifests)
        run = {"state": "failed" if failed is not None else "completed"}
        jobs.append(job_from_task(new_task_id(), task, 0, run))
        lines.append(failed)
    with engine.begin() as conn:
        load_jobs(conn, jobs)
        ids = dict(conn.execute(sa.select(job.c.task_id, job.c.id)).all())
        for j, failed in zip(jobs, lines, strict=True):
            if failed is not None:
                conn.execute(
                    run_observation.insert().values(
                        job_id=ids[j.task_id],
                        parse_status="parsed",
                        failure_lines=list(failed),
                        bug_suggestions=[{"search": RAW, "open_bugs": [1234]}],
                        updated_at=NOW,
                    )
                )
    return [ids[j.task_id] for j in jobs]


def history_of(engine, job_id, lookback: int = LOOKBACK_PUSHES):
    with engine.connect() as conn:
        original = conn.execute(sa.select(job).where(job.c.id == job_id)).mappings().one()
        obs = conn.execute(
            sa.select(run_observation).where(run_observation.c.job_id == job_id)
        ).mappings()
        return PushHistory(conn, original["push_id"], lookback).case(
            original, next(iter(obs), None)
        )


def shown(history) -> tuple[bool, ...]:
    """The case configuration's earlier runs, oldest first: did each show the line?"""
    return tuple(i < e.shown for e in history.earlier for i in range(e.runs))


def test_the_failing_test_of_a_line() -> None:
    assert failing_test(LINE) == "dom/a/test_a.html"
    assert failing_test("PROCESS-CRASH no pipes") is None


def test_an_earlier_failure_then_a_clean_run_and_another_configuration(engine) -> None:
    ids = load(
        engine,
        [
            (0, "bc1", LINUX, [A], None),
            (1, "bc1", LINUX, [A], [LINE]),  # failed earlier, same configuration
            (1, "bc1", WIN, [A], None),  # clean on another configuration
            (2, "bc2", LINUX, [A], None),  # clean since (another chunk ran the test)
            (2, "bc1", LINUX, [OTHER], None),  # did not run the test: no evidence
            (3, "bc1", WIN, [A], [LINE]),  # another configuration, same push
            (3, "bc1", LINUX, [A], [LINE]),  # the case
        ],
    )
    history = history_of(engine, ids[-1])
    assert history.features == {"open_bug": True}
    # oldest first, one entry per push; push 2's other manifests skipped; the case itself
    # is not an earlier run
    assert history.earlier == (
        EarlierRuns(3, runs=1, shown=0),
        EarlierRuns(2, runs=1, shown=1, other_runs=1, other_shown=0),
        EarlierRuns(1, runs=1, shown=0),
        EarlierRuns(0, other_runs=1, other_shown=1),
    )
    assert history.facts["earlier_pushes_with_line"] == 1
    assert history.facts["other_configs_with_line"] == 1
    assert history.facts["runs"] == [
        {
            "line": LINE,
            "same_config": 3,
            "same_config_showed_line": 1,
            "other_configs": 2,
            "other_configs_showed_line": 1,
            "pushes_of_a_stopped_regression": 0,
            "pushes_before_the_window": 0,
        }
    ]
    assert history.facts["open_bugs"] == [1234]


def test_a_failing_streak_on_the_same_configuration(engine) -> None:
    ids = load(
        engine,
        [
            (0, "bc1", LINUX, [A], None),
            (1, "bc1", LINUX, [A], [LINE]),
            (2, "bc1", LINUX, [OTHER, A], ["TEST-UNEXPECTED-FAIL | dom/z/test_z.html | x"]),
            (3, "bc1", LINUX, [A], [LINE]),
        ],
    )
    # push 2 failed for another test only: it ran ours cleanly
    history = history_of(engine, ids[-1])
    assert shown(history) == (False, True, False)
    scattered = history.priors.posterior({}, k=0, n=0, earlier=history.earlier)
    with engine.begin() as conn:
        conn.execute(
            run_observation.update()
            .where(run_observation.c.job_id == ids[2])
            .values(failure_lines=[LINE])
        )
    history = history_of(engine, ids[-1])
    assert shown(history) == (False, True, True)
    streak = history.priors.posterior({}, k=0, n=0, earlier=history.earlier)
    assert streak > scattered  # failing since a push looks more like a regression


def test_an_earlier_run_that_failed_without_a_failure_line_is_no_run(engine) -> None:
    ids = load(
        engine,
        [
            (0, "bc1", LINUX, [A], []),  # failed without a line (a storm): says nothing
            (1, "bc1", LINUX, [A], None),
            (2, "bc1", WIN, [A], []),
            (3, "bc1", LINUX, [A], [LINE]),
        ],
    )
    assert history_of(engine, ids[-1]).earlier == (EarlierRuns(2, runs=1, shown=0),)


def test_an_earlier_run_that_crashed_between_tests_is_no_run_whatever_it_showed(engine) -> None:
    between = "PROCESS-CRASH | application crashed [@ nsFrame::Notify + 0xc43ad] | pid: 59691"
    own = "PROCESS-CRASH | application crashed [@ nsFrame::Notify + 0x1f] | dom/a/test_a.html"
    ids = load(
        engine,
        [
            (0, "bc1", LINUX, [A], [LINE]),  # crashed between tests, showed the line too
            (0, "bc1", WIN, [A], []),  # crashed between tests only
            (1, "bc1", LINUX, [A], [LINE]),  # the test's own crash: a run of it
            (1, "bc1", WIN, [A], None),
            (2, "bc1", LINUX, [A], [LINE]),
        ],
    )
    with engine.begin() as conn:
        for job_id, raw in ((ids[0], [RAW, between]), (ids[1], [between]), (ids[2], [RAW, own])):
            conn.execute(
                run_observation.update()
                .where(run_observation.c.job_id == job_id)
                .values(raw_failure_lines=raw)
            )
    # Counted only when it showed the line, a flake failing beside a crashing regression
    # would seem to fail every run; neither crashed run counts.
    assert history_of(engine, ids[-1]).earlier == (
        EarlierRuns(1, runs=1, shown=1, other_runs=1, other_shown=0),
    )


def test_a_new_failure_has_no_history(engine) -> None:
    ids = load(engine, [(0, "bc1", LINUX, [A], None), (1, "bc1", LINUX, [A], [LINE])])
    with engine.begin() as conn:
        conn.execute(
            run_observation.update()
            .where(run_observation.c.job_id == ids[1])
            .values(bug_suggestions=[{"search": RAW, "open_bugs": []}])
        )
    history = history_of(engine, ids[1])
    assert history.features == {"open_bug": False}
    assert history.earlier == (EarlierRuns(1, runs=1),)


def test_priors_are_fitted_from_decided_history_cases_only(engine) -> None:
    ids = load(engine, [(0, "bc1", LINUX, [A], [LINE]), (0, "bc2", LINUX, [A], [LINE])])
    with engine.begin() as conn:
        push_id, repository_id = conn.execute(sa.select(push.c.id, push.c.repository_id)).one()
        common = {"push_id": push_id, "state": "decided", "opened_at": NOW, "updated_at": NOW}
        history = {"k": 2, "n": 2, "features": {"streak": True}, "p_retriggers": 0.9}
        conn.execute(
            triage_case.insert(),
            [
                {
                    **common,
                    "job_id": ids[0],
                    "label": "bc1",
                    "policy": "history",
                    "verdict": "regression",
                    "p_regression": 0.99,
                    "decided_at": NOW,
                    "evidence": {"history": history},
                },
                {
                    **common,
                    "job_id": ids[1],
                    "label": "bc2",
                    "policy": "seed",
                    "verdict": "intermittent",
                    "p_regression": None,
                    "decided_at": NOW,
                    "evidence": {},
                },
            ],
        )
    with engine.connect() as conn:
        past = past_cases(conn, repository_id)
        priors = fleet_priors(conn, repository_id)
    assert [(c.p, c.k, c.n, dict(c.features), c.p_retriggers) for c in past] == [
        (0.99, 2, 2, {"streak": True}, 0.9)
    ]
    assert priors.cases == 1 and priors.base_rate > 0.5


def test_only_manifests_that_list_the_test_say_it_ran(engine) -> None:
    # dom/a holds two manifests; the test is in browser.toml only. Without tests-by-manifest
    # both count as having run it; once it is known, the other manifest's runs do not.
    plain = "dom/a/mochitest.toml"
    ids = load(
        engine,
        [
            (0, "bc1", LINUX, [A], None),
            (1, "mochitest-plain-1", LINUX, [plain], None),
            (2, "bc1", LINUX, [A], [LINE]),
        ],
    )
    assert shown(history_of(engine, ids[-1])) == (False, False)
    with engine.begin() as conn:
        push_id = conn.execute(sa.select(job.c.push_id).where(job.c.id == ids[0])).scalar_one()
        load_push_manifests(
            conn, push_id, {}, {A: ["dom/a/test_a.html"], plain: ["dom/a/test_plain.html"]}
        )
    assert shown(history_of(engine, ids[-1])) == (False,)


def test_a_pass_cache_shared_by_pushes_reads_the_same_history(engine) -> None:
    ids = load(
        engine,
        [
            (0, "bc1", LINUX, [A], None),
            (1, "bc1", LINUX, [A], [LINE]),
            (2, "bc1", LINUX, [A], None),
            (3, "bc1", WIN, [A], [LINE]),
            (3, "bc1", LINUX, [A], [LINE]),
            (4, "bc1", LINUX, [A], [LINE]),
        ],
    )
    cache = PassCache()
    with engine.connect() as conn:
        for job_id in (ids[4], ids[5]):  # two pushes of one pass, sharing earlier pushes
            original = conn.execute(sa.select(job).where(job.c.id == job_id)).mappings().one()
            obs = conn.execute(
                sa.select(run_observation).where(run_observation.c.job_id == job_id)
            ).mappings()
            shared = PushHistory(conn, original["push_id"], cache=cache).case(
                original, next(iter(obs), None)
            )
            assert shared == history_of(engine, job_id)
    assert cache.failed and cache.runs and cache.priors


def test_a_line_that_names_no_test_is_looked_for_in_its_suite_chunk(engine) -> None:
    """`Last test finished | application timed out` names no test: the runs of the same
    suite chunk, whatever manifests they ran and on every platform, could have shown it;
    another chunk's runs could not."""
    timeout = (
        "TEST-UNEXPECTED-TIMEOUT | Last test finished | application timed out after "
        "<duration> with no output"
    )

    def label(plat: str, chunk: int) -> str:
        return f"test-{plat}/opt-mochitest-browser-chrome-{chunk}"

    ids = load(
        engine,
        [
            (0, label(LINUX, 1), LINUX, [A], None),
            (0, label(WIN, 1), WIN, [OTHER], None),  # another manifest: still the chunk
            (1, label(LINUX, 1), LINUX, [OTHER], None),
            (1, label(LINUX, 2), LINUX, [A], [timeout]),  # another chunk: no evidence
            (2, label(WIN, 1), WIN, [A], [timeout]),  # this push, another platform
            (2, label(LINUX, 1), LINUX, [A], [timeout]),  # the case
        ],
    )
    history = history_of(engine, ids[-1])
    assert history.earlier == (
        EarlierRuns(2, runs=1, shown=0, other_runs=1, other_shown=0),
        EarlierRuns(1, runs=1, shown=0),
        EarlierRuns(0, other_runs=1, other_shown=1),
    )
    assert history.lines[timeout].earlier == history.earlier


def test_a_crash_between_tests_is_looked_for_by_its_signature_in_its_suite_chunk(engine) -> None:
    """A crash between tests names no test either: its signature is looked for in the
    runs of the original's suite chunk on every platform. A run of the chunk that failed
    otherwise (a test's line, another crash) is a run without it; one whose lines are not
    known yet, or that failed with none (a storm), says nothing; another chunk's crash is
    no evidence."""
    crash = "PROCESS-CRASH | application crashed [@ nsFrame::Notify + <ptr>] | pid: <pid>"
    other = "PROCESS-CRASH | application crashed [@ Other::Thing + <ptr>] | pid: <pid>"

    def label(plat: str, chunk: int) -> str:
        return f"test-{plat}/opt-mochitest-browser-chrome-{chunk}"

    ids = load(
        engine,
        [
            (0, label(LINUX, 1), LINUX, [A], None),
            (0, label(WIN, 1), WIN, [OTHER], []),  # crashed otherwise: a run without it
            (1, label(LINUX, 1), LINUX, [OTHER], [LINE]),  # a test's failure: without it
            (1, label(WIN, 1), WIN, [A], []),  # a storm: nothing
            (1, label(LINUX, 2), LINUX, [A], []),  # the signature, in another chunk
            (2, label(WIN, 1), WIN, [A], []),  # the signature, this push
            (2, label(LINUX, 1), LINUX, [A], []),  # the case
            (3, label(LINUX, 1), LINUX, [A], []),  # a later push: not read
        ],
    )
    raw = {ids[1]: [other], ids[4]: [crash], ids[5]: [crash], ids[6]: [crash], ids[7]: [crash]}
    with engine.begin() as conn:
        for job_id, lines in raw.items():
            conn.execute(
                run_observation.update()
                .where(run_observation.c.job_id == job_id)
                .values(raw_failure_lines=lines)
            )
    history = history_of(engine, ids[6])
    assert history.earlier == ()  # no TEST-UNEXPECTED line
    assert history.crashes == {
        crash: (
            EarlierRuns(2, runs=1, shown=0, other_runs=1, other_shown=0),
            EarlierRuns(1, runs=1, shown=0),
            EarlierRuns(0, other_runs=1, other_shown=1),
        )
    }
    # Beside a test's line, the crash is looked for all the same; the test's own runs
    # leave the crashed runs out, as before.
    with engine.begin() as conn:
        conn.execute(
            run_observation.update()
            .where(run_observation.c.job_id == ids[6])
            .values(failure_lines=[LINE], raw_failure_lines=[RAW, crash])
        )
    history = history_of(engine, ids[6])
    assert set(history.crashes) == {crash} and history.lines[LINE].earlier


def _record_regression(
    engine,
    first: int,
    stopped: int | None,
    merged_into: int | None = None,
    last: int | None = None,
    culprit: int | None = None,
    search: str | None = None,
    line: str = LINE,
) -> int:
    """A regression record of test_a (of `line`'s test) from push `first` (failing up to
    `last`, by default the push before its stop or push 11), stopped at push `stopped`,
    with culprit push `culprit`, its backfill report's status `search` (none without);
    its id."""
    with engine.begin() as conn:
        ids = dict(conn.execute(sa.select(push.c.revision, push.c.id)).all())
        repository_id = conn.execute(sa.select(repository.c.id)).scalar_one()
        report = None
        if search is not None:
            push_id = ids[f"rev{first:02d}"]
            job_id = conn.execute(sa.select(job.c.id).where(job.c.push_id == push_id)).scalar()
            report = conn.execute(
                backfill_report.insert().values(
                    **report_row(
                        push_id,
                        job_id,
                        NOW,
                        repository_id=repository_id,
                        tests=["dom/a/test_a.html"],
                        failure_lines=[LINE],
                        status=search,
                    )
                )
            ).inserted_primary_key[0]
        return conn.execute(
            regression.insert().values(
                repository_id=repository_id,
                backfill_report_id=report,
                status="stopped" if stopped is not None else "culprit",
                tests=[failing_test(line)],
                failure_lines=[line],
                configurations=[f"{LINUX}/opt"],
                labels=["bc1"],
                first_push_id=ids[f"rev{first:02d}"],
                last_push_id=ids[f"rev{last if last is not None else (stopped or 12) - 1:02d}"],
                stopped_push_id=ids[f"rev{stopped:02d}"] if stopped is not None else None,
                culprit_push_id=ids[f"rev{culprit:02d}"] if culprit is not None else None,
                merged_into=merged_into,
                opened_at=NOW,
                updated_at=NOW,
            )
        ).inserted_primary_key[0]


def _clear_records(engine) -> None:
    """Every regression record gone, for a test's next record on the same runs."""
    with engine.begin() as conn:
        conn.execute(sa.delete(regression))


def test_the_runs_of_a_stopped_regression_of_the_test_are_left_out(engine) -> None:
    """test_a failed every run from push 3 until a fix at push 8, flaked once since, and
    fails on push 12: its runs of 3 to 7 were the regression's, not its own, and under R they
    made every later flake look like the test "failing since push 3"."""
    failing = set(range(3, 8)) | {10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    kept = history_of(engine, ids[-1])
    assert len(shown(kept)) == 12
    # Priors of a fleet whose flakes the model has seen (ten intermittent verdicts): with
    # none seen its flake prior is wide enough that either history reads about the same.
    seen = fit_priors([PastCase(p=0.01, k=0, n=2, regression=False)] * 10)
    p_kept = seen.posterior({}, k=1, n=5, earlier=kept.earlier)

    _record_regression(engine, first=3, stopped=8)
    history = history_of(engine, ids[-1])
    assert shown(history) == (False,) * 3 + (False, False, True, False)  # pushes 0 to 2 and 8 to 11
    assert history.facts["runs"][0]["pushes_of_a_stopped_regression"] == 5
    # A case before the stop (push 6) keeps every earlier run: it may be that regression.
    assert len(shown(history_of(engine, ids[6]))) == 6
    p_left_out = seen.posterior({}, k=1, n=5, earlier=history.earlier)
    assert p_left_out < p_kept
    # Read in words, as the dashboard shows the case.
    from sheriff.web.explain import _line_history

    assert "5 earlier pushes where a regression of this test was failing" in _line_history(
        history.facts["runs"][0]
    )


def test_the_runs_of_a_stopped_regression_whose_search_named_no_culprit_are_kept(
    engine,
) -> None:
    """The backfill looked for the change from clean to failing and did not find it, or
    has not found it yet: nothing shows those failures were a regression's, and most often
    they are a flaky test's called a regression (world 20261227-7). A search that named a
    culprit, or no search at all (backfills off), leaves the pushes out as before."""
    failing = set(range(3, 8)) | {10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    for search, left_out in [("failed", 0), ("open", 0), ("culprit", 5), (None, 5)]:
        _clear_records(engine)
        _record_regression(engine, first=3, stopped=8, search=search)
        history = history_of(engine, ids[-1])
        assert history.facts["runs"][0]["pushes_of_a_stopped_regression"] == left_out, search
        assert len(shown(history)) == 12 - left_out


def test_the_runs_of_a_regression_still_failing_are_kept(engine) -> None:
    """Not stopped yet (or stopped only after the case's push): the case may be that
    regression showing again, and its runs are the evidence."""
    failing = set(range(3, 8)) | {10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    _record_regression(engine, first=3, stopped=None)
    assert len(shown(history_of(engine, ids[-1]))) == 12
    assert len(shown(history_of(engine, ids[6]))) == 6  # push 6's case: all before it kept


def test_the_runs_of_a_stopped_regression_merged_into_one_still_failing_are_kept(engine) -> None:
    """A stopped record later merged into another speaks no more: the survivor, which may
    still be failing over the same pushes, says whether the regression stopped."""
    failing = set(range(3, 8)) | {10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    survivor = _record_regression(engine, first=3, stopped=None)
    _record_regression(engine, first=3, stopped=8, merged_into=survivor)
    assert len(shown(history_of(engine, ids[-1]))) == 12


def test_a_stopped_regression_that_takes_a_later_record_in_by_its_culprit_is_open_again(
    engine,
) -> None:
    """A record stopped at push 8 and a record of the same test opened at push 10, whose
    backfill named the same culprit (push 3): one regression, still failing at push 10,
    so it has not stopped. Left stopped, its pushes 3 to 7 were read as explained and the
    test's later failures as new (world 20261227-13)."""
    from sheriff.triage.regressions import follow_regressions

    failing = set(range(3, 8)) | {10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    stopped = _record_regression(engine, first=3, stopped=8, culprit=3)
    assert history_of(engine, ids[-1]).facts["runs"][0]["pushes_of_a_stopped_regression"] == 5
    later = _record_regression(engine, first=10, stopped=None, last=10, culprit=3)
    with engine.begin() as conn:
        follow_regressions(conn, NOW)
        rows = {r.id: r for r in conn.execute(sa.select(regression))}
        rev10 = conn.execute(sa.select(push.c.id).where(push.c.revision == "rev10")).scalar()
    assert rows[later].merged_into == stopped
    survivor = rows[stopped]
    assert (survivor.stopped_push_id, survivor.status) == (None, "culprit")
    assert survivor.last_push_id == rev10
    history = history_of(engine, ids[-1])
    assert history.facts["runs"][0]["pushes_of_a_stopped_regression"] == 0
    assert len(shown(history)) == 12


def test_the_runs_of_a_stopped_regression_from_the_first_known_push_are_kept(engine) -> None:
    """A record that began on the first push the store knows shows no clean run before it:
    nothing says its failures were a regression's and not the test's own. A test flaking
    half its runs, called a regression on push 0 and "stopped" by a lucky clean streak,
    would otherwise lose its whole record and look new at its next failure."""
    failing = {0, 1, 3, 5, 6, 10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    _record_regression(engine, first=0, stopped=8)
    history = history_of(engine, ids[-1])
    assert shown(history) == tuple(i in failing for i in range(12))
    assert history.facts["runs"][0]["pushes_of_a_stopped_regression"] == 0
    # The same record from push 1, with push 0 before it, is left out as before.
    _record_regression(engine, first=1, stopped=8)
    assert len(shown(history_of(engine, ids[-1]))) == 5


def test_an_open_regression_older_than_the_window_is_read_from_before_it_began(engine) -> None:
    """test_a passed on pushes 0 to 4 and has failed every run since a regression at push
    5 that nobody fixed. With a window of 4 pushes a case on push 15 sees only failures,
    what a flake failing that often shows too; with the regression's record open, the
    runs from up to 15 pushes before the record's first push are read as well."""
    ids = load(engine, [(i, "bc1", LINUX, [A], [LINE] if i >= 5 else None) for i in range(16)])
    priors = fit_priors([PastCase(p=0.01, k=0, n=2, regression=False)] * 10)
    window = history_of(engine, ids[-1], lookback=4)
    assert shown(window) == (True,) * 4  # pushes 11 to 14
    assert window.facts["runs"][0]["pushes_before_the_window"] == 0

    _record_regression(engine, first=5, stopped=None)
    history = history_of(engine, ids[-1], lookback=4)
    assert shown(history) == (False,) * 5 + (True,) * 10  # pushes 0 to 14
    assert [e.ago for e in history.earlier] == list(range(15, 0, -1))
    assert history.facts["runs"][0]["pushes_before_the_window"] == 11  # pushes 0 to 10
    before = priors.posterior({}, k=3, n=5, earlier=window.earlier)
    after = priors.posterior({}, k=3, n=5, earlier=history.earlier)
    assert before < 0.5 < 0.9 < after, (before, after)

    # Not open at push 15 (stopped at 14), or begun inside the window: nothing more read.
    for first, stopped in [(5, 14), (12, None)]:
        _clear_records(engine)
        _record_regression(engine, first=first, stopped=stopped)
        later = history_of(engine, ids[-1], lookback=4)
        assert later.facts["runs"][0]["pushes_before_the_window"] == 0
    from sheriff.web.explain import _line_history

    assert "runs on 11 pushes before the usual window" in _line_history(history.facts["runs"][0])


def test_a_regression_record_began_at_its_culprit_when_that_is_earlier(engine) -> None:
    """A record opens where a case was first called a regression; for a test that already
    flaked that can be pushes after the regression landed, and the backfill's culprit
    says where it began. test_a fails every run since push 5; its record opened at push
    12 (inside the 4-push window of a case on push 15) with culprit push 5: the runs
    from 15 pushes before the culprit are read, as for a record that opened at push 5
    (development world 20261234-0: culprit push 10, record from push 22, 10 cases called
    intermittent with nothing before the change read)."""
    ids = load(engine, [(i, "bc1", LINUX, [A], [LINE] if i >= 5 else None) for i in range(16)])
    _record_regression(engine, first=12, stopped=None)
    assert history_of(engine, ids[-1], lookback=4).facts["runs"][0]["pushes_before_the_window"] == 0
    _clear_records(engine)
    _record_regression(engine, first=12, stopped=None, culprit=5)
    history = history_of(engine, ids[-1], lookback=4)
    assert history.facts["runs"][0]["pushes_before_the_window"] == 11  # pushes 0 to 10
    assert shown(history) == (False,) * 5 + (True,) * 10

    # A culprit after the record's first push (a search that named a later push) leaves
    # the first push in charge.
    _clear_records(engine)
    _record_regression(engine, first=5, stopped=None, culprit=12)
    history = history_of(engine, ids[-1], lookback=4)
    assert history.facts["runs"][0]["pushes_before_the_window"] == 11


def test_a_stopped_regression_is_explained_from_its_culprit(engine) -> None:
    """A stopped record opened at push 5 whose culprit is push 3: the pushes it explains
    (its runs left out of the test's) run from push 3, not 5."""
    failing = set(range(3, 8)) | {10, 12}
    ids = load(
        engine, [(i, "bc1", LINUX, [A], [LINE] if i in failing else None) for i in range(13)]
    )
    _record_regression(engine, first=5, stopped=8, search="culprit")
    assert history_of(engine, ids[-1]).facts["runs"][0]["pushes_of_a_stopped_regression"] == 3
    _clear_records(engine)
    _record_regression(engine, first=5, stopped=8, culprit=3, search="culprit")
    assert history_of(engine, ids[-1]).facts["runs"][0]["pushes_of_a_stopped_regression"] == 5


def test_an_open_regression_of_a_line_that_names_no_test_is_read_from_before_it(
    engine,
) -> None:
    """A timeout regression (`Last test finished | application timed out`, no test named)
    failing the chunk since push 5: its record is read from before it by its line, as a
    named test's is by the test (development world 20261234-9: a timeout failing 79 % of
    runs since push 7, never fixed, called intermittent at pushes 57 to 66 with the
    window all after it). Another line that names no test keeps its window."""
    timeout = (
        "TEST-UNEXPECTED-TIMEOUT | Last test finished | application timed out after "
        "<duration> with no output"
    )
    ids = load(engine, [(i, "bc1", LINUX, [A], [timeout] if i >= 5 else None) for i in range(16)])
    _record_regression(engine, first=5, stopped=None, line=timeout)
    history = history_of(engine, ids[-1], lookback=4)
    assert history.facts["runs"][0]["pushes_before_the_window"] == 11  # pushes 0 to 10
    assert shown(history) == (False,) * 5 + (True,) * 10

    _clear_records(engine)
    other = timeout.replace("timed out", "hung")
    _record_regression(engine, first=5, stopped=None, line=other)
    history = history_of(engine, ids[-1], lookback=4)
    assert history.facts["runs"][0]["pushes_before_the_window"] == 0
    assert shown(history) == (True,) * 4


def test_other_tests_that_began_failing_are_counted_on_the_tests_next_entry(engine) -> None:
    def fails(*names: str) -> list[str]:
        return [f"TEST-UNEXPECTED-FAIL | dom/z/test_{n}.html | x" for n in names]

    specs = [(i, "bc1", LINUX, [A], None) for i in range(15) if i not in (11, 12)]
    specs += [
        (1, "bc2", LINUX, [OTHER], fails("w")),  # failed before: no onset at push 12
        (5, "bc2", LINUX, [OTHER], fails("v")),  # too early to count as a change
        (11, "bc2", LINUX, [OTHER], fails("x")),  # A did not run on 11 or 12
        (12, "bc2", LINUX, [OTHER], fails("w", "y", "z")),
        (12, "bc2", WIN, [OTHER], fails("y")),
        (14, "bc2", LINUX, [OTHER], fails("u")),  # the case's own push: not a change point
        (14, "bc1", LINUX, [A], [LINE]),  # the case
    ]
    ids = load(engine, specs)
    history = history_of(engine, ids[-1])
    onsets = {e.ago: e.onsets for e in history.earlier}
    # x, y and z began failing since A's run on push 10, counted on its run of push 13
    assert onsets[1] == 3
    assert sum(onsets.values()) == 3
