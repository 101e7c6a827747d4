"""What an observation reads of a run: its own artifacts, and nothing that never comes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sheriff.ci.pulse import EXCHANGE_PREFIX
from sheriff.ingest.pulse import event_of, store_events
from sheriff.model.case import ErrorSummaryState
from sheriff.model.policy import NO_LOG
from sheriff.sim.artifacts import artifacts, errorsummary_name
from sheriff.sim.entities import INFRA_EXCEPTION, INFRA_NO_SUMMARY
from sheriff.sim.pulse import message
from sheriff.sim.scenario import parse_scenario
from sheriff.sim.server import SimServer
from sheriff.store.schema import job, triage_case
from sheriff.triage.observe import RunRef, observation_done, observations
from tests.sim.conftest import tiny_data
from tests.triage.conftest import make_triage, one_pass


@pytest.fixture
def troubled() -> Iterator[SimServer]:
    """A tiny world where most runs hit infrastructure trouble."""
    with SimServer(parse_scenario(tiny_data(infra_failure_rate=0.6))) as server:
        yield server


@pytest.fixture
def triage(engine, troubled):  # type: ignore[no-untyped-def]
    """Sheriff's triage of `troubled`, after one pass two virtual hours in."""
    found = make_triage(engine, troubled)
    troubled.advance(120)
    one_pass(found, troubled)
    return found


def _observe(triage, sim, task_id: str, run_id: int, *, errorsummary: bool = True) -> dict:
    with triage.engine.connect() as conn:
        row = conn.execute(
            sa.select(job.c.id, job.c.result).where(
                job.c.task_id == task_id, job.c.run_id == run_id
            )
        ).one()
    ref = RunRef(row.id, task_id, run_id, errorsummary, None, row.result)
    triage.observer.observe([ref], sim.now)
    with triage.engine.connect() as conn:
        return observations(conn, [row.id])[row.id]


def test_the_errorsummary_is_read_from_the_runs_own_artifacts(triage, troubled) -> None:
    """After a rerun the latest run is another one (pending: no artifacts yet), so the
    latest artifact is not this run's file; the run-specific endpoint is."""
    sim = troubled
    task = next(
        t
        for t in sim.world.tasks.values()
        if t.kind == "test" and t.state == "failed" and t.runs[-1].outcome.infra is None
    )
    sim.world.rerun(task)  # what retrigger-multiple does to a label it may not clone
    found = _observe(triage, sim, task.task_id, 0)
    assert found["errorsummary"] == ErrorSummaryState.COMPLETE.value
    reported = {f[0] for f in found["structured_failures"]}
    assert {f.test for f in task.runs[0].outcome.failures} <= reported  # and failed groups


def test_an_error_artifact_is_no_errorsummary(triage, troubled) -> None:
    """The Queue answers 424 for an `error` artifact (the worker could not upload the file):
    infrastructure evidence, as if there were none, and the observation goes on."""
    sim = troubled
    task = next(
        t
        for t in sim.world.tasks.values()
        if t.kind == "test"
        and t.runs[0].outcome.infra == INFRA_NO_SUMMARY
        and t.runs[0].resolved is not None
        and any(
            a.storage_type == "error" and a.name == errorsummary_name(sim.world, t)
            for a in artifacts(sim.world, t, t.runs[0])
        )
    )
    found = _observe(triage, sim, task.task_id, 0)
    assert found["errorsummary"] == ErrorSummaryState.MISSING.value


def test_an_exception_run_has_no_log_to_wait_for(triage, troubled) -> None:
    sim = troubled
    sim.advance(10)  # Treeherder has ingested the resolved runs
    task = next(
        t
        for t in sim.world.tasks.values()
        if t.kind == "test"
        and t.runs[0].outcome.infra == INFRA_EXCEPTION
        and t.runs[0].resolved is not None
        and t.runs[0].resolved < sim.world.minutes - 10
    )
    found = _observe(triage, sim, task.task_id, 0, errorsummary=False)
    assert found["treeherder_job_id"] is not None
    assert found["parse_status"] == NO_LOG
    assert observation_done(found, want_errorsummary=False)


def test_a_run_stored_as_failed_before_taskcluster_resolved_it_is_not_judged(engine, sim) -> None:
    """A Pulse message may say a run failed while Taskcluster still has it running (in a
    play: another simulator of the same scenario publishing to the same broker). Its
    listing is empty until it resolves: that is no missing errorsummary, and no infra
    verdict; the errorsummary is read once Taskcluster says the run resolved."""
    triage = make_triage(engine, sim)
    sim.advance(40)
    one_pass(triage, sim)
    task = next(
        t
        for t in sim.world.tasks.values()
        if t.kind == "test"
        and len(t.runs) == 1
        and t.runs[0].state == "running"
        and t.runs[0].outcome.state == "failed"
        and t.runs[0].outcome.infra is None
    )
    run = task.runs[0]
    payload, routes = message(sim.world, "task-running", task, run)
    payload["status"]["state"] = "failed"
    payload["status"]["runs"][0] |= {
        "state": "failed",
        "reasonResolved": "failed",
        "resolved": sim.world.iso(sim.world.minutes),
    }
    store_events(engine, [event_of(EXCHANGE_PREFIX + "task-failed", payload, routes[1:])])
    sim.advance(5)  # Treeherder lists the running job: the case's classification is known
    assert run.resolved is None

    one_pass(triage, sim)
    found = _observe(triage, sim, task.task_id, 0)
    assert found["errorsummary"] is None
    with engine.connect() as conn:
        case = conn.execute(
            sa.select(triage_case.c.state, triage_case.c.verdict).where(
                triage_case.c.job_id == found["job_id"]
            )
        ).one()
    assert (case.state, case.verdict) == ("new", None)

    while run.resolved is None:
        sim.advance(5)
    assert _observe(triage, sim, task.task_id, 0)["errorsummary"] == "complete"


def test_the_runs_of_many_pushes_are_each_pushs_latest_runs_of_its_labels(triage, troubled) -> None:
    """One query for every push with open cases (the service asks every period) reads what
    a query per push read: each push's latest runs of its own labels, no other push's."""
    from sheriff.triage.observe import latest_runs, latest_runs_of_pushes

    troubled.advance(60)
    one_pass(triage, troubled)
    with triage.engine.connect() as conn:
        cases = conn.execute(sa.select(triage_case.c.push_id, triage_case.c.label)).all()
        labels: dict[int, set[str]] = {}
        for push_id, label in cases:
            labels.setdefault(push_id, set()).add(label)
        # A label of one push asked for on another must not bring that push's runs.
        first = min(labels)
        labels[first] |= {next(iter(labels[p])) for p in labels if p != first}
        together = latest_runs_of_pushes(conn, labels)
        one_by_one = [r for p in sorted(labels) for r in latest_runs(conn, p, labels[p])]
    assert len(labels) > 1 and together
    key = lambda r: (r["push_id"], r["id"])  # noqa: E731
    assert sorted(together, key=key) == sorted(one_by_one, key=key)
