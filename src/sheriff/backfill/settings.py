"""Backfill settings, with defaults a sheriff would pick; `Settings` wires them from SHERIFF_*."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sheriff.errors import ConfigError

STRATEGIES = ("linear", "bisect", "flake-aware")


def known_strategy(name: str) -> str:
    """`name` if it is a backfill strategy; a ValueError naming the known ones if not."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown backfill strategy {name!r} (known: {', '.join(STRATEGIES)})")
    return name


class BackfillSettings(BaseModel):
    """How sheriff backfills regressions to find their culprit push."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True  # a regression verdict opens a report
    strategy: str = "bisect"  # one of STRATEGIES
    same_manifests: bool = True  # backfilled runs run the original's manifest set
    depth: int = Field(19, ge=1, le=25)  # pushes before the regression's push to look at
    # Bisect looks further back when even the oldest push of its window fails.
    max_extensions: int = Field(1, ge=0, le=10)
    linear_times: int = Field(1, ge=1, le=10)  # runs per push of a linear backfill
    miss_probability: float = Field(0.05, gt=0.0, lt=1.0)  # P(intermittent taken as absent)
    max_runs_per_push: int = Field(8, ge=1, le=8)
    max_per_platform_per_day: int = Field(50, ge=0)
    # Backfilled runs asked for on one repository in 24 hours (a budget; None: no cap).
    runs_per_repository_per_day: int | None = Field(None, ge=0)
    maturity_minutes: float = Field(30.0, ge=0.0)  # before a report is acted on
    timeout_hours: float = Field(10.0, gt=0.0)  # a record not done by then fails
    # Requested runs that have not appeared by then count as never coming.
    runs_appear_minutes: float = Field(120.0, gt=0.0)
    merge_hours: float = Field(24.0, ge=0.0)  # a regression of the same tests joins a report

    _known_strategy = field_validator("strategy")(known_strategy)

    @property
    def maturity(self) -> timedelta:
        return timedelta(minutes=self.maturity_minutes)

    @property
    def timeout(self) -> timedelta:
        return timedelta(hours=self.timeout_hours)

    @property
    def runs_appear(self) -> timedelta:
        return timedelta(minutes=self.runs_appear_minutes)

    @property
    def merge_window(self) -> timedelta:
        return timedelta(hours=self.merge_hours)


def backfill_settings(**values: Any) -> BackfillSettings:
    """Build the settings, turning a bad value into one readable `ConfigError`."""
    try:
        return BackfillSettings(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "backfill"
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"invalid backfill setting {where}: {message}") from exc


def from_settings(settings: Any) -> BackfillSettings:
    """The backfill settings out of the project `Settings` (fields `backfill_*`), if it has them."""
    fields = BackfillSettings.model_fields
    values = {
        name: getattr(settings, f"backfill_{name}")
        for name in fields
        if getattr(settings, f"backfill_{name}", None) is not None
    }
    return backfill_settings(**values)
