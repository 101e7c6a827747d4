"""Budgets on a world that exhausts them: caps obeyed, the cases say so and still decide."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from sheriff.actions.usage import backfill_runs, retrigger_runs
from sheriff.store.schema import backfill_record, push, triage_case
from tests.triage.conftest import drive, make_triage, one_pass


def _cases(engine) -> list:
    with engine.connect() as conn:
        return conn.execute(
            sa.select(triage_case.c.state, triage_case.c.rule, triage_case.c.evidence)
        ).all()


def test_a_per_push_budget_caps_each_push_and_cases_decide_on_what_they_have(engine, sim):
    triage = make_triage(engine, sim, retriggers_per_push=3)
    drive(triage, sim)
    with engine.connect() as conn:
        revisions = list(conn.execute(sa.select(push.c.revision)).scalars())
        used = {r: retrigger_runs(conn, "autoland", revision=r) for r in revisions}
    assert max(used.values()) == 3  # the seed rule wants 5 per case: the cap binds
    cases = _cases(engine)
    assert all(c.state == "decided" for c in cases)
    limited = [c for c in cases if "retrigger budget of the push spent" in (c.rule or "")]
    assert limited, "no case says the budget ran out"
    assert all(c.evidence["budget"]["cap"] == 3 for c in limited)
    # Decided at the runs it could have: fewer than the rule's six.
    assert all(c.evidence["runs_wanted"] < 6 for c in limited)


def test_a_daily_repository_budget_caps_the_day(engine, sim):
    triage = make_triage(engine, sim, retriggers_per_repository_per_day=4)
    drive(triage, sim)
    with engine.connect() as conn:
        assert retrigger_runs(conn, "autoland", since=sim.now - timedelta(days=1)) == 4
    cases = _cases(engine)
    assert all(c.state == "decided" for c in cases)
    assert any("autoland in 24 hours" in (c.rule or "") for c in cases)


def test_without_a_budget_nothing_is_held_back(engine, sim):
    triage = make_triage(engine, sim)
    drive(triage, sim)
    assert not any("budget" in (c.rule or "") for c in _cases(engine))


def test_a_spent_backfill_budget_holds_the_record_and_says_why(engine, sim):
    triage = make_triage(engine, sim, backfill="linear", backfill_runs_per_repository_per_day=0)
    for _ in range(30):  # five virtual hours: the regression is decided, its record matures
        sim.advance(minutes=10)
        one_pass(triage, sim)
    with engine.connect() as conn:
        reasons = list(conn.execute(sa.select(backfill_record.c.reason)).scalars())
        asked = backfill_runs(conn, "autoland", since=sim.now - timedelta(days=1))
    held = [r for r in reasons if "backfill budget of autoland spent" in (r or "")]
    assert held, reasons  # the records that wanted runs wait, saying why
    assert asked == 0
    # Without the budget the same world asks for backfilled runs.
