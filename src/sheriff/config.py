"""One Settings object: environment (`SHERIFF_*`, `TASKCLUSTER_*`) over an optional TOML file.

Precedence, highest first: explicit keyword arguments, environment variables, the TOML
file named by `SHERIFF_CONFIG` (else `./sheriff.toml` when it exists), defaults. The
defaults point at Firefox CI's production services so that a dry run works wherever they
can be reached.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from sheriff.errors import ConfigError

DEFAULT_CONFIG_FILE = "sheriff.toml"


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the `[sheriff]` table (or the top level) of a TOML settings file."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self._data = _read_toml()

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self._data.items() if k in self.settings_cls.model_fields}


def _read_toml() -> dict[str, Any]:
    explicit = os.environ.get("SHERIFF_CONFIG")
    path = Path(explicit) if explicit else Path(DEFAULT_CONFIG_FILE)
    if not path.exists():
        if explicit:
            raise ConfigError(f"SHERIFF_CONFIG names {path}, which does not exist")
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML file: {exc}") from exc
    chosen = dict(data.get("sheriff", data))
    # `[repository.<name>]` tables may sit beside a `[sheriff]` table or inside it.
    if "sheriff" in data and isinstance(data.get("repository"), dict):
        chosen.setdefault("repository", data["repository"])
    return chosen


class RepositorySettings(BaseModel):
    """A `[repository.<name>]` table: what differs for one repository (None: the global)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    queue_prefixes: list[str] | None = None
    tiers: list[int] | None = None
    policy: str | None = None
    backfill_strategy: str | None = None
    backfill_enabled: bool | None = None
    retriggers_per_push: int | None = Field(None, ge=0)
    retriggers_per_day: int | None = Field(None, ge=0)
    backfill_runs_per_day: int | None = Field(None, ge=0)

    @field_validator("tiers")
    @classmethod
    def _tiers(cls, tiers: list[int] | None) -> list[int] | None:
        if tiers is not None and (not tiers or any(t not in (1, 2, 3) for t in tiers)):
            raise ValueError("tiers must list some of 1, 2, 3")
        return tiers


# Per-repository names and the global setting each one overrides.
_REPOSITORY_OVERRIDES = {
    "queue_prefixes": "queue_prefixes",
    "tiers": "tiers",
    "policy": "policy",
    "backfill_strategy": "backfill_strategy",
    "backfill_enabled": "backfill_enabled",
    "retriggers_per_push": "retriggers_per_push",
    "retriggers_per_day": "retriggers_per_repository_per_day",
    "backfill_runs_per_day": "backfill_runs_per_repository_per_day",
}


class Settings(BaseSettings):
    """Everything sheriff can be configured with."""

    model_config = SettingsConfigDict(env_prefix="SHERIFF_", extra="ignore")

    database_url: str = "sqlite:///sheriff.db"

    # The outside world. Taskcluster's own variable names, as its tools use them.
    taskcluster_root_url: str = Field(
        "https://firefox-ci-tc.services.mozilla.com",
        validation_alias=AliasChoices("TASKCLUSTER_ROOT_URL", "SHERIFF_TASKCLUSTER_ROOT_URL"),
    )
    # A client that acts (--live) needs both in-tree action hooks' scopes, Gecko giving
    # backfills their own permission: hooks:trigger-hook:project-gecko/in-tree-action-3-
    # generic/* and …-backfill/*, and queue:cancel-task:gecko-level-3/* (docs/actions.md).
    taskcluster_client_id: str | None = Field(
        None,
        validation_alias=AliasChoices("TASKCLUSTER_CLIENT_ID", "SHERIFF_TASKCLUSTER_CLIENT_ID"),
    )
    taskcluster_access_token: str | None = Field(
        None,
        validation_alias=AliasChoices(
            "TASKCLUSTER_ACCESS_TOKEN", "SHERIFF_TASKCLUSTER_ACCESS_TOKEN"
        ),
    )
    treeherder_url: str = "https://treeherder.mozilla.org"
    # Write-back (classifications, bug links, notes) is sent with `--live` only, as
    # Treeherder's user of this token; sheriff's page for the links in its notes.
    treeherder_token: str | None = None
    public_url: str = "http://127.0.0.1:8000"
    # Alerts: SMTP (host, port, from, to: comma-separated) and Matrix (homeserver URL,
    # access token, room id); a channel without its settings is not used.
    smtp_host: str | None = None
    smtp_port: int = 25
    smtp_from: str = "sheriff@localhost"
    smtp_to: list[str] = []
    matrix_homeserver: str | None = None
    matrix_access_token: str | None = None
    matrix_room_id: str | None = None
    pulse_url: str | None = None  # amqp://… ; when set, ingestion listens to Pulse
    # Reads from Taskcluster and Treeherder (sheriff.ci.retry): each attempt's timeout, at
    # most this many retries, and a total budget per call; writes are sent once.
    http_timeout_seconds: float = Field(30.0, gt=0)
    http_retries: int = Field(8, ge=0)
    http_retry_budget_seconds: float = Field(30.0, ge=0)

    # Triage (SPEC §3).
    repositories: list[str] = ["autoland"]
    # `[repository.<name>]` tables: per-repository overrides (RepositorySettings); a name
    # there is watched too unless `enabled = false`.
    repository: dict[str, RepositorySettings] = {}
    queue_prefixes: list[str] = ["gecko-t/t-linux-"]
    tiers: list[int] = [1, 2]  # SPEC §3 rule 2: other tiers are left alone

    # Budgets (docs/service.md): None is no cap. Retriggers sheriff asks for on one push,
    # and on one repository in any 24 hours; backfilled runs on one repository in 24 hours.
    retriggers_per_push: int | None = Field(None, ge=0)
    retriggers_per_repository_per_day: int | None = Field(None, ge=0)
    backfill_runs_per_repository_per_day: int | None = Field(None, ge=0)
    # `history` decides with far fewer retriggers and false regressions than `seed`, the
    # exact rule of SPEC §3 (figures in README.md and docs/history-policy.md).
    policy: str = "history"
    runs_wanted: int = 6  # original + 5 retriggers
    # The most runs `history` may take for a case still undecided at runs_wanted whose
    # verdict a few more runs could turn (docs/history-policy.md); runs_wanted = never more.
    runs_most: int = Field(11, ge=1)
    regression_min_reproductions: int = 2
    # The `history` policy's thresholds on P(regression), the clean retriggers an
    # intermittent verdict needs, without and with an open bug, and the P(regression) a
    # reproduction may reach for an open bug and earlier failures to waive them
    # (docs/history-policy.md).
    history_upper: float | None = None
    history_lower: float | None = None
    history_min_clean_runs: int | None = None
    history_min_clean_runs_with_bug: int | None = None
    history_at_cap: float | None = None
    history_waiver_ceiling: float | None = None
    history_extend_from: float | None = None  # P from which a case goes past the cap
    # A run whose log Treeherder has not parsed this long after the run ended (or could
    # not parse at all) has its live_backing.log read by sheriff itself.
    raw_log_after_minutes: float = Field(30, ge=0)

    # Backfills (sheriff.backfill.BackfillSettings has every knob and its meaning).
    backfill_enabled: bool = True  # a regression verdict opens a backfill report
    backfill_strategy: str = "bisect"  # linear | bisect
    backfill_same_manifests: bool = True
    backfill_depth: int | None = None
    backfill_max_per_platform_per_day: int | None = None
    backfill_maturity_minutes: int | None = None
    backfill_timeout_hours: float | None = None

    # Actions.
    # A request left `sending` longer is reconciled with its task group, then resent.
    actions_lease_minutes: float = Field(15, ge=0)

    # The service (`sheriff listen`, `sheriff worker`; docs/service.md).
    celery_broker_url: str = "amqp://guest:guest@127.0.0.1:5672//"
    celery_queue: str = "sheriff"  # the Celery queue listen hands work to
    # Pulse queues are named queue/<pulse user>/<name>; durable, survives restarts.
    pulse_queue: str = "queue/sheriff/triage"
    # CI's clock when it is not the wall clock: a URL answering {"now": ISO 8601} (a
    # simulator's /__sim__/clock). Unset: the wall clock.
    ci_clock_url: str | None = None
    # Wall-clock seconds between the catch-up passes `sheriff worker --beat` schedules:
    # pushes with open cases (what waits on Treeherder) and the whole window (Pulse missed).
    open_cases_every_seconds: float = Field(60.0, gt=0)
    catch_up_every_seconds: float = Field(600.0, gt=0)
    # CI-time seconds between full catch-up passes (every push of the window still at work
    # asked about); the passes between look only where Pulse told of something since.
    catch_up_full_every_seconds: float = Field(3600.0, gt=0)
    catch_up_window_hours: float = Field(6.0, gt=0)

    # Serving.
    api_token: str | None = None  # bearer token that write endpoints require
    serve_workers: int | None = Field(None, ge=1, le=64)  # `sheriff serve` processes; None: CPUs
    # Memory per serving process for read answers kept while the database is unchanged
    # (sheriff.web.answer_cache); 0 turns the cache off.
    api_cache_mb: int = Field(64, ge=0)

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, name: str) -> str:
        from sheriff.model.policy import UnknownPolicyError, get_policy

        try:
            get_policy(name)
        except UnknownPolicyError as exc:
            raise ValueError(str(exc)) from None
        return name

    @field_validator("backfill_strategy")
    @classmethod
    def _known_backfill_strategy(cls, name: str) -> str:
        from sheriff.backfill.settings import known_strategy

        return known_strategy(name)

    @field_validator("tiers")
    @classmethod
    def _known_tiers(cls, tiers: list[int]) -> list[int]:
        return RepositorySettings._tiers(tiers) or tiers

    @property
    def watched_repositories(self) -> list[str]:
        """The repositories one deployment watches: `repositories` and every
        `[repository.<name>]` table, in that order, less those with `enabled = false`."""
        names = list(dict.fromkeys([*self.repositories, *self.repository]))
        return [n for n in names if self.repository.get(n, RepositorySettings()).enabled]

    def for_repository(self, name: str) -> Settings:
        """These settings with the `[repository.<name>]` overrides applied."""
        section = self.repository.get(name)
        if section is None:
            return self
        update = {
            target: getattr(section, source)
            for source, target in _REPOSITORY_OVERRIDES.items()
            if getattr(section, source) is not None
        }
        try:
            # Validated like the global settings: an unknown policy is refused in one line.
            return type(self).model_validate({**self.model_dump(), **update})
        except ValidationError as exc:
            first = exc.errors()[0]
            message = first["msg"].removeprefix("Value error, ")
            raise ConfigError(f"invalid setting repository.{name}: {message}") from exc

    @property
    def has_taskcluster_credentials(self) -> bool:
        return bool(self.taskcluster_client_id and self.taskcluster_access_token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))


def load_settings(**overrides: Any) -> Settings:
    """Build the settings, turning a bad value into one readable `ConfigError`."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"invalid setting {where}: {message}") from exc


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
