"""When Treeherder cannot help (its parse failed, it has not parsed a log long after the
run ended, or it does not answer), sheriff reads the run's live_backing.log itself, and
reaches the verdicts it reaches with Treeherder's parse."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from sheriff.ci.treeherder import TreeherderUnavailable
from sheriff.model.policy import RAW_LOG
from sheriff.sim.scenario import parse_scenario
from sheriff.sim.server import SimServer
from sheriff.store import db
from sheriff.store.schema import job, run_observation, triage_case
from tests.triage.conftest import TINY, drive, make_triage
from tests.triage.test_corrupt_artifacts import _verdicts


def _tiny(**treeherder: Any):
    data = yaml.safe_load(TINY.read_text())
    data["treeherder"].update(treeherder)
    # No person classifies: reading raw logs after a wait decides later than with
    # Treeherder's parse, and a person classifying meanwhile would be a different verdict
    # for a reason that has nothing to do with the lines read.
    data["classified_fraction"] = 0.0
    return parse_scenario(data)


def _clean_verdicts(tmp_path: Path) -> dict:
    engine = db.open_database(f"sqlite:///{tmp_path / 'clean.db'}")
    with SimServer(_tiny(), port=0) as sim:
        drive(make_triage(engine, sim), sim)
    verdicts = _verdicts(engine)
    engine.dispose()
    return verdicts


def _original_observations(engine) -> list[Any]:
    with engine.connect() as conn:
        return conn.execute(
            sa.select(run_observation, job.c.result)
            .join(triage_case, triage_case.c.job_id == run_observation.c.job_id)
            .join(job, job.c.id == run_observation.c.job_id)
            # The cases judged on their failure lines (not those decided before: tier,
            # a person's classification, infrastructure).
            .where(triage_case.c.verdict.in_(["regression", "intermittent"]))
        ).all()


def _assert_read_from_raw_logs(engine) -> None:
    rows = _original_observations(engine)
    assert rows
    assert Counter(r.parse_status for r in rows) == {RAW_LOG: len(rows)}
    assert any(r.failure_lines for r in rows)
    for row in rows:
        assert all(
            line.startswith(("TEST-UNEXPECTED-", "PROCESS-CRASH")) for line in row.raw_failure_lines
        )


def test_logs_treeherder_could_not_parse_are_read_by_sheriff(engine, tmp_path: Path) -> None:
    clean = _clean_verdicts(tmp_path)
    with SimServer(_tiny(parse_failure_rate=1.0), port=0) as sim:
        drive(make_triage(engine, sim), sim)
    _assert_read_from_raw_logs(engine)
    assert "regression" in clean.values()
    assert _verdicts(engine) == clean


def test_logs_treeherder_has_not_parsed_after_the_wait_are_read_by_sheriff(
    engine, tmp_path: Path
) -> None:
    clean = _clean_verdicts(tmp_path)
    # Treeherder parses each log ten hours late; sheriff has decided long before.
    with SimServer(_tiny(parse_delay_minutes=[600, 600]), port=0) as sim:
        triage = make_triage(engine, sim)
        assert triage.observer.raw_log_after.total_seconds() == 30 * 60  # the default
        drive(triage, sim, limit_hours=14)
    _assert_read_from_raw_logs(engine)
    assert _verdicts(engine) == clean


class TreeherderWithoutLogs:
    """Treeherder whose job lists answer (so sheriff learns each job and its
    classification: SPEC §3 step 1 needs them) while its log endpoints time out."""

    REFUSED = ("log_urls", "bug_suggestions")

    def __init__(self, treeherder: Any) -> None:
        self._treeherder = treeherder
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        if name not in self.REFUSED:
            return getattr(self._treeherder, name)

        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            self.refused += 1
            raise TreeherderUnavailable(f"Treeherder {name}: no answer (ReadTimeout)")

        return refuse


def test_runs_are_judged_on_their_raw_logs_while_treeherders_logs_do_not_answer(
    engine, tmp_path: Path
) -> None:
    clean = _clean_verdicts(tmp_path)
    with SimServer(_tiny(), port=0) as sim:
        triage = make_triage(engine, sim)
        down = TreeherderWithoutLogs(triage.treeherder)
        triage.treeherder = down  # type: ignore[assignment]
        triage.observer.treeherder = down  # type: ignore[assignment]
        drive(triage, sim)
    assert down.refused
    _assert_read_from_raw_logs(engine)
    assert _verdicts(engine) == clean
