"""The simulated world's records: pushes, tasks, runs and Treeherder jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INFRA_EXCEPTION = "exception"  # the run resolves `exception` and Taskcluster retries it
INFRA_NO_SUMMARY = "no-summary"  # the run fails without an errorsummary artifact
# A storm on the run's worker pool (`storms:`): the run fails with an `Automation Error`
# line and an errorsummary whose groups all ended ERROR, without a test_result.
INFRA_STORM = "storm"


@dataclass(frozen=True, slots=True)
class LabelSpec:
    """One label of a push's full task graph: where it runs and which manifests."""

    label: str
    platform: int
    suite: int
    chunk: int
    manifests: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Failure:
    """A test that failed in a run, and why (None: flaky; else the regression's index)."""

    test: str
    regression: int | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run will do, drawn when the run is created."""

    state: str  # completed | failed | exception
    duration: float
    wait: float
    infra: str | None = None
    failures: tuple[Failure, ...] = ()


@dataclass(slots=True)
class Run:
    """One run of a task, with the fields Taskcluster shows once they happened."""

    run_id: int
    reason_created: str
    scheduled: float
    outcome: Outcome
    state: str = "pending"
    started: float | None = None
    resolved: float | None = None
    reason_resolved: str | None = None
    worker_group: str | None = None
    worker_id: str | None = None


@dataclass(slots=True)
class Push:
    """A push to the repository and its decision task."""

    index: int
    revision: str
    pushlog_id: int
    push_id: int
    time: float
    author: str
    decision_task_id: str
    graph: dict[str, LabelSpec]
    scheduled: list[str]
    regressions: list[int]
    label_copies: dict[str, int] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)


@dataclass(slots=True)
class Task:
    """A Taskcluster task: a decision task, a test task or an action task."""

    task_id: str
    kind: str  # decision-task | test | action-callback
    push: Push
    label: str
    created: float
    parent: str
    spec: LabelSpec | None = None
    manifests: tuple[str, ...] = ()
    copy: int = 0
    action: str | None = None  # callback name of the action that created this task
    symbol_suffix: str = ""
    group_suffix: str = ""
    action_info: dict[str, Any] | None = None  # for action tasks: the rendered hook task
    action_tag: str | None = None  # tags.action Gecko's callback gave it (None: untagged)
    test_paths_env: str | None = None  # MOZHARNESS_TEST_PATHS as an action wrote it
    confirm_paths_env: str | None = None  # MOZHARNESS_CONFIRM_PATHS (confirm-failure)
    retries: int = 5
    runs: list[Run] = field(default_factory=list)
    classified: bool = False
    definition_json: str | None = None
    status_json: str | None = None

    @property
    def state(self) -> str:
        return self.runs[-1].state if self.runs else "unscheduled"

    @property
    def retries_left(self) -> int:
        return self.retries - sum(1 for r in self.runs if r.reason_created == "retry")


@dataclass(slots=True, eq=False)
class Job:
    """Treeherder's record of one run: listed from its first Pulse message on (pending),
    moved forward as the later ones arrive, parsed once it completed with logs."""

    job_id: int
    task: Task
    run_id: int
    ingested: float  # when Treeherder first listed the run
    state: str = "pending"  # Treeherder's view: pending, running, completed
    last_modified: float = 0.0
    completed: float | None = None  # when Treeherder learnt that the run resolved
    parsed: float | None = None  # when its logs are parsed (None: no logs, or not yet due)
    parse_failed: bool = False
    classification: int = 1
    note: tuple[str, str, float] | None = None  # (who, text, when) of a JobNote
    # Notes written through the API (who, text, when, classification), oldest first; and
    # who set the classification now shown: person, mozci, treeherder, api, or None.
    api_notes: list[tuple[str, str, float, int]] = field(default_factory=list)
    bugs: list[int] = field(default_factory=list)  # bug-job-map
    classified_by: str | None = None
    # Per error line, once parsed: (times Treeherder saw the line before, new in this push).
    line_history: list[tuple[int, bool]] | None = None
    new_failure: bool = False  # a line was new when parsed (treeherder/etl/artifact.py)
    # Its errorsummary's groups (manifests), and those that failed; empty without one.
    groups: frozenset[str] = frozenset()
    error_groups: frozenset[str] = frozenset()
