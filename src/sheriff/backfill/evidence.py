"""What the runs on each push of a backfill window say: found by platform + manifests.

With `same_manifests` a run counts on a push when it ran on the original's platform
configuration and its manifest set holds every manifest the failing tests live in (the
backfilled runs, and any scheduled run whose dynamic chunk happened to hold them); without
it, by label, as a label-based backfill is read today.

A search that weighs every run (`flake-aware`) also reads the runs of the same manifests on
the other configurations where the regression's cases failed (`pooled`): the scheduled runs
there are free evidence of where the failure began, and an intermittent regression on four
platforms shows on its first push far more often in four runs than in one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from sheriff.model.actions import BACKFILL_TAG
from sheriff.model.backfill import PushRuns
from sheriff.model.failure_lines import failing_test as test_of
from sheriff.model.failure_lines import with_crash_lines
from sheriff.model.policy import run_lines_known, run_lines_never
from sheriff.store.queries import (
    PlatformConfig,
    by_platform,
    config_columns,
    jobs_running_manifests,
)
from sheriff.store.schema import job, job_type, run_observation


def reproduces(failure_lines: Iterable[str], lines: Sequence[str], tests: Sequence[str]) -> bool:
    """True when a run's failure lines show the regression: one of its normalised lines, or,
    when no line is known, a failure of one of its tests. Only the line: a flaky test that
    regressed with a new line (`TEST-UNEXPECTED-TIMEOUT` where it used to fail an assertion
    now and then) still flakes with its old line on the pushes before the culprit, and
    counting those as reproductions sends the search after its parents."""
    wanted, wanted_tests = set(lines), set(tests)
    if wanted:
        return any(line in wanted for line in failure_lines)
    return any(test_of(line) in wanted_tests for line in failure_lines)


@dataclass
class RunView:
    """One run (job row) in the window and what is known of it."""

    job_id: int
    push_id: int
    state: str
    result: str
    action: str | None
    parse_status: str | None
    failure_lines: list[str] | None
    own: bool = True  # on the record's own configuration (else: pooled from another)

    @property
    def backfilled(self) -> bool:
        return self.action == BACKFILL_TAG

    @property
    def needs_observation(self) -> bool:
        """Finished with test failures that Treeherder has not finished parsing for us."""
        return (
            self.state == "completed"
            and self.result == "testfailed"
            and not run_lines_known(self.parse_status, self.failure_lines)
            and not run_lines_never(self.parse_status, self.failure_lines)
        )


@dataclass
class WindowEvidence:
    """The runs of a record's window, grouped by push."""

    runs: dict[int, list[RunView]] = field(default_factory=dict)

    def push_runs(
        self, push_id: int, lines: Sequence[str], tests: Sequence[str], *, pooled: bool = False
    ) -> PushRuns:
        """Reproduced and clean runs on the push: the record's own configuration's, and with
        `pooled` those of the other configurations read too."""
        reproduced = clean = 0
        for run in self.runs.get(push_id, []):
            if not (run.own or pooled):
                continue
            verdict = classify(run, lines, tests)
            reproduced += verdict == "reproduced"
            clean += verdict == "clean"
        return PushRuns(reproduced=reproduced, clean=clean)

    def waiting(self, push_id: int) -> int:
        """Runs on the push still running or waiting for their log to be parsed."""
        return sum(
            1
            for r in self.runs.get(push_id, [])
            if r.own and (r.state != "completed" or r.needs_observation)
        )

    def backfilled(self, push_id: int) -> int:
        return sum(1 for r in self.runs.get(push_id, []) if r.own and r.backfilled)

    def unobserved(self) -> list[int]:
        return sorted(r.job_id for rs in self.runs.values() for r in rs if r.needs_observation)


def classify(run: RunView, lines: Sequence[str], tests: Sequence[str]) -> str:
    """reproduced | clean | running | unknown (infra, unparsed) for one run."""
    if run.state != "completed":
        return "running"
    if run.result == "success":
        return "clean"
    if run.result != "testfailed":
        return "unknown"  # exception, retry, cancelled: says nothing about the regression
    if not lines and not tests:
        return "reproduced"  # a manual request without known failure lines: any failure
    if not run_lines_known(run.parse_status, run.failure_lines) or not run.failure_lines:
        return "unknown"  # not parsed, or failed without a failure line: infrastructure
    return "reproduced" if reproduces(run.failure_lines, lines, tests) else "clean"


_RUN_COLUMNS = (
    job.c.id,
    job.c.push_id,
    job.c.state,
    job.c.result,
    job.c.action,
    run_observation.c.parse_status,
    run_observation.c.failure_lines,
    run_observation.c.raw_failure_lines,
)


def _run_view(row: Any, own: bool = True) -> RunView:
    """A row of `_RUN_COLUMNS` as the search reads it (crash lines from the raw lines)."""
    return RunView(
        job_id=row.id,
        push_id=row.push_id,
        state=row.state,
        result=row.result,
        action=row.action,
        parse_status=row.parse_status,
        failure_lines=(
            with_crash_lines(row.failure_lines, row.raw_failure_lines)
            if row.failure_lines is not None
            else None
        ),
        own=own,
    )


def configurations_showing(
    conn: sa.Connection, push_ids: Sequence[int], lines: Sequence[str], tests: Sequence[str]
) -> list[PlatformConfig]:
    """The configurations with a run on `push_ids` that showed the searched failure (one
    the search would count as `reproduced`): a regression's cases called intermittent on
    other platforms (or never filed into its report) still tell on which pushes it failed."""
    if not (lines or tests) or not push_ids:
        return []
    stmt = (
        sa.select(*config_columns(), *_RUN_COLUMNS)
        .select_from(job)
        .join(run_observation, run_observation.c.job_id == job.c.id)
        .where(job.c.push_id.in_(list(push_ids)), job.c.result == "testfailed")
    )
    found = {
        PlatformConfig(*row[:4])
        for row in conn.execute(stmt)
        if classify(_run_view(row), lines, tests) == "reproduced"
    }
    return by_platform(found)


def window_evidence(
    conn: sa.Connection,
    context: Mapping[str, Any],
    push_ids: Sequence[int],
    *,
    exclude_job_id: int | None = None,
    others: Sequence[PlatformConfig] = (),
) -> WindowEvidence:
    """The runs on `push_ids` that count for a record with this `context`, and with
    `others` the runs of the same manifests on those configurations (`own` false)."""
    config = PlatformConfig(**context["config"])
    other_ids: set[int] = set()
    if context["same_manifests"] and context.get("manifests"):
        job_ids = jobs_running_manifests(conn, config, context["manifests"], push_ids, match="all")
        for other in others:
            if other != config:
                found = jobs_running_manifests(
                    conn, other, context["manifests"], push_ids, match="all"
                )
                other_ids.update(found)
        job_ids = [*job_ids, *sorted(other_ids)]
        where = [job.c.id.in_(job_ids)] if job_ids else [sa.false()]
    else:
        where = [
            job.c.push_id.in_(list(push_ids)),
            job_type.c.name == context["label"],
            job.c.repository_id == config.repository_id,
            job.c.build_platform_id == config.build_platform_id,
            job.c.machine_platform_id == config.machine_platform_id,
            job.c.option_collection == config.option_collection,
        ]
    if exclude_job_id is not None:
        where.append(job.c.id != exclude_job_id)
    stmt = (
        sa.select(*_RUN_COLUMNS)
        .select_from(job)
        .join(job_type, job_type.c.id == job.c.job_type_id)
        .outerjoin(run_observation, run_observation.c.job_id == job.c.id)
        .where(*where)
        .order_by(job.c.push_id, job.c.id)
    )
    evidence = WindowEvidence()
    for row in conn.execute(stmt):
        view = _run_view(row, own=row.id not in other_ids)
        evidence.runs.setdefault(row.push_id, []).append(view)
    return evidence
