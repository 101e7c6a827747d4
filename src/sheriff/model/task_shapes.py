"""The Taskcluster shapes sheriff reads, checked where they come in: pure, no I/O.

A task definition, a task status (its runs) and a queue Pulse message are checked
against pydantic models of the fields sheriff uses, with the types and limits of
Taskcluster's and Treeherder's own schemas (the queue's task and status schemas,
Treeherder's `task-treeherder-config.yml`): a run id is an integer from 0 to 1000, a run
state one of Taskcluster's five, a time an RFC 3339 date-time, a tier 1, 2 or 3, a
symbol at most 25 characters, … Fields sheriff does not read are not looked at, which
keeps the check cheap on the bulk path (benchmarks/ingest.py prints its cost). Types are
strict: `"0"` is not a run id and `true` is not a tier.

`check_task`, `check_runs` and `check_pulse_message` raise `TaskShapeError` with one line
naming the first bad field, e.g. `extra.treeherder.tier: Input should be a valid integer`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

# A Taskcluster slugid: 22 URL-safe base64 characters of 16 bytes (the last character
# carries only the 16th byte's last bits). Looser than the queue's v4 pattern on purpose:
# ids made before v4 slugids are task ids too.
TASK_ID_PATTERN = r"^[A-Za-z0-9_-]{21}[AQgw]$"
RUN_STATES = ("pending", "running", "completed", "failed", "exception")
MAX_RUN_ID = 1000  # the queue's schema: runId is 0 … 1000
# Treeherder's option collection column holds this many characters.
MAX_OPTION_COLLECTION = 32

_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$", re.I)


class TaskShapeError(ValueError):
    """A task definition, status or message is malformed; the message says what."""


def _timestamp(value: Any) -> datetime:
    """An RFC 3339 date-time with its offset (Taskcluster's `2019-06-26T19:13:51.402Z`)."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError("not an RFC 3339 date-time such as 2019-06-26T19:13:51.402Z")
    # Python reads at most 6 fractional digits; Taskcluster writes 3.
    text = re.sub(r"(\.\d{6})\d+", r"\1", value.upper().replace("Z", "+00:00"))
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"not a valid date-time: {exc}") from exc


Timestamp = Annotated[datetime, BeforeValidator(_timestamp)]
TaskId = Annotated[str, Field(pattern=TASK_ID_PATTERN)]
# Treeherder's identifiers: platforms, architectures, labels.
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$", min_length=1)]
QueuePart = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,38}$")]
QueueId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,38}/[A-Za-z0-9_-]{1,38}$")]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class RunShape(_Shape):
    """An entry of a task status's `runs`."""

    runId: int | None = Field(None, ge=0, le=MAX_RUN_ID)
    state: Literal[RUN_STATES]  # type: ignore[valid-type]
    reasonCreated: str | None = Field(None, max_length=64)
    reasonResolved: str | None = Field(None, max_length=64)
    workerId: str | None = Field(None, max_length=128)
    scheduled: Timestamp | None = None
    started: Timestamp | None = None
    resolved: Timestamp | None = None


class StatusShape(_Shape):
    """A task status: the task's id and its runs."""

    taskId: TaskId
    state: Literal[(*RUN_STATES, "unscheduled")] | None = None  # type: ignore[valid-type]
    runs: list[RunShape] = Field(default_factory=list, max_length=MAX_RUN_ID + 1)


class _Machine(_Shape):
    platform: Annotated[Identifier, Field(max_length=50)] | None = None
    os: Annotated[Identifier, Field(max_length=25)] | None = None
    architecture: Annotated[Identifier, Field(max_length=25)] | None = None


class _TreeherderConfig(_Shape):
    """`extra.treeherder`, as Treeherder's task-treeherder-config schema has it."""

    symbol: Annotated[str, Field(max_length=25)]
    tier: int = Field(1, ge=1, le=3)
    jobKind: Literal["build", "test", "other"] = "other"
    machine: _Machine | None = None
    groupName: str | None = Field(None, min_length=1, max_length=100)
    groupSymbol: str | None = Field(None, min_length=1, max_length=25)
    labels: list[Annotated[Identifier, Field(max_length=50)]] | None = None
    collection: dict[Annotated[Identifier, Field(max_length=50)], Any] | None = None
    reason: str | None = Field(None, min_length=1, max_length=125)
    productName: str | None = Field(None, min_length=1, max_length=125)


class _Extra(_Shape):
    treeherder: _TreeherderConfig | None = None
    parent: TaskId | None = None


class _Metadata(_Shape):
    name: str = Field(min_length=1, max_length=255)
    owner: str | None = Field(None, max_length=255)


class _Tags(_Shape):
    retrigger: str | None = Field(None, max_length=16)
    action: str | None = Field(None, max_length=32)
    test_type: str | None = Field(None, alias="test-type", max_length=32)


class _Env(_Shape):
    MOZHARNESS_TEST_PATHS: str | dict[str, list[str]] | None = None


class _Payload(_Shape):
    env: _Env | None = None


class TaskShape(_Shape):
    """A task definition: the fields a job is derived from."""

    created: Timestamp
    taskGroupId: TaskId | None = None
    taskQueueId: QueueId | None = None
    provisionerId: QueuePart | None = None
    workerType: QueuePart | None = None
    routes: list[Annotated[str, Field(max_length=249)]] = Field(default_factory=list)
    metadata: _Metadata
    tags: _Tags | None = None
    extra: _Extra | None = None
    payload: _Payload | None = None


class _PulsePayload(_Shape):
    runId: int = Field(ge=0, le=MAX_RUN_ID)
    status: StatusShape


class PulseShape(_Shape):
    """A message of the queue's `exchange/taskcluster-queue/v1/task-*` exchanges."""

    exchange: str
    payload: _PulsePayload


# What the store keeps of a manifest path (the `manifest.path` and `test_path.path` columns).
MAX_MANIFEST_PATH = 1024
MAX_TEST_PATH = 2048

_RUNS = TypeAdapter(list[RunShape], config=ConfigDict(strict=True))
_TEST_PATHS = TypeAdapter(
    dict[str, list[Annotated[str, Field(min_length=1, max_length=MAX_MANIFEST_PATH)]]],
    config=ConfigDict(strict=True),
)


# pydantic's messages name its own classes for these; a person reads "an object".
_OBJECT_ERRORS = frozenset({"model_type", "model_attributes_type", "dict_type"})


def _one_line(error: ValidationError, prefix: str = "") -> str:
    """The first error as `field.path: what is wrong`."""
    first = error.errors(include_url=False)[0]
    parts = [*(prefix.split(".") if prefix else ()), *(str(p) for p in first["loc"])]
    if first["type"] in _OBJECT_ERRORS:
        message = "should be an object"
    elif first["type"] == "value_error":
        message = str(first.get("ctx", {}).get("error") or first["msg"])
    else:
        message = first["msg"].removeprefix("Input ")
    where = ".".join(parts)
    return f"{where}: {message}" if where else message


_TASK_ID = re.compile(TASK_ID_PATTERN)


def check_task_id(value: Any, what: str = "taskId") -> str:
    """A task id (a slugid), or `TaskShapeError` naming `what`."""
    if not isinstance(value, str) or not _TASK_ID.match(value):
        shown = repr(value)[:40]
        raise TaskShapeError(f"{what}: {shown} is not a task id (a slugid of 22 characters)")
    return value


def check_task(task: Any) -> TaskShape:
    """The task definition, checked (see the module docstring)."""
    try:
        return TaskShape.model_validate(task)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc)) from None


def check_runs(runs: Any) -> list[RunShape]:
    """A status's `runs`, checked; each run's `runId`, when given, is its place in the list."""
    if runs is None:
        return []
    try:
        checked = _RUNS.validate_python(runs)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc, "runs")) from None
    for index, run in enumerate(checked):
        if run.runId is not None and run.runId != index:
            raise TaskShapeError(f"runs.{index}.runId: is {run.runId}, not its place {index}")
    return checked


def check_test_paths(by_suite: Any) -> dict[str, list[str]]:
    """`MOZHARNESS_TEST_PATHS` decoded: an object of suites to lists of manifest paths."""
    try:
        return _TEST_PATHS.validate_python(by_suite)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc, "MOZHARNESS_TEST_PATHS")) from None


def check_status(status: Any) -> StatusShape:
    """A task status (`taskId`, `state`, `runs`), checked."""
    try:
        checked = StatusShape.model_validate(status)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc)) from None
    check_runs(status.get("runs"))  # the runs' own places
    return checked


def check_pulse_message(message: Any, exchanges: Sequence[str] | Mapping[str, Any]) -> PulseShape:
    """A queue Pulse message on one of `exchanges`, whose `runId` names one of its runs."""
    try:
        checked = PulseShape.model_validate(message)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc)) from None
    if checked.exchange not in exchanges:
        raise TaskShapeError(f"exchange: {checked.exchange[:100]!r} is not a queue task exchange")
    check_runs(message["payload"]["status"].get("runs"))
    run_id, runs = checked.payload.runId, checked.payload.status.runs
    if run_id >= len(runs):
        raise TaskShapeError(f"payload.runId: {run_id}, but the status lists {len(runs)} runs")
    return checked
