"""Regressions, write-back and alerts, played on tiny.yaml against the simulator over HTTP.

One regression (push 2, every platform, every run): its cases are one record with the
true culprit and one backfill search; every failed run sheriff decided or created is
classified in the simulator's Treeherder by sheriff's user, a person's classification is
never overwritten, and the regression is announced once in the simulator's Matrix room.
A second process afterwards sends nothing again.
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from sheriff.actions.effects import dispatch_effects, enqueue_effect
from sheriff.actions.writeback import CLASSIFY, TreeherderWriter
from sheriff.ci.taskcluster import taskcluster_clients
from sheriff.ci.treeherder import Treeherder
from sheriff.config import load_settings
from sheriff.sim.app import SIM_MATRIX_ROOM, SIM_MATRIX_TOKEN
from sheriff.sim.load import load_left
from sheriff.sim.treeherder_api import SIM_TREEHERDER_TOKEN, SIM_TREEHERDER_USER
from sheriff.store.regressions import get_regression, list_regressions
from sheriff.store.schema import action_request, backfill_report
from sheriff.triage.engine import Triage
from sheriff.triage.simrun import SIM_ACCESS_TOKEN, SIM_CLIENT_ID
from tests.triage.conftest import drive, one_pass


def _triage(engine, sim, *, token: str | None = SIM_TREEHERDER_TOKEN) -> Triage:
    settings = load_settings(
        database_url=str(engine.url),
        taskcluster_root_url=sim.root_url,
        treeherder_url=sim.root_url,
        taskcluster_client_id=SIM_CLIENT_ID,
        taskcluster_access_token=SIM_ACCESS_TOKEN,
        policy="history",
        treeherder_token=token,
        matrix_homeserver=sim.root_url,
        matrix_access_token=SIM_MATRIX_TOKEN,
        matrix_room_id=SIM_MATRIX_ROOM,
    )
    clients = taskcluster_clients(
        sim.root_url, client_id=SIM_CLIENT_ID, access_token=SIM_ACCESS_TOKEN
    )
    return Triage(
        engine, settings, clients, Treeherder(sim.root_url), repo="autoland", live=True,
        backfill="bisect",
    )  # fmt: skip


def _room(sim) -> list[dict]:
    return list(sim.app.state.matrix_room.values())


def test_one_regression_one_search_written_back_and_announced_once(engine, sim) -> None:
    triage = _triage(engine, sim)
    drive(triage, sim, limit_hours=10)
    for _ in range(6):  # let the last writes and the stopped/culprit alerts settle
        sim.advance(minutes=10)
        one_pass(triage, sim)
    truth = sim.truth()
    [true_regression] = truth["regressions"]
    with engine.connect() as conn:
        found = list_regressions(conn)
        reports = conn.execute(sa.select(backfill_report)).all()
        cases = conn.execute(
            sa.text("select count(*) from triage_case where verdict = 'regression'")
        ).scalar_one()
        again = get_regression(conn, found[0]["id"])
    assert cases > 1  # many cases…
    assert len(found) == 1  # …one regression
    [mine] = found
    assert again == mine
    assert mine["culprit"]["revision"] == true_regression["culprit_revision"]
    assert len(mine["cases"]) == cases
    assert set(mine["tests"]) >= set(true_regression["tests"])
    assert len(reports) == 1 and mine["backfill_report_id"] == reports[0].id  # one search

    load = load_left(sim.world, _room(sim))
    written = [j for j in sim.world.jobs.values() if j.api_notes]
    assert written and all(who == SIM_TREEHERDER_USER for j in written for who, *_ in j.api_notes)
    assert load["overwritten_person"] == 0
    for job in written:
        truth_of = (
            "regression"
            if any(f.regression is not None for f in job.task.runs[job.run_id].outcome.failures)
            else "other"
        )
        fc = job.api_notes[0][3]
        assert (fc == 2) == (truth_of == "regression")
        if fc == 4:
            assert job.bugs  # the open bug of its suggestions, linked
    view = load["views"]["treeherder"]
    assert view["regression_jobs_classified_intermittent"] == 0
    alerts = load["alerts"]
    assert alerts["alerts_per_true_regression"] == {"0": 1}
    assert alerts["alerts_for_no_true_regression"] == 0

    # A second process (nothing in memory) finds everything done: nothing is sent again.
    notes = sum(len(j.api_notes) for j in sim.world.jobs.values())
    messages = len(_room(sim))
    later = _triage(engine, sim)
    sim.advance(minutes=10)
    one_pass(later, sim)
    assert sum(len(j.api_notes) for j in sim.world.jobs.values()) == notes
    assert len(_room(sim)) == messages


def test_without_a_token_write_back_is_a_dry_run(sqlite_engine, sim) -> None:
    triage = _triage(sqlite_engine, sim, token=None)
    drive(triage, sim, limit_hours=10)
    assert not any(j.api_notes for j in sim.world.jobs.values())
    with sqlite_engine.connect() as conn:
        states = set(
            conn.execute(
                sa.select(action_request.c.state).where(action_request.c.strategy == CLASSIFY)
            ).scalars()
        )
    assert states == {"dry-run"}


def test_a_persons_classification_is_never_overwritten(sqlite_engine, sim) -> None:
    sim.advance(minutes=90)
    with sim.world.lock:
        failed = [
            j for j in sim.world.jobs.values()
            if j.state == "completed" and j.task.runs[j.run_id].state == "failed"
        ]  # fmt: skip
        unclassified = [j for j in failed if j.note is None and j.classification in (1, 6, 8)]
        person, free = unclassified[0], unclassified[1]
        person.classification, person.note = 4, ("aryx@mozilla.com", "", sim.world.minutes)
    writer = {CLASSIFY: TreeherderWriter(Treeherder(sim.root_url, token=SIM_TREEHERDER_TOKEN))}
    with sqlite_engine.begin() as conn:
        for j in (person, free):
            enqueue_effect(
                conn, f"treeherder:autoland:{j.job_id}", CLASSIFY, repository="autoland",
                revision=j.task.push.revision,
                input={"job_id": j.job_id, "classification": 8, "text": "intermittent"},
            )  # fmt: skip
    summary = dispatch_effects(sqlite_engine, writer, now=sim.now)
    assert (summary.sent, summary.skipped) == (1, 1)
    assert person.classification == 4 and not person.api_notes
    assert free.classification == 8 and free.classified_by == "api"
    with sqlite_engine.connect() as conn:
        reason = conn.execute(
            sa.select(action_request.c.reason).where(action_request.c.state == "skipped")
        ).scalar_one()
    assert "aryx@mozilla.com" in reason


def test_a_crash_after_the_note_was_posted_does_not_post_it_twice(sqlite_engine, sim) -> None:
    sim.advance(minutes=90)
    with sim.world.lock:
        job = next(
            j for j in sim.world.jobs.values()
            if j.state == "completed" and j.task.runs[j.run_id].state == "failed"
            and j.note is None and j.classification in (1, 6, 8)
        )  # fmt: skip
    writer = TreeherderWriter(Treeherder(sim.root_url, token=SIM_TREEHERDER_TOKEN))
    key = f"treeherder:autoland:{job.job_id}"
    with sqlite_engine.begin() as conn:
        row = enqueue_effect(
            conn, key, CLASSIFY, repository="autoland", revision=job.task.push.revision,
            input={"job_id": job.job_id, "classification": 8, "text": "intermittent"},
            now=sim.now,
        )  # fmt: skip
        writer.send(row)  # the note reached Treeherder; then the process died
        conn.execute(
            sa.update(action_request).where(action_request.c.id == row.id).values(state="sending")
        )
    summary = dispatch_effects(sqlite_engine, {CLASSIFY: writer}, now=sim.now + timedelta(hours=1))
    assert summary.sent == 1
    assert len(job.api_notes) == 1
