"""The history policy in the triage pass: facts from the store, P(regression) stored, waves."""

from __future__ import annotations

import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.store.schema import triage_case
from sheriff.triage.simrun import measure
from tests.triage.conftest import drive, make_triage


def test_history_policy_decides_every_eligible_case_with_its_evidence(engine, sim) -> None:
    triage = make_triage(engine, sim, policy="history")
    drive(triage, sim)
    metrics = measure(
        engine,
        sim.truth(),
        sim.stats(),
        sim.world.action_counts(),
        policy=triage.policy.name,
        virtual_hours=0,
    )
    assert metrics["policy"] == "history"
    assert metrics["verdicts"]["pending"] == 0 and metrics["excess_retriggers"] == 0
    assert metrics["calibration"]["scored"] == (
        metrics["verdicts"]["regression"] + metrics["verdicts"]["intermittent"]
    )
    with engine.connect() as conn:
        decided = conn.execute(
            sa.select(
                triage_case.c.verdict, triage_case.c.p_regression, triage_case.c.evidence
            ).where(triage_case.c.verdict.in_(["regression", "intermittent"]))
        ).all()
        requests = request_log.requests(conn)
    assert decided, "the tiny scenario has eligible cases"
    for verdict, p, evidence in decided:
        assert evidence["policy"] == "history" and evidence["p_regression"] == p
        history = evidence["history"]
        assert set(history) >= {"k", "n", "features", "facts", "earlier_runs", "priors"}
        assert history["n"] <= 5
        if "seed rule" not in evidence["reason"] and evidence["lines"]:
            # decided by a threshold: the stored probability says which side
            assert (p >= 0.98) == (verdict == "regression")
    # priors are fitted as cases get decided: later cases see earlier ones
    assert max(e["history"]["priors"]["cases"] for _, _, e in decided) > 0
    # waves: retriggers go out a few at a time, not the seed rule's five at once
    times = [req["times"] for r in requests if r.strategy == "retrigger-multiple"
             for req in r.input["requests"]]  # fmt: skip
    assert times and min(times) < 5 and sum(times) < 5 * len(decided)


def test_the_open_bug_fact_is_not_fooled_by_what_the_bug_search_also_finds(engine, sim) -> None:
    """Treeherder's bug search finds meta, permanent-failure and regression bugs and
    internal issues for a regressed test too: none of them is an open intermittent bug."""
    from sheriff.store.schema import job

    triage = make_triage(engine, sim, policy="history")
    drive(triage, sim)
    truth = sim.truth()["cases"]
    with engine.connect() as conn:
        decided = conn.execute(
            sa.select(job.c.task_id, triage_case.c.evidence)
            .join(job, job.c.id == triage_case.c.job_id)
            .where(triage_case.c.verdict.in_(["regression", "intermittent"]))
        ).all()
    known_bug = sim.world.catalog.known_bug
    seen = set()
    for task_id, evidence in decided:
        case = truth[task_id]
        features = evidence["history"]["features"]
        if not features:
            continue  # no failure line: nothing to look up
        failing = [f["test"] for f in case["failures"]]
        expected = case["truth"] != "regression" and all(t in known_bug for t in failing)
        assert features["open_bug"] == expected, (case, evidence["history"]["facts"])
        seen.add(case["truth"])
    assert seen == {"regression", "intermittent"}
