"""Treeherder's classification changes while a case is open: sheriff reads it again."""

from __future__ import annotations

import sqlalchemy as sa

from sheriff.store.schema import job, run_observation, triage_case
from tests.triage.conftest import make_triage, one_pass


def _open_cases(engine) -> list:
    with engine.connect() as conn:
        return conn.execute(
            sa.select(triage_case.c.id, triage_case.c.state, job.c.task_id, job.c.run_id)
            .join(job, job.c.id == triage_case.c.job_id)
            .where(triage_case.c.state.in_(("planned", "waiting")))
            .order_by(triage_case.c.id)
        ).all()


def _until_cases_wait(triage, sim, count: int) -> list:
    for _ in range(40):
        sim.advance(minutes=5)
        one_pass(triage, sim)
        found = _open_cases(triage.engine)
        if len(found) >= count:
            return found
    raise AssertionError("no case got as far as its retriggers")


def test_a_persons_later_classification_ends_the_case_and_treeherders_do_not(engine, sim) -> None:
    triage = make_triage(engine, sim, policy="seed")
    person, automatic = _until_cases_wait(triage, sim, 2)[:2]
    for case, value in ((person, 4), (automatic, 8)):
        th_job = sim.world.th.by_run[(case.task_id, case.run_id)]
        th_job.classification = value  # a sheriff's click; Treeherder's intermittents.py
    one_pass(triage, sim)
    with engine.connect() as conn:
        rows = {
            r.id: r
            for r in conn.execute(
                sa.select(
                    triage_case.c.id,
                    triage_case.c.state,
                    triage_case.c.verdict,
                    triage_case.c.rule,
                    run_observation.c.classification_id,
                )
                .join(run_observation, run_observation.c.job_id == triage_case.c.job_id)
                .where(triage_case.c.id.in_((person.id, automatic.id)))
            )
        }
    assert rows[person.id].classification_id == 4
    assert (rows[person.id].state, rows[person.id].verdict) == ("decided", "classified")
    assert "classified by a person" in rows[person.id].rule
    assert "4, intermittent" in rows[person.id].rule
    # 8 is Treeherder's own marking, not a decision: the case goes on.
    assert rows[automatic.id].classification_id == 8
    assert rows[automatic.id].verdict != "classified"
    # The person's case: sheriff's runs that were still pending or running are cancelled.
    original = sim.world.tasks[person.task_id]
    retriggers = [
        t
        for t in sim.world.groups[original.push.decision_task_id]
        if t.kind == "test" and t.action and t.label == original.label
    ]
    assert all(t.state not in ("pending", "running") for t in retriggers)
