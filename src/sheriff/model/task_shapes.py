"""The Taskcluster shapes sheriff reads, checked where they come in: pure, no I/O.

A task definition, a task status (its runs), a queue Pulse message and the decision
task's manifest artifacts are checked
against pydantic schemas of the fields sheriff uses, with the types and limits of
Taskcluster's and Treeherder's own schemas (the queue's task and status schemas,
Treeherder's `task-treeherder-config.yml`): a run id is an integer from 0 to 1000, a run
state one of Taskcluster's five, a time an RFC 3339 date-time, a tier 1, 2 or 3, a
symbol at most 25 characters, … Types are strict: `"0"` is not a run id and `true` is
not a tier.

The shapes are TypedDicts: a check returns a new dict holding only the fields sheriff
reads, its times turned into aware UTC datetimes. Fields sheriff does not read are never
looked at, and no model objects are built, which keeps the check cheap on the bulk path
(benchmarks/ingest.py prints its cost). Every check raises `TaskShapeError` with one line
naming the first bad field, e.g. `extra.treeherder.tier: should be a valid integer`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Required

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

# pydantic reads TypedDicts from typing_extensions before Python 3.12.
from typing_extensions import TypedDict

# A Taskcluster slugid: 22 URL-safe base64 characters of 16 bytes (the last character
# carries only the 16th byte's last bits). Looser than the queue's v4 pattern on purpose:
# ids made before v4 slugids are task ids too.
TASK_ID_PATTERN = r"^[A-Za-z0-9_-]{21}[AQgw]$"
# RFC 3339, as Taskcluster writes it: 2019-06-26T19:13:51.402Z.
TIMESTAMP_PATTERN = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$"
RUN_STATES = ("pending", "running", "completed", "failed", "exception")
TASK_STATES = ("unscheduled", *RUN_STATES)
MAX_RUN_ID = 1000  # the queue's schema: runId is 0 … 1000
# What the store keeps: the option collection column, manifest and test path columns.
MAX_OPTION_COLLECTION = 32
MAX_MANIFEST_PATH = 1024
MAX_TEST_PATH = 2048

_STRICT = ConfigDict(strict=True, extra="ignore")


class TaskShapeError(ValueError):
    """A task definition, status or message is malformed; the message says what."""


TaskId = Annotated[str, Field(pattern=TASK_ID_PATTERN)]
Timestamp = Annotated[str, Field(pattern=TIMESTAMP_PATTERN)]  # a datetime once checked
# Treeherder's identifiers: platforms, architectures, option labels.
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$", min_length=1)]
QueuePart = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,38}$")]
QueueId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,38}/[A-Za-z0-9_-]{1,38}$")]


# Strings of at most so many characters (the formats' limits, or the store's), without
# NUL: PostgreSQL's text types cannot hold it.
_NO_NUL = r"^[^\x00]*$"
Text16 = Annotated[str, Field(max_length=16, pattern=_NO_NUL)]
Text32 = Annotated[str, Field(max_length=32, pattern=_NO_NUL)]
Text64 = Annotated[str, Field(max_length=64, pattern=_NO_NUL)]
Text128 = Annotated[str, Field(max_length=128, pattern=_NO_NUL)]
Text200 = Annotated[str, Field(max_length=200, pattern=_NO_NUL)]
Text249 = Annotated[str, Field(max_length=249, pattern=_NO_NUL)]
Text255 = Annotated[str, Field(max_length=255, pattern=_NO_NUL)]
Symbol = Annotated[str, Field(max_length=25, pattern=_NO_NUL)]
NonEmpty25 = Annotated[str, Field(min_length=1, max_length=25, pattern=_NO_NUL)]
NonEmpty100 = Annotated[str, Field(min_length=1, max_length=100, pattern=_NO_NUL)]
NonEmpty125 = Annotated[str, Field(min_length=1, max_length=125, pattern=_NO_NUL)]
NonEmpty255 = Annotated[str, Field(min_length=1, max_length=255, pattern=_NO_NUL)]
ManifestPath = Annotated[str, Field(min_length=1, max_length=MAX_MANIFEST_PATH, pattern=_NO_NUL)]
TestPath = Annotated[str, Field(min_length=1, max_length=MAX_TEST_PATH, pattern=_NO_NUL)]


class RunShape(TypedDict, total=False):
    """An entry of a task status's `runs`."""

    __pydantic_config__ = _STRICT  # type: ignore[misc]
    runId: Annotated[int, Field(ge=0, le=MAX_RUN_ID)]
    state: Required[Literal[RUN_STATES]]  # type: ignore[valid-type]
    reasonCreated: Text64
    reasonResolved: Text64
    workerId: Text128
    started: Timestamp
    resolved: Timestamp


class StatusShape(TypedDict, total=False):
    """A task status: the task's id, its state and its runs."""

    __pydantic_config__ = _STRICT  # type: ignore[misc]
    taskId: Required[TaskId]
    state: Literal[TASK_STATES]  # type: ignore[valid-type]
    runs: Annotated[list[RunShape], Field(max_length=MAX_RUN_ID + 1)]


class _Machine(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    platform: Annotated[Identifier, Field(max_length=50)]
    os: Annotated[Identifier, Field(max_length=25)]
    architecture: Annotated[Identifier, Field(max_length=25)]


class TreeherderShape(TypedDict, total=False):
    """`extra.treeherder`, as Treeherder's task-treeherder-config schema has it."""

    __pydantic_config__ = _STRICT  # type: ignore[misc]
    symbol: Required[Symbol]
    tier: Annotated[int, Field(ge=1, le=3)]
    jobKind: Literal["build", "test", "other"]
    machine: _Machine
    groupName: NonEmpty100
    groupSymbol: NonEmpty25
    labels: list[Annotated[Identifier, Field(max_length=50)]]
    collection: dict[Annotated[Identifier, Field(max_length=50)], Any]
    reason: NonEmpty125
    productName: NonEmpty125


class _Extra(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    treeherder: TreeherderShape
    parent: TaskId


class _Metadata(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    name: Required[NonEmpty255]
    owner: Text255


_Tags = TypedDict(
    "_Tags",
    {"retrigger": Text16, "action": Text32, "test-type": Text32},
    total=False,
)
_Tags.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


class _Env(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    MOZHARNESS_TEST_PATHS: str | dict[str, list[str]]


class _Payload(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    env: _Env


class TaskShape(TypedDict, total=False):
    """A task definition: the fields a job is derived from (`created` a datetime once checked)."""

    __pydantic_config__ = _STRICT  # type: ignore[misc]
    created: Required[Timestamp]
    taskGroupId: TaskId
    taskQueueId: QueueId
    provisionerId: QueuePart
    workerType: QueuePart
    routes: list[Text249]
    metadata: Required[_Metadata]
    tags: _Tags
    extra: _Extra
    payload: _Payload


class _PulsePayload(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    runId: Annotated[int, Field(ge=0, le=MAX_RUN_ID)]
    status: StatusShape


class PulseShape(TypedDict):
    """A message of the queue's `exchange/taskcluster-queue/v1/task-*` exchanges."""

    __pydantic_config__ = _STRICT  # type: ignore[misc]
    exchange: Text200
    payload: _PulsePayload


# The SchemaValidators themselves: TypeAdapter's Python wrapper costs more than a check.
_TASK = TypeAdapter(TaskShape).validator
_STATUS = TypeAdapter(StatusShape).validator
_RUNS = TypeAdapter(list[RunShape]).validator
_PULSE = TypeAdapter(PulseShape).validator
_TEST_PATHS = TypeAdapter(dict[str, list[ManifestPath]], config=ConfigDict(strict=True)).validator
_TASK_ID = re.compile(TASK_ID_PATTERN)

# The decision task's artifacts: label → manifests, manifest → test paths.
_MANIFESTS_BY_TASK = TypeAdapter(
    dict[NonEmpty255, list[ManifestPath]], config=ConfigDict(strict=True)
).validator
_TESTS_BY_MANIFEST = TypeAdapter(
    dict[ManifestPath, list[TestPath]],
    config=ConfigDict(strict=True),
).validator

# pydantic's own words for these, in the words of the formats.
_OBJECT_ERRORS = frozenset({"model_type", "model_attributes_type", "dict_type"})
_PATTERNS = {
    TASK_ID_PATTERN: "should be a task id (a slugid of 22 characters)",
    TIMESTAMP_PATTERN: "should be an RFC 3339 date-time such as 2019-06-26T19:13:51.402Z",
    _NO_NUL: "should not contain a NUL character",
}


def _one_line(error: ValidationError, prefix: str = "") -> str:
    """The first error as `field.path: what is wrong`."""
    first = error.errors(include_url=False)[0]
    parts = [*(prefix.split(".") if prefix else ()), *(str(p) for p in first["loc"])]
    ctx = first.get("ctx") or {}
    if first["type"] in _OBJECT_ERRORS:
        message = "should be an object"
    elif first["type"] == "string_pattern_mismatch" and ctx.get("pattern") in _PATTERNS:
        message = _PATTERNS[ctx["pattern"]]
    elif first["type"] == "json_invalid":
        message = f"is not JSON: {ctx.get('error', '')}"
    else:
        message = first["msg"].removeprefix("Input ")
    where = ".".join(parts)
    return f"{where}: {message}" if where else message


def _timestamp(value: str, where: str) -> datetime:
    try:
        # Python 3.11 reads `Z` and drops fractional digits past the sixth.
        return datetime.fromisoformat(value).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise TaskShapeError(f"{where}: {value!r} is not a valid date-time ({exc})") from None


def _run_times(runs: list[Any], where: str) -> list[Any]:
    """The checked runs with their times as datetimes; each `runId`, when given, is its
    place in the list."""
    for index, run in enumerate(runs):
        if run.get("runId", index) != index:
            raise TaskShapeError(f"{where}.{index}.runId: is {run['runId']}, not its place {index}")
        for name in ("started", "resolved"):
            if name in run:
                run[name] = _timestamp(run[name], f"{where}.{index}.{name}")
    return runs


def check_task_id(value: Any, what: str = "taskId") -> str:
    """A task id (a slugid), or `TaskShapeError` naming `what`."""
    if not isinstance(value, str) or not _TASK_ID.match(value):
        raise TaskShapeError(
            f"{what}: {repr(value)[:40]} is not a task id (a slugid of 22 characters)"
        )
    return value


def check_task(task: Any) -> TaskShape:
    """The task definition, checked (see the module docstring)."""
    try:
        checked = _TASK.validate_python(task)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc)) from None
    checked["created"] = _timestamp(checked["created"], "created")
    return checked


def check_runs(runs: Any) -> list[RunShape]:
    """A status's `runs`, checked (None: no runs)."""
    if runs is None:
        return []
    try:
        checked = _RUNS.validate_python(runs)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc, "runs")) from None
    return _run_times(checked, "runs")


def check_status(status: Any) -> StatusShape:
    """A task status (`taskId`, `state`, `runs`), checked."""
    try:
        checked = _STATUS.validate_python(status)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc)) from None
    _run_times(checked.get("runs", []), "runs")
    return checked


def check_pulse_message(message: Any, exchanges: Collection[str]) -> PulseShape:
    """A queue Pulse message on one of `exchanges`, whose `runId` names one of its runs."""
    try:
        checked = _PULSE.validate_python(message)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc)) from None
    if checked["exchange"] not in exchanges:
        raise TaskShapeError(
            f"exchange: {checked['exchange'][:100]!r} is not a queue task exchange"
        )
    payload = checked["payload"]
    runs = _run_times(payload["status"].get("runs", []), "payload.status.runs")
    if payload["runId"] >= len(runs):
        raise TaskShapeError(
            f"payload.runId: {payload['runId']}, but the status lists {len(runs)} runs"
        )
    return checked


def check_manifests_by_task(data: Any) -> dict[str, list[str]]:
    """A decision task's `manifests-by-task.json`: each label's manifest paths."""
    try:
        return _MANIFESTS_BY_TASK.validate_python(data)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc, "manifests-by-task")) from None


def check_tests_by_manifest(data: Any) -> dict[str, list[str]]:
    """A decision task's `tests-by-manifest.json`: each manifest's test paths."""
    try:
        return _TESTS_BY_MANIFEST.validate_python(data)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc, "tests-by-manifest")) from None


def check_test_paths(by_suite: str | Any) -> dict[str, list[str]]:
    """`MOZHARNESS_TEST_PATHS` (its JSON text, or decoded): an object of suites to lists of
    manifest paths."""
    try:
        if isinstance(by_suite, str):
            return _TEST_PATHS.validate_json(by_suite)
        return _TEST_PATHS.validate_python(by_suite)
    except ValidationError as exc:
        raise TaskShapeError(_one_line(exc, "MOZHARNESS_TEST_PATHS")) from None
