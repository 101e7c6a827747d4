"""The service's cheaper passes: what a pass on Pulse messages asks of CI, and what it does
not (on the simulator, counting its requests per endpoint)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from sheriff.sim.scenario import load_scenario
from sheriff.sim.server import SimServer
from sheriff.store.schema import job, push, run_observation, triage_case
from sheriff.triage.cases import OPEN_STATES
from sheriff.triage.observe import RunRef, observations
from tests.triage.conftest import TINY, make_triage, one_pass

LISTING = "GET /api/queue/v1/task-group/{group_id}/list"
TREEHERDER_READS = (
    "GET /api/jobs/",
    "GET /api/project/{repo}/job-log-url/",
    "GET /api/project/{repo}/jobs/{job_id}/bug_suggestions/",
)
SUGGESTIONS = "GET /api/project/{repo}/jobs/{job_id}/bug_suggestions/"


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with SimServer(load_scenario(TINY), port=0) as server:
        yield server


def _asked(sim: SimServer) -> Counter[str]:
    return Counter(sim.stats()["endpoints"])


def test_a_pass_on_messages_lists_only_what_it_is_told_and_asks_treeherder_nothing(
    engine, sim: SimServer
) -> None:
    triage = make_triage(engine, sim)
    sim.advance(90)
    one_pass(triage, sim)  # the polling pass stores every push and opens the cases
    with engine.connect() as conn:
        revisions = sorted(
            conn.execute(
                sa.text(
                    "SELECT DISTINCT push.revision FROM push JOIN triage_case"
                    " ON triage_case.push_id = push.id"
                )
            ).scalars()
        )
    assert revisions

    def asked_by_a_pass(**hints: object) -> Counter[str]:
        before = _asked(sim)
        now = sim.now
        triage.run_pass(since=now, until=now, now=now, revisions=revisions, **hints)  # type: ignore[arg-type]
        return _asked(sim) - before

    sim.advance(20)
    asked = asked_by_a_pass(relist=(), treeherder=False)
    assert asked[LISTING] == 0
    assert not any(asked[name] for name in TREEHERDER_READS), asked
    # Told that one push has a task it does not know: that group alone is listed.
    assert asked_by_a_pass(relist=revisions[:1], treeherder=False)[LISTING] == 1
    # The same pass without the service's hints asks Treeherder whether the pushes moved.
    sim.advance(20)
    assert asked_by_a_pass()["GET /api/jobs/"] > 0


def test_the_service_reads_no_bug_suggestions_of_a_run_that_passed(engine, sim) -> None:
    triage = make_triage(engine, sim)
    sim.advance(240)  # long enough for Treeherder to parse the first pushes' logs
    one_pass(triage, sim)
    with engine.connect() as conn:
        passed = conn.execute(
            sa.select(
                job.c.id, job.c.task_id, job.c.run_id, job.c.result, job.c.end_time, push.c.revision
            )
            .join(push, push.c.id == job.c.push_id)
            .where(job.c.result == "success", job.c.job_kind == "test")
            .where(job.c.id.not_in(sa.select(run_observation.c.job_id)))
            .where(job.c.id.not_in(sa.select(triage_case.c.job_id)))
            .order_by(job.c.id)
            .limit(2)
        ).all()
    assert len(passed) == 2
    # With their Treeherder push: its job list gives each run's job and parse status.
    th_push = triage._treeherder_push_ids
    refs = [
        RunRef(r.id, r.task_id, r.run_id, False, th_push[r.revision], r.result, r.end_time)
        for r in passed
    ]
    # As a pass does: the push's job list read first (it shows the jobs and parse states).
    jobs = {r.treeherder_push_id: list(triage.treeherder.jobs_of_push(r.treeherder_push_id))
            for r in refs}  # fmt: skip
    triage.observer.ask_passed_runs_for_lines = False
    before = _asked(sim)
    triage.observer.observe(refs[:1], sim.now, push_jobs=jobs)
    assert (_asked(sim) - before)[SUGGESTIONS] == 0
    triage.observer.ask_passed_runs_for_lines = True  # as `sheriff triage` does
    before = _asked(sim)
    triage.observer.observe(refs[1:], sim.now, push_jobs=jobs)
    assert (_asked(sim) - before)[SUGGESTIONS] == 1
    with engine.connect() as conn:
        found = observations(conn, [r.id for r in passed])
    # Both end the same: parsed, no failure lines.
    assert [found[r.id]["parse_status"] for r in passed] == ["parsed", "parsed"]
    assert [found[r.id]["failure_lines"] for r in passed] == [[], []]


def test_a_window_pass_forgets_the_revisions_of_the_listings_it_drops(engine, sim) -> None:
    # A long-running worker must not keep a revision → push entry per push it ever listed.
    triage = make_triage(engine, sim)
    sim.advance(90)
    one_pass(triage, sim)
    kept = dict(triage._listed_revisions)
    assert kept and set(kept.values()) <= set(triage._listings)
    # A push the window no longer covers (gone by cycling, or long past): its listing and
    # its revision both go at the next pass over the window.
    some = next(iter(triage._listings.values()))
    triage._listings[999_999] = some
    triage._listed_revisions["f" * 40] = 999_999
    one_pass(triage, sim)
    assert 999_999 not in triage._listings
    assert "f" * 40 not in triage._listed_revisions
    assert set(triage._listed_revisions.values()) <= set(triage._listings)


def test_a_job_list_read_this_pass_answers_for_its_runs_not_ingested_yet(engine, sim) -> None:
    # A run missing from its push's job list, read moments ago by the same pass, is not
    # ingested yet: asking Treeherder again (the push's list, the task's jobs) says the same.
    triage = make_triage(engine, sim)
    sim.advance(90)
    one_pass(triage, sim)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(job.c.id, job.c.task_id, job.c.run_id, job.c.result, push.c.revision)
            .join(push, push.c.id == job.c.push_id)
            .where(job.c.id.not_in(sa.select(run_observation.c.job_id)))
            .order_by(push.c.id, job.c.id)
        ).all()
    revision = Counter(r.revision for r in rows).most_common(1)[0][0]
    runs = [r for r in rows if r.revision == revision][:3]
    assert len(runs) == 3
    th_push = triage._treeherder_push_ids[revision]
    refs = [RunRef(r.id, r.task_id, r.run_id, False, th_push, r.result) for r in runs]
    before = _asked(sim)
    # Several runs of the push, and one alone: neither asks again.
    triage.observer.observe(refs[:2], sim.now, push_jobs={th_push: []})
    triage.observer.observe(refs[2:], sim.now, push_jobs={th_push: []})
    assert (_asked(sim) - before)["GET /api/jobs/"] == 0
    # Without this pass's list, the runs are asked for (the push's list, then the task's).
    triage.observer.observe(refs[:2], sim.now)
    triage.observer.observe(refs[2:], sim.now)
    assert (_asked(sim) - before)["GET /api/jobs/"] == 2


def test_a_cheap_catch_up_asks_only_where_pulse_told_and_a_full_pass_finds_the_rest(
    engine, sim
) -> None:
    triage = make_triage(engine, sim)
    sim.advance(40)  # pushes still at work
    one_pass(triage, sim)
    sim.advance(20)  # runs resolve on several pushes; every message of them is lost
    now = sim.now

    # The pushes Treeherder is asked for the job lists of (several in one call).
    named: list[int] = []
    read = triage.treeherder.jobs_of_pushes

    def jobs_of_pushes(push_ids):
        ids = sorted(set(push_ids))
        named.extend(ids)
        return read(ids)

    triage.treeherder.jobs_of_pushes = jobs_of_pushes

    def catch_up(quiet_since):
        named.clear()
        summary = triage.run_pass(
            since=now - timedelta(hours=6), until=now, now=now, quiet_since=quiet_since
        )
        return summary, len(named)

    with engine.connect() as conn:
        at_work = set(
            conn.execute(
                sa.select(job.c.push_id).distinct().where(job.c.state != "completed")
            ).scalars()
        )
        with_cases = set(
            conn.execute(
                sa.select(triage_case.c.push_id)
                .distinct()
                .where(triage_case.c.state.in_(OPEN_STATES))
            ).scalars()
        )
    quiet = at_work - with_cases  # still at work, no open case: only Pulse would tell
    assert quiet
    # Pulse told of nothing since `now`: only the pushes with open cases are asked about.
    stored = _stored_pushes(engine)
    cheap, asked = catch_up(quiet_since=now)
    assert asked <= len(with_cases)
    assert cheap.groups_listed <= len(with_cases)
    assert _stored_pushes(engine) == stored  # a push Pulse named nothing of yet: not listed
    # What the lost messages said is not lost: the next full pass (or a push that stirs)
    # asks about every push still at work and stores the runs.
    full, asked = catch_up(quiet_since=None)
    assert asked >= len(with_cases | quiet)
    assert full.jobs_written > 0
    assert _stored_pushes(engine) > stored


def _stored_pushes(engine) -> set[int]:
    with engine.connect() as conn:
        return set(conn.execute(sa.select(job.c.push_id).distinct()).scalars())
