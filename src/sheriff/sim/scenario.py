"""Scenario files: a stretch of CI history with known ground truth (scenarios/README.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sheriff.errors import InputError


class ScenarioError(InputError):
    """A scenario file is unreadable or has a bad field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Platform(_Strict):
    """A machine platform and build type on which every suite runs."""

    platform: str = Field(min_length=1)
    collection: str = Field(min_length=1)
    task_queue_id: str = Field(pattern=r"^[^/]+/[^/]+$")
    tier: int = Field(1, ge=1, le=3)


class Suite(_Strict):
    """A test suite, split into chunks, over generated manifests."""

    name: str = Field(min_length=1)
    group_symbol: str
    group_name: str
    symbol: str
    chunks: int = Field(ge=1)
    manifests: int = Field(ge=1)
    tests_per_manifest: int = Field(ge=1)
    duration_minutes: tuple[float, float]
    tier: int = Field(1, ge=1, le=3)
    # Gecko's `retrigger` attribute (tags.retrigger): false makes `retrigger` refuse the
    # label unless forced, and `retrigger-multiple` rerun its tasks instead of cloning.
    retriggerable: bool = True

    @model_validator(mode="after")
    def _check(self) -> Suite:
        low, high = self.duration_minutes
        if not 0 < low <= high:
            raise ValueError("duration_minutes must be [low, high] with 0 < low <= high")
        if self.chunks > self.manifests:
            raise ValueError("chunks must not exceed manifests")
        return self


class BetaRate(_Strict):
    """Beta(a, b) over a flaky test's chance to fail one run."""

    a: float = Field(gt=0)
    b: float = Field(gt=0)


class Flakiness(_Strict):
    """How many tests fail intermittently, and how often."""

    fraction_flaky: float = Field(0.0, ge=0, le=1)
    rate: BetaRate = BetaRate(a=1.0, b=30.0)
    known_bug_fraction: float = Field(0.7, ge=0, le=1)


class Regression(_Strict):
    """Tests broken by a culprit push until an optional fix."""

    push: int = Field(ge=0)
    tests: int | list[str] = 1
    platforms: Literal["all"] | list[str] = "all"
    fail_rate: float = Field(1.0, gt=0, le=1)
    fixed_at: int | None = None
    # How a regressed test fails: `same` (its own failure mode, the line a flaky test
    # already shows), `new` (another line of the same test), or `crash` / `timeout`: the
    # harness reports an application crash or a hang with no test name in the line.
    failure: Literal["same", "new", "crash", "timeout"] = "same"

    @field_validator("tests")
    @classmethod
    def _tests(cls, value: int | list[str]) -> int | list[str]:
        if isinstance(value, int) and value < 1:
            raise ValueError("tests must be at least 1")
        if isinstance(value, list) and not value:
            raise ValueError("tests must name at least one test path")
        return value


class Storm(_Strict):
    """A worker pool failing many runs at once for a while (an infrastructure storm)."""

    start_minutes: float = Field(ge=0)  # after the scenario's start
    minutes: float = Field(gt=0)
    task_queue_id: str = Field(pattern=r"^[^/]+/[^/]+$")  # the pool that fails
    failure_rate: float = Field(0.5, gt=0, le=1)  # share of its runs scheduled meanwhile
    # True: the harness still writes an errorsummary (groups ERROR, no test_result) and
    # the log an `Automation Error` line; False: the run fails without an errorsummary.
    errorsummary: bool = False


class TreeherderDelays(_Strict):
    """Treeherder's lag behind Taskcluster."""

    ingest_delay_minutes: tuple[float, float] = (1.0, 4.0)
    parse_delay_minutes: tuple[float, float] = (2.0, 8.0)
    parse_failure_rate: float = Field(0.0, ge=0, le=1)
    # After a classified failure's log is parsed, until a person classifies it.
    classification_delay_minutes: tuple[float, float] = (20.0, 120.0)

    @field_validator("ingest_delay_minutes", "parse_delay_minutes", "classification_delay_minutes")
    @classmethod
    def _range(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not 0 <= value[0] <= value[1]:
            raise ValueError("must be [low, high] with 0 <= low <= high")
        return value


FAULTY_SERVICES = ("queue", "index", "hooks", "auth", "artifacts", "treeherder")


class RequestFaults(_Strict):
    """Shares of requests that fail, each in its own way (together at most 1)."""

    error: float = Field(0.0, ge=0, le=1)  # 500, 502 or 503, with the service's error body
    throttle: float = Field(0.0, ge=0, le=1)  # 429 with a Retry-After header
    reset: float = Field(0.0, ge=0, le=1)  # the connection drops in the middle of the answer
    slow: float = Field(0.0, ge=0, le=1)  # the answer comes after `slow_seconds`
    lost_write: float = Field(0.0, ge=0, le=1)  # a write (triggerHook, cancelTask) is done,
    # then its answer is lost (a 5xx or a dropped connection): the client cannot tell

    @model_validator(mode="after")
    def _at_most_one(self) -> RequestFaults:
        if self.error + self.throttle + self.reset + self.slow + self.lost_write > 1:
            raise ValueError("the shares of failing requests add up to more than 1")
        return self


class Outage(_Strict):
    """A stretch of virtual time during which a service answers 503 to everything."""

    start_minutes: float = Field(ge=0)  # after the scenario's start
    minutes: float = Field(gt=0)


class PulseFaults(_Strict):
    drop: float = Field(0.0, ge=0, le=1)  # a message is never published
    duplicate: float = Field(0.0, ge=0, le=1)  # a message is published twice


class Faults(_Strict):
    """How the simulator misbehaves on purpose (docs/scenarios.md, `faults:`)."""

    seed: int | None = None  # [the scenario's seed]
    requests: RequestFaults = RequestFaults()  # every service alike …
    services: dict[str, RequestFaults] = {}  # … unless overridden here, by service
    retry_after_seconds: tuple[float, float] = (1.0, 5.0)
    slow_seconds: tuple[float, float] = (0.5, 3.0)
    corrupt_artifacts: float = Field(0.0, ge=0, le=1)  # a download answers garbage bytes
    truncated_artifacts: float = Field(0.0, ge=0, le=1)  # a download is cut short
    treeherder_outages: list[Outage] = []
    log_parse_failures: float = Field(0.0, ge=0, le=1)  # more logs Treeherder cannot parse
    pulse: PulseFaults = PulseFaults()

    @field_validator("services")
    @classmethod
    def _known_services(cls, value: dict[str, RequestFaults]) -> dict[str, RequestFaults]:
        unknown = sorted(set(value) - set(FAULTY_SERVICES))
        if unknown:
            raise ValueError(f"unknown service {unknown[0]} (known: {', '.join(FAULTY_SERVICES)})")
        return value

    @field_validator("retry_after_seconds", "slow_seconds")
    @classmethod
    def _seconds(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not 0 <= value[0] <= value[1]:
            raise ValueError("must be [low, high] with 0 <= low <= high")
        return value

    def for_service(self, service: str) -> RequestFaults:
        return self.services.get(service, self.requests)

    @property
    def active(self) -> bool:
        """Whether anything at all misbehaves (the default: nothing)."""
        return self != Faults()


class Scenario(_Strict):
    """One scenario file, validated."""

    name: str
    seed: int
    repository: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    start: datetime
    pushes: int = Field(ge=1)
    push_interval_minutes: float = Field(gt=0)
    schedule_fraction: float = Field(1.0, ge=0, le=1)
    dynamic_chunking: bool = False
    platforms: list[Platform] = Field(min_length=1)
    suites: list[Suite] = Field(min_length=1)
    flakiness: Flakiness = Flakiness()
    infra_failure_rate: float = Field(0.0, ge=0, le=1)
    classified_fraction: float = Field(0.0, ge=0, le=1)
    regressions: list[Regression] = []
    treeherder: TreeherderDelays = TreeherderDelays()
    storms: list[Storm] = []
    faults: Faults = Faults()

    @field_validator("start")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _cross_check(self) -> Scenario:
        names = {p.platform for p in self.platforms}
        for i, regression in enumerate(self.regressions):
            if regression.push >= self.pushes:
                raise ValueError(f"regressions.{i}.push: {regression.push} is not a push index")
            if regression.fixed_at is not None and regression.fixed_at <= regression.push:
                raise ValueError(f"regressions.{i}.fixed_at: must come after push")
            if isinstance(regression.platforms, list):
                unknown = sorted(set(regression.platforms) - names)
                if unknown:
                    raise ValueError(f"regressions.{i}.platforms: unknown platform {unknown[0]}")
        queues = {p.task_queue_id for p in self.platforms}
        for i, storm in enumerate(self.storms):
            if storm.task_queue_id not in queues:
                queue = storm.task_queue_id
                raise ValueError(f"storms.{i}.task_queue_id: no platform runs on {queue}")
        labels = [(p.platform, p.collection) for p in self.platforms]
        if len(set(labels)) != len(labels):
            raise ValueError("platforms: a platform and collection appear twice")
        suite_names = [s.name for s in self.suites]
        if len(set(suite_names)) != len(suite_names):
            raise ValueError("suites: a suite name appears twice")
        return self


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """Validate already-parsed scenario data, raising one `ScenarioError` line."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario must be a mapping of fields")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown field"
        field = f"{where}: " if where and not message.startswith(where.split(".")[0]) else ""
        raise ScenarioError(f"{source}: {field}{message}") from None
    if any(isinstance(r.tests, list) for r in scenario.regressions):
        from sheriff.sim.catalog import Catalog

        try:
            Catalog(scenario)  # named test paths must exist in the generated tree
        except ScenarioError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
    return scenario


BUNDLED = Path(__file__).resolve().parent / "scenarios"


def bundled_scenarios() -> dict[str, Path]:
    """The scenarios shipped inside the package, by name (`small`, `autoland-day`)."""
    return {p.stem: p for p in sorted(BUNDLED.glob("*.yaml"))}


def resolve_scenario(name_or_path: str | Path) -> Path:
    """A scenario file: an existing path, else the bundled scenario of that name."""
    path = Path(name_or_path)
    if path.exists():
        return path
    bundled = bundled_scenarios()
    if path.stem in bundled and path.name in (path.stem, f"{path.stem}.yaml"):
        return bundled[path.stem]
    names = ", ".join(bundled)
    raise ScenarioError(f"{path}: cannot read scenario: no such file (bundled: {names})")


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario from a YAML or JSON file, or a bundled scenario by name."""
    path = resolve_scenario(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())
        raise ScenarioError(f"{path}: not valid YAML/JSON: {reason}") from None
    return parse_scenario(data, str(path))
