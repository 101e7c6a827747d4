"""A running simulator playing tests/triage/tiny.yaml, and sheriff's triage wired to it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from sheriff.ci.taskcluster import taskcluster_clients
from sheriff.ci.treeherder import Treeherder
from sheriff.config import load_settings
from sheriff.sim.scenario import load_scenario
from sheriff.sim.server import SimServer
from sheriff.triage.engine import PassSummary, Triage
from sheriff.triage.simrun import SIM_ACCESS_TOKEN, SIM_CLIENT_ID

TINY = Path(__file__).parent / "tiny.yaml"


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with SimServer(load_scenario(TINY), port=0) as server:
        yield server


def make_triage(
    engine,
    sim: SimServer,
    *,
    live: bool = True,
    policy: str = "seed",
    backfill: str = "off",
    **overrides: object,
) -> Triage:
    settings = load_settings(
        **overrides,
        database_url=str(engine.url),
        taskcluster_root_url=sim.root_url,
        treeherder_url=sim.root_url,
        taskcluster_client_id=SIM_CLIENT_ID if live else None,
        taskcluster_access_token=SIM_ACCESS_TOKEN if live else None,
        policy=policy,
    )
    clients = taskcluster_clients(
        sim.root_url,
        client_id=settings.taskcluster_client_id,
        access_token=settings.taskcluster_access_token,
    )
    return Triage(
        engine,
        settings,
        clients,
        Treeherder(sim.root_url),
        repo="autoland",
        live=live,
        backfill=backfill,
    )


def one_pass(triage: Triage, sim: SimServer) -> PassSummary:
    return triage.run_pass(since=sim.now - timedelta(hours=6), until=sim.now, now=sim.now)


def drive(triage: Triage, sim: SimServer, *, minutes: int = 10, limit_hours: float = 8) -> None:
    """Advance the simulator and run a pass every `minutes` until nothing is left open."""
    deadline = sim.now + timedelta(hours=limit_hours)
    while sim.now < deadline:
        sim.advance(minutes=minutes)
        summary = one_pass(triage, sim)
        if sim.world.finished and summary.open_cases == 0 and summary.open_backfills == 0:
            return
    raise AssertionError("cases still open at the deadline")
