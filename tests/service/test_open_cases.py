"""`sheriff.open_cases`: which pushes a pass asks Treeherder about, within and after one
period of CI time (no broker, no network: the task's body with a stand-in runtime)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sheriff.service import tasks
from sheriff.triage.engine import PassSummary

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class _Triage:
    waiting: dict[str, set[int]] = field(default_factory=dict)  # revision → runs due
    passed: list[list[str]] = field(default_factory=list)

    def due_revisions(self) -> list[str]:
        self.last_due_runs = frozenset(r for runs in self.waiting.values() for r in runs)
        self.last_due_by_revision = {rev: frozenset(runs) for rev, runs in self.waiting.items()}
        return sorted(self.waiting)

    def run_pass(self, *, revisions: list[str], **_: Any) -> PassSummary:
        self.passed.append(list(revisions))
        return PassSummary()


@dataclass
class _Settings:
    open_cases_every_seconds: float = 60
    watched_repositories: tuple[str, ...] = ("autoland",)


@dataclass
class _Runtime:
    triage_: _Triage
    clock: datetime = T0
    settings: _Settings = field(default_factory=_Settings)

    def triage(self, _repo: str) -> _Triage:
        return self.triage_

    def now(self) -> datetime:
        return self.clock


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> _Runtime:
    made = _Runtime(_Triage())
    monkeypatch.setattr(tasks, "_runtime", made)
    monkeypatch.setattr(tasks, "_OPEN_CASES_PASSED", {})
    return made


def test_within_a_period_only_a_push_with_a_run_not_waited_on_yet_is_passed(
    runtime: _Runtime,
) -> None:
    triage = runtime.triage_
    triage.waiting = {"a": {1}, "b": {2}}
    tasks.open_cases.run()
    assert triage.passed == [["a", "b"]]
    # The clock held (the service catching up): a new run on b; a has nothing new.
    triage.waiting = {"a": {1}, "b": {2, 3}}
    tasks.open_cases.run()
    assert triage.passed[-1] == ["b"]
    assert tasks.open_cases.run() == {
        "autoland": {"skipped": "passed within the period, in CI time"}
    }
    # A period of CI time later every push waiting on Treeherder is asked about again.
    runtime.clock = T0 + timedelta(seconds=60)
    tasks.open_cases.run()
    assert triage.passed[-1] == ["a", "b"]
    assert len(triage.passed) == 3
