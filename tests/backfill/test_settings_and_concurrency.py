"""Backfill settings, and passes that run at the same time ask once."""

from __future__ import annotations

import threading
from datetime import timedelta
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from sheriff.actions.log import enqueue
from sheriff.backfill import (
    BackfillSettings,
    advance_backfills,
    backfill_settings,
    from_settings,
    open_report_for_case,
)
from sheriff.errors import ConfigError
from sheriff.store.schema import action_request, backfill_record
from tests.backfill.conftest import START, FakeCI


def test_defaults_are_what_a_sheriff_would_pick() -> None:
    settings = BackfillSettings()
    assert settings.enabled and settings.same_manifests
    assert settings.strategy == "bisect" and settings.depth == 19
    assert settings.maturity == timedelta(minutes=30)
    assert settings.timeout == timedelta(hours=10)


def test_project_settings_map_onto_backfill_settings() -> None:
    project = SimpleNamespace(backfill_strategy="linear", backfill_depth=9, backfill_enabled=None)
    settings = from_settings(project)
    assert settings.strategy == "linear" and settings.depth == 9 and settings.enabled


@pytest.mark.parametrize(
    ("values", "field"),
    [({"strategy": "sideways"}, "strategy"), ({"depth": 40}, "depth"), ({"nope": 1}, "nope")],
)
def test_a_bad_setting_is_one_clear_error(values, field) -> None:
    with pytest.raises(ConfigError, match=f"backfill setting {field}"):
        backfill_settings(**values)


def test_concurrent_passes_enqueue_each_request_once(engine: sa.Engine) -> None:
    ci = FakeCI(engine)
    ci.history()
    case = ci.regression_case(20)
    settings = BackfillSettings(strategy="linear")
    with engine.begin() as conn:
        open_report_for_case(conn, case, START, settings)
    now = START + timedelta(hours=1)
    errors: list[BaseException] = []

    def one_pass() -> None:
        try:
            advance_backfills(engine, now=now, actions=enqueue, settings=settings)
        except BaseException as exc:  # surfaced below: a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=one_pass) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    with engine.connect() as conn:
        keys = list(conn.execute(sa.select(action_request.c.idempotency_key)).scalars())
        record = conn.execute(sa.select(backfill_record)).one()
    assert keys == [f"backfill:{record.id}:linear"]
    assert record.status == "backfilled"
    assert record.iterations == 1 and record.actions_triggered == 1
