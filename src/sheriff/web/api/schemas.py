"""Response and request bodies of the REST API; they are what /openapi.json documents."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

T = TypeVar("T")


class ErrorOut(BaseModel):
    """Every error answer: a message a person can act on."""

    detail: Any


class PageMeta(BaseModel):
    offset: int
    count: int
    next_offset: int | None = Field(None, description="offset of the next page; null: no more")


class Page(BaseModel, Generic[T]):
    meta: PageMeta
    results: list[T]


class PushOut(BaseModel):
    id: int
    revision: str
    pushlog_id: int | None
    author: str | None
    message: str | None = Field(description="the tip revision's commit message")
    push_time: datetime
    decision_task_id: str | None
    jobs: int = Field(description="job rows (runs) on the push")
    failed_jobs: int = Field(description="runs whose result is testfailed, busted or exception")
    verdicts: dict[str, int] = Field(description="triage cases per verdict; open ones: pending")


class JobOut(BaseModel):
    id: int
    push_id: int
    revision: str
    task_id: str
    run_id: int
    label: str
    job_symbol: str
    group_name: str
    group_symbol: str
    platform: str
    os_name: str
    architecture: str
    build_platform: str
    option_collection: str
    tier: int
    job_kind: str
    task_queue_id: str
    state: str
    result: str
    classification_id: int
    action: str | None
    parent_task_id: str | None
    test_type: str | None
    submit_time: datetime
    start_time: datetime | None
    end_time: datetime | None
    verdict: str | None = Field(None, description="the verdict of the case this run belongs to")
    case_id: int | None = None
    manifests: list[str] | None = Field(None, description="present when asked for")
    test_paths: list[str] | None = Field(None, description="present when asked for")


class RunOut(JobOut):
    treeherder_job_id: int | None
    parse_status: str | None
    errorsummary: str | None
    failure_lines: list[str]
    raw_failure_lines: list[str]
    structured_failures: list[Any]
    taskcluster_url: str
    treeherder_url: str


class VerdictOut(BaseModel):
    id: int
    job_id: int
    repository: str
    revision: str
    push_id: int
    label: str
    state: str
    verdict: str
    rule: str | None
    policy: str
    p_regression: float | None
    runs_wanted: int
    retriggers_requested: int
    evidence: Any
    opened_at: datetime
    decided_at: datetime | None
    updated_at: datetime


class JobDetailOut(BaseModel):
    job: JobOut
    taskcluster_url: str
    treeherder_url: str
    runs: list[RunOut]
    case: VerdictOut | None


class SimilarOut(BaseModel):
    job_id: int
    match: Literal["any", "all"]
    pushes: int
    manifests: list[str]
    results: list[JobOut]


class TaskTestPathsOut(BaseModel):
    revision: str
    tasks: dict[str, list[str]] = Field(description="task label → test paths")


class RetriggerIn(BaseModel):
    times: int = Field(1, ge=1, le=20)


class BackfillIn(BaseModel):
    depth: int = Field(5, ge=1, le=20, description="how many earlier pushes to run it on")
    times: int = Field(1, ge=1, le=5)


class ActionRequestOut(BaseModel):
    idempotency_key: str
    strategy: str
    repository: str
    revision: str
    task_id: str | None
    input: Any
    state: str
    reason: str | None
    action_task_id: str | None


class ActionsOut(BaseModel):
    requests: list[ActionRequestOut]


class WindowPushOut(BaseModel):
    push_id: int
    revision: str
    author: str | None
    push_time: datetime
    outcome: str = Field(description="failing, clean or unknown")
    untestable: bool
    runs_requested: int
    culprit: bool


class BackfillRecordOut(BaseModel):
    id: int
    job_id: int
    label: str
    platform: str
    option_collection: str
    tier: int
    manifests: list[str]
    status: str
    actions_triggered: int
    runs_in_progress: int
    runs_successful: int
    runs_failed: int
    runs_requested: int
    iterations: int
    reason: str | None
    created_at: datetime
    triggered_at: datetime | None
    updated_at: datetime
    window: list[WindowPushOut] = Field(description="the suspect range, oldest push first")


class BackfillOut(BaseModel):
    id: int
    repository: str
    revision: str
    push_id: int
    job_id: int
    case_id: int | None
    source: str
    label: str
    strategy: str
    same_manifests: bool
    tests: list[Any]
    failure_lines: list[Any]
    fail_rate: float
    status: str
    culprit_push_id: int | None
    culprit_revision: str | None
    reason: str | None
    opened_at: datetime
    mature_at: datetime
    closed_at: datetime | None
    updated_at: datetime
    runs_requested: int
    records: list[BackfillRecordOut]


class RegressionPushOut(BaseModel):
    id: int
    revision: str
    author: str | None
    message: str | None
    push_time: str | None


class RegressionCaseOut(BaseModel):
    case_id: int
    job_id: int
    task_id: str
    run_id: int
    label: str
    configuration: str = Field(description="<machine platform>/<option collection>")
    verdict: str | None
    revision: str


class RegressionOut(BaseModel):
    id: int
    repository: str
    status: str = Field(description="confirmed, culprit (named by its backfill) or stopped")
    tests: list[str]
    failure_lines: list[str]
    configurations: list[str] = Field(description="<machine platform>/<option collection>")
    labels: list[str]
    first_push: RegressionPushOut | None
    last_push: RegressionPushOut | None
    culprit: RegressionPushOut | None
    stopped_push: RegressionPushOut | None = Field(
        description="the first of the clean pushes after the last failing one"
    )
    backfill_report_id: int | None
    opened_at: str
    updated_at: str
    cases: list[RegressionCaseOut]
