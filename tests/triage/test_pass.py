"""The triage pass against the simulator over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.backfill import named_culprits
from sheriff.store.schema import job, job_type, run_observation, triage_case
from sheriff.triage import engine as engine_module
from sheriff.triage.simrun import measure, regressions_in_scope
from tests.triage.conftest import drive, make_triage, one_pass

VOID = {"exception", "retry", "usercancel", "superseded"}


def _metrics(engine, sim, triage):
    return measure(
        engine,
        sim.truth(),
        sim.stats(),
        sim.world.action_counts(),
        policy=triage.policy.name,
        virtual_hours=0,
        queue_prefixes=triage.settings.queue_prefixes,
    )


def _independent_verdicts(engine) -> dict[int, str]:
    """SPEC §3 step 8 computed straight from the stored observations, without the policy."""
    with engine.connect() as conn:
        cases = conn.execute(
            sa.select(
                triage_case.c.id, triage_case.c.job_id, triage_case.c.push_id, triage_case.c.label
            ).where(triage_case.c.verdict.in_(["regression", "intermittent"]))
        ).all()
        runs = conn.execute(
            sa.select(
                job.c.id,
                job.c.task_id,
                job.c.run_id,
                job.c.push_id,
                job.c.result,
                job_type.c.name,
                run_observation.c.failure_lines,
            )
            .join(job_type, job_type.c.id == job.c.job_type_id)
            .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
        ).all()
    latest: dict[str, tuple] = {}
    for r in runs:
        if r.task_id not in latest or r.run_id > latest[r.task_id].run_id:
            latest[r.task_id] = r
    by_id = {r.id: r for r in runs}
    computed = {}
    for case in cases:
        original = by_id[case.job_id]
        lines = set(original.failure_lines or [])
        reproduced = sum(
            1
            for r in latest.values()
            if r.push_id == case.push_id
            and r.name == case.label
            and r.task_id != original.task_id
            and r.result not in VOID
            and lines & set(r.failure_lines or [])
        )
        computed[case.id] = "regression" if reproduced >= 2 else "intermittent"
    return computed


def test_every_eligible_case_is_decided_by_the_exact_rule(engine, sim) -> None:
    triage = make_triage(engine, sim)
    drive(triage, sim)
    metrics = _metrics(engine, sim, triage)
    assert metrics["verdicts"]["pending"] == 0
    assert metrics["excess_retriggers"] == 0
    assert metrics["eligible"] > 0 and metrics["verdicts"]["regression"] > 0
    assert metrics["retriggers"] == 5 * metrics["eligible"]
    with engine.connect() as conn:
        stored = dict(
            conn.execute(
                sa.select(triage_case.c.id, triage_case.c.verdict).where(
                    triage_case.c.verdict.in_(["regression", "intermittent"])
                )
            ).all()
        )
        evidence = (
            conn.execute(
                sa.select(triage_case.c.evidence).where(triage_case.c.verdict == "regression")
            )
            .scalars()
            .first()
        )
    assert stored == _independent_verdicts(engine)
    assert evidence["policy"] == "seed" and evidence["runs_counted"] == 6
    assert any(line["retriggers"] >= 2 for line in evidence["lines"])


def test_retriggers_of_one_push_go_out_as_one_request(engine, sim) -> None:
    triage = make_triage(engine, sim)
    drive(triage, sim)
    with engine.connect() as conn:
        requests = request_log.requests(conn)
    assert requests and {r.strategy for r in requests} == {"retrigger-multiple"}
    assert all(r.state == "sent" and r.action_task_id for r in requests)
    per_push = Counter((r.revision, tuple(r.labels)) for r in requests)
    assert max(per_push.values()) == 1


class Interrupted(Exception):
    pass


def test_a_pass_killed_after_planning_resumes_without_asking_twice(engine, sim, monkeypatch):
    triage = make_triage(engine, sim)
    real_send = engine_module.Triage.send
    crashed = []

    def send_then_crash(self, summary, now):
        with self.engine.connect() as conn:
            waiting = request_log.requests(conn, states=["requested"])
        if waiting and not crashed:
            crashed.append(len(waiting))
            raise Interrupted  # the process dies between committing the plan and sending it
        return real_send(self, summary, now)

    monkeypatch.setattr(engine_module.Triage, "send", send_then_crash)
    with pytest.raises(Interrupted):
        drive(triage, sim)
    assert crashed
    # A fresh process picks up where the dead one stopped.
    drive(make_triage(engine, sim), sim)
    metrics = _metrics(engine, sim, triage)
    assert metrics["excess_retriggers"] == 0 and metrics["verdicts"]["pending"] == 0
    with engine.connect() as conn:
        asked = list(
            conn.execute(
                sa.select(triage_case.c.retriggers_requested).where(
                    triage_case.c.retriggers_requested > 0
                )
            ).scalars()
        )
    # Five per case: the eligible ones, and any a person classified after they were asked.
    assert set(asked) == {5} and len(asked) >= metrics["eligible"]
    assert metrics["retriggers"] == 5 * len(asked)


def test_a_pass_killed_halfway_through_the_pushes_resumes(engine, sim, monkeypatch):
    triage = make_triage(engine, sim)
    real_advance = engine_module.advance_push
    calls = []

    def advance_then_crash(conn, **kwargs):
        calls.append(kwargs["push_id"])
        if len(calls) == 3:
            raise Interrupted  # dies in the middle of a push's transaction: rolled back
        return real_advance(conn, **kwargs)

    monkeypatch.setattr(engine_module, "advance_push", advance_then_crash)
    with pytest.raises(Interrupted):
        drive(triage, sim)
    monkeypatch.setattr(engine_module, "advance_push", real_advance)
    drive(make_triage(engine, sim), sim)
    metrics = _metrics(engine, sim, triage)
    assert metrics["excess_retriggers"] == 0 and metrics["verdicts"]["pending"] == 0


def test_two_passes_at_once_never_ask_twice(engine, sim) -> None:
    first, second = make_triage(engine, sim), make_triage(engine, sim)
    errors: list[BaseException] = []
    for _ in range(60):
        sim.advance(minutes=10)

        def run(t):
            try:
                one_pass(t, sim)
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(t,)) for t in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        if sim.world.finished and one_pass(first, sim).open_cases == 0:
            break
    metrics = _metrics(engine, sim, first)
    assert metrics["excess_retriggers"] == 0
    assert metrics["retriggers"] == 5 * metrics["eligible"]


def test_a_dry_run_records_its_requests_once_and_sends_nothing(engine, sim) -> None:
    triage = make_triage(engine, sim, live=False)
    for _ in range(12):
        sim.advance(minutes=10)
        one_pass(triage, sim)
    with engine.connect() as conn:
        requests = request_log.requests(conn)
        open_cases = conn.execute(
            sa.select(sa.func.count()).where(triage_case.c.state.in_(["planned", "waiting"]))
        ).scalar_one()
    assert requests and all(r.state == "dry-run" for r in requests)
    assert sum(1 for c in sim.world.action_counts()) == 0
    planned = Counter((r.revision, label) for r in requests for label in r.labels)
    assert max(planned.values()) == 1  # each label of a push planned once, not once per pass
    assert open_cases > 0  # nothing was retriggered, so they wait


def test_a_regression_is_backfilled_to_its_culprit(engine, sim) -> None:
    triage = make_triage(engine, sim, backfill="bisect")
    drive(triage, sim)
    truth = sim.truth()["regressions"][0]
    with engine.connect() as conn:
        named = named_culprits(conn)
    assert named and named[0]["culprit_revision"] == truth["culprit_revision"]
    metrics = _metrics(engine, sim, triage)
    assert metrics["culprits"]["correct"] == 1 and metrics["excess_retriggers"] == 0
    assert metrics["culprits"]["in_scope"] == 1


def test_a_regression_is_in_scope_only_where_its_runs_are_triaged(engine, sim) -> None:
    # tiny.yaml's regression fails on Linux and Windows; macOS queues run nothing here.
    drive(make_triage(engine, sim, backfill="off"), sim)
    cases = sim.truth()["cases"]
    with engine.connect() as conn:
        assert regressions_in_scope(conn, cases, ("gecko-t/t-linux-",)) == {0}
        assert regressions_in_scope(conn, cases, ("gecko-t/win",)) == {0}
        assert regressions_in_scope(conn, cases, ("releng-hardware/",)) == set()


def test_pushes_keep_author_message_pushlog_id_and_where_they_came_from(engine, sim):
    from sheriff.store import api_queries
    from sheriff.store.schema import push, repository

    triage = make_triage(engine, sim, live=False)
    sim.advance(minutes=60)
    one_pass(triage, sim)
    listed = {p["revision"]: p for p in triage.treeherder.pushes("autoland", since=0, until=2**31)}
    with engine.connect() as conn:
        stored = conn.execute(sa.select(push)).all()
        with_jobs = set(conn.execute(sa.select(job.c.push_id).distinct()).scalars())
        sources = conn.execute(sa.select(repository)).one()
        shown = api_queries.list_pushes(conn, sources.id)
    assert stored and len(stored) == len(listed)
    for row in stored:
        served = listed[row.revision]
        assert row.author == served["author"]
        assert row.message == served["revisions"][0]["comments"]
        # From the tasks' tc-treeherder routes, once the push's task group was listed.
        assert (row.pushlog_id is not None) == (row.id in with_jobs)
    assert {p["revision"]: p["message"] for p in shown} == {r.revision: r.message for r in stored}
    assert (sources.taskcluster_root_url, sources.treeherder_url) == (sim.root_url, sim.root_url)


def _cased_tasks(engine) -> set[str]:
    with engine.connect() as conn:
        return set(
            conn.execute(
                sa.select(job.c.task_id).join(triage_case, triage_case.c.job_id == job.c.id)
            ).scalars()
        )


def _failed_originals(sim) -> set[str]:
    """Every original test task whose last run failed or hit an exception (the truth's cases)."""
    return set(sim.truth()["cases"])


def test_a_pass_that_dies_after_storing_jobs_loses_no_case(engine, sim, monkeypatch):
    """The invariant: a failed original run gets its case in the next successful pass,
    even when the pass that stored it died before opening cases (its push is finished and
    has no open case, so it is never listed again)."""
    real_open = engine_module.open_cases
    deaths = []

    def open_then_die(conn, push_ids, policy, now):
        if len(deaths) < 4:
            deaths.append(now)
            raise Interrupted
        return real_open(conn, push_ids, policy, now)

    monkeypatch.setattr(engine_module, "open_cases", open_then_die)
    triage = make_triage(engine, sim)
    for _ in range(4):  # four passes die, each after storing what it listed
        sim.advance(minutes=45)
        with pytest.raises(Interrupted):
            one_pass(triage, sim)
    assert _cased_tasks(engine) == set()
    drive(triage, sim)
    assert _cased_tasks(engine) == _failed_originals(sim)


def test_an_artifact_that_will_not_download_defers_not_aborts(engine, sim, monkeypatch):
    from sheriff.ci.taskcluster import TaskclusterUnavailable

    triage = make_triage(engine, sim)
    real = triage.clients.latest_artifact
    failing = [True]

    def unavailable(task_id, name):
        if failing[0] and "manifests-by-task" in name:
            raise TaskclusterUnavailable(f"artifact {name} of task {task_id}: HTTP 503", status=503)
        return real(task_id, name)

    monkeypatch.setattr(triage.clients, "latest_artifact", unavailable)
    sim.advance(minutes=120)
    summary = one_pass(triage, sim)
    assert summary.groups_listed > 0 and summary.cases_opened > 0  # the pass went on
    assert summary.deferred and all("manifests of" in d for d in summary.deferred)
    failing[0] = False
    drive(triage, sim)
    assert _cased_tasks(engine) == _failed_originals(sim)
    with engine.connect() as conn:
        from sheriff.store.schema import push, push_label_manifest_set

        pushes_with_jobs = set(conn.execute(sa.select(job.c.push_id).distinct()).scalars())
        with_manifests = set(
            conn.execute(sa.select(push_label_manifest_set.c.push_id).distinct()).scalars()
        )
        assert conn.execute(sa.select(sa.func.count()).select_from(push)).scalar() > 0
    assert pushes_with_jobs == with_manifests  # every deferred download came later


def test_a_busy_push_is_not_listed_again_while_its_runs_are_still_at_work(engine) -> None:
    """Treeherder lists pending and running jobs (result `unknown`): those are no news, so
    a push whose tasks are all still at work is not listed again on every pass."""
    from sheriff.sim.scenario import parse_scenario
    from sheriff.sim.server import SimServer
    from tests.sim.conftest import tiny_data

    data = tiny_data(pushes=1, regressions=[])
    for suite in data["suites"]:
        suite["duration_minutes"] = [150, 160]  # nothing finishes during the test
    with SimServer(parse_scenario(data)) as sim:
        triage = make_triage(engine, sim)
        listed: list[str] = []
        real = triage.clients.queue.listTaskGroup

        def counting(group_id, *args, **kwargs):
            listed.append(group_id)
            return real(group_id, *args, **kwargs)

        triage.clients.queue.listTaskGroup = counting
        for _ in range(12):
            sim.advance(minutes=5)
            one_pass(triage, sim)
        with engine.connect() as conn:
            states = set(
                conn.execute(sa.select(job.c.state).where(job.c.job_kind == "test")).scalars()
            )
    assert states <= {"pending", "running"} and "running" in states
    # The push's first listing, and the one after its decision task completed.
    assert len(listed) <= 3, listed


def test_treeherders_pending_and_running_jobs_are_no_news(engine, sim) -> None:
    """Treeherder's job list of a push, as the real one answers while runs are at work
    (state pending/running, result unknown), says nothing new about runs stored as such;
    a run it shows completed, or one sheriff does not know, is news."""
    triage = make_triage(engine, sim)
    sim.advance(minutes=20)
    one_pass(triage, sim)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(job.c.push_id, job.c.task_id, job.c.run_id, job.c.state).where(
                job.c.state.in_(("pending", "running"))
            )
        ).all()
    assert rows
    push_id = rows[0].push_id
    at_work = [
        {"task_id": r.task_id, "retry_id": r.run_id, "state": r.state, "result": "unknown"}
        for r in rows
        if r.push_id == push_id
    ]
    state = engine_module.PushState(push_id, "", None)
    assert not triage._moved(state, at_work)
    done = [dict(at_work[0], state="completed", result="success"), *at_work[1:]]
    assert triage._moved(state, done)
    unknown = [*at_work, {"task_id": "A" * 22, "retry_id": 0, "state": "pending"}]
    assert triage._moved(state, unknown)
