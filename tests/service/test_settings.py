"""Per-repository settings: `[repository.<name>]` tables of the TOML file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheriff.config import load_settings
from sheriff.errors import ConfigError

TOML = """
[sheriff]
repositories = ["autoland"]
retriggers_per_push = 10

[repository.autoland]
queue_prefixes = ["gecko-t/t-linux-", "gecko-t/win"]
retriggers_per_day = 300

[repository.mozilla-central]
policy = "seed"
tiers = [1]
backfill_strategy = "linear"

[repository.try]
enabled = false
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "sheriff.toml"
    path.write_text(TOML)
    monkeypatch.setenv("SHERIFF_CONFIG", str(path))
    return path


def test_one_deployment_watches_every_enabled_repository(config: Path) -> None:
    assert load_settings().watched_repositories == ["autoland", "mozilla-central"]


def test_a_repository_table_overrides_only_its_repository(config: Path) -> None:
    settings = load_settings()
    autoland = settings.for_repository("autoland")
    assert autoland.queue_prefixes == ["gecko-t/t-linux-", "gecko-t/win"]
    assert autoland.retriggers_per_repository_per_day == 300
    assert autoland.retriggers_per_push == 10  # the global value where the table is silent
    central = settings.for_repository("mozilla-central")
    assert (central.policy, central.tiers, central.backfill_strategy) == ("seed", [1], "linear")
    assert central.queue_prefixes == ["gecko-t/t-linux-"]
    assert settings.for_repository("unlisted") is settings


def test_a_bad_value_in_a_table_is_refused_naming_it(config: Path) -> None:
    config.write_text(TOML + '\n[repository.beta]\npolicy = "coin-toss"\n')
    with pytest.raises(ConfigError, match=r"repository\.beta"):
        load_settings().for_repository("beta")
    config.write_text(TOML + "\n[repository.beta]\ntiers = [4]\n")
    with pytest.raises(ConfigError, match="tiers"):
        load_settings()
    config.write_text(TOML + "\n[repository.beta]\nqueues = []\n")
    with pytest.raises(ConfigError, match="queues"):
        load_settings()


def test_catch_up_passes_are_full_at_first_then_every_full_period_cheap_between() -> None:
    from datetime import UTC, datetime, timedelta

    from sheriff.service.tasks import CATCH_UP_MARGIN, catch_up_quiet_since

    t0 = datetime(2026, 11, 2, 8, tzinfo=UTC)
    hour = timedelta(hours=1)
    assert catch_up_quiet_since(None, t0, hour) is None  # a process's first pass
    ten = timedelta(minutes=10)
    # Between full passes: news since the last pass (with a margin) is what is looked at.
    assert catch_up_quiet_since((t0 + ten, t0), t0 + 2 * ten, hour) == t0 + ten - CATCH_UP_MARGIN
    assert catch_up_quiet_since((t0 + 5 * ten, t0), t0 + 6 * ten, hour) is None  # an hour on
    assert catch_up_quiet_since((t0 + ten, t0), t0, hour) is None  # the clock went back


def test_open_cases_passes_never_expire_in_the_queue() -> None:
    # An expired task is dropped by the worker: behind a backlog of events tasks longer
    # than one period, every pass would be, and new cases would wait for the backlog.
    from sheriff.config import Settings
    from sheriff.service.tasks import app, make_app

    try:
        schedule = make_app(Settings(open_cases_every_seconds=5)).conf.beat_schedule
    finally:
        app.set_current()  # make_app made its app the current one
    assert schedule["open-cases"]["schedule"] == 5
    assert "expires" not in schedule["open-cases"].get("options", {})


def test_the_history_thresholds_come_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sheriff.model.history import HistoryPolicy
    from sheriff.triage.engine import policy_named

    (tmp_path / "sheriff.toml").write_text("[sheriff]\n")
    monkeypatch.setenv("SHERIFF_CONFIG", str(tmp_path / "sheriff.toml"))
    monkeypatch.setenv("SHERIFF_HISTORY_MIN_CLEAN_RUNS_WITH_BUG", "0")
    monkeypatch.setenv("SHERIFF_HISTORY_AT_CAP", "0.9")
    policy = policy_named("history", load_settings())
    assert isinstance(policy, HistoryPolicy)
    assert (policy.min_clean_runs_with_bug, policy.at_cap, policy.min_clean_runs) == (0, 0.9, 2)
    monkeypatch.setenv("SHERIFF_HISTORY_WAIVER_CEILING", "1")
    assert policy_named("history", load_settings()).waiver_ceiling == 1.0
    monkeypatch.setenv("SHERIFF_HISTORY_WAIVER_CEILING", "1.5")
    with pytest.raises(ConfigError, match="waiver_ceiling"):
        policy_named("history", load_settings())
    monkeypatch.delenv("SHERIFF_HISTORY_WAIVER_CEILING")
    monkeypatch.setenv("SHERIFF_HISTORY_MIN_CLEAN_RUNS_WITH_BUG", "-1")
    with pytest.raises(ConfigError, match="min_clean_runs"):
        policy_named("history", load_settings())
