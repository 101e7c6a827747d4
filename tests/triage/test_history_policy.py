"""The history policy in the triage pass: facts from the store, P(regression) stored, waves."""

from __future__ import annotations

import sqlalchemy as sa
import yaml

from sheriff.actions import log as request_log
from sheriff.model.failure_lines import failing_test
from sheriff.sim.scenario import parse_scenario
from sheriff.sim.server import SimServer
from sheriff.store.schema import triage_case
from sheriff.triage.simrun import measure
from tests.triage.conftest import TINY, drive, make_triage


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
        # the cap's retriggers, or up to runs_most's (never fewer than the cap's, as the
        # triage engine takes it) when the cap would have called the case intermittent at
        # P >= extend_from
        most = max(triage.settings.runs_most, triage.settings.runs_wanted)
        assert history["n"] <= most - 1
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
        # The features stored are those of the line that spoke for the case (each line is
        # judged on its own bug), or of every line when none was judged alone.
        line = evidence["history"]["facts"].get("line")
        failing = [failing_test(line)] if line else [f["test"] for f in case["failures"]]
        expected = case["truth"] != "regression" and all(t in known_bug for t in failing)
        assert features["open_bug"] == expected, (case, evidence["history"]["facts"])
        seen.add(case["truth"])
    assert seen == {"regression", "intermittent"}


def test_retriggers_a_storm_failed_are_void_not_clean_runs(engine) -> None:
    """A storm on the Linux pool from the regression's retriggers on: they fail without
    a failure line (no errorsummary), and the case counts none of them as a clean run."""
    data = yaml.safe_load(TINY.read_text())
    data["infra_failure_rate"] = 0.0
    storm = {"start_minutes": 40, "minutes": 600, "task_queue_id": "gecko-t/t-linux-large-gcp"}
    data["storms"] = [{**storm, "failure_rate": 1.0, "errorsummary": False}]
    with SimServer(parse_scenario(data), port=0) as sim:
        triage = make_triage(engine, sim, policy="history")
        drive(triage, sim)
    with engine.connect() as conn:
        decided = [
            evidence
            for (evidence,) in conn.execute(
                sa.select(triage_case.c.evidence).where(
                    triage_case.c.verdict.in_(["regression", "intermittent"])
                )
            )
        ]
    stormed = [e for e in decided if e["void"]]
    assert stormed, "the storm failed some case's retriggers"
    for evidence in decided:
        # n counts the retriggers that are evidence: never a void one
        assert evidence["history"]["n"] == evidence["runs_counted"] - 1
        assert evidence["runs_counted"] + len(evidence["void"]) <= evidence["runs_existing"]
    assert all(e["history"]["n"] == 0 for e in stormed)
