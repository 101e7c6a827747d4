"""A small world of pushes, jobs, manifests, test paths and verdicts, served over real HTTP.

`world` loads it through the real loaders; `live` runs `create_app` under uvicorn on a
loopback port (a thread of the test process) and hands back its base URL.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import uvicorn
from sqlalchemy.engine import Engine

from sheriff.config import Settings, load_settings
from sheriff.model.job import job_from_task
from sheriff.store.loader import load_jobs, load_push_manifests
from sheriff.store.queries import find_push_id
from sheriff.store.schema import (
    backfill_record,
    backfill_report,
    job,
    push,
    regression,
    regression_case,
    run_observation,
    triage_case,
)
from sheriff.web import create_app
from tests.conftest import IN_CI
from tests.factories import make_task, named_task_id, new_task_id

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

A, B, C = "dom/base/test/browser.toml", "layout/test/browser.toml", "netwerk/test/browser.toml"
TESTS = {
    A: ["dom/base/test/browser_a1.js", "dom/base/test/browser_a2.js"],
    B: ["layout/test/browser_b1.js"],
    C: ["netwerk/test/browser_c1.js"],
}
LINUX, WIN = "linux1804-64-qr", "windows11-64-24h2"
REPO = "autoland"
START = datetime(2026, 11, 2, 8, tzinfo=UTC)
FAILURE = "TEST-UNEXPECTED-FAIL | dom/base/test/browser_a1.js | expected 1, got 2"


def revision(index: int) -> str:
    return f"{index:02d}".ljust(40, "a")


@dataclass
class World:
    """Ids of what `build_world` loaded."""

    push_ids: dict[int, int] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    task_ids: dict[str, str] = field(default_factory=dict)
    cases: dict[str, int] = field(default_factory=dict)
    report_id: int = 0


# Task definitions of the world's jobs, as `queue.task` would answer for them.
DEFINITIONS: dict[str, dict[str, Any]] = {}


def task_definition(task_id: str) -> dict[str, Any]:
    from sheriff.ci.taskcluster import TaskclusterNotFound

    if task_id not in DEFINITIONS:
        raise TaskclusterNotFound(f"GET task {task_id}: HTTP 404", status=404)
    return DEFINITIONS[task_id]


def _job(
    name: str,
    push_index: int,
    label: str,
    platform: str,
    manifests: list[str] | None,
    state: str,
    *,
    action: str | None = None,
    minutes: int = 0,
) -> tuple[str, Any]:
    created = START + timedelta(hours=push_index, minutes=minutes)
    stamp = created.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    task = make_task(
        revision=revision(push_index),
        pushlog_id=push_index + 1,
        label=label,
        platform=platform,
        manifests=manifests,
        created=stamp,
        task_group_id=named_task_id(f"group {push_index}"),
        action=action,
        symbol=label.rsplit("-", 1)[-1],
    )
    run = {"state": state, "runId": 0, "started": stamp, "resolved": stamp}
    task_id = new_task_id()
    DEFINITIONS[task_id] = task
    return name, job_from_task(task_id, task, 0, run)


def build_world(engine: Engine) -> World:
    """Four pushes; on the newest a Linux regression with two reproducing retriggers."""
    bc = "test-linux1804-64-qr/opt-mochitest-browser-chrome-1"
    bcw = "test-windows11-64-24h2/debug-mochitest-browser-chrome-1"
    bc2 = "test-linux1804-64-qr/opt-mochitest-browser-chrome-2"
    specs = [
        _job("p0-bc", 0, bc, LINUX, [A, B], "completed"),
        _job("p1-bc", 1, bc, LINUX, [A, C], "completed"),
        _job("p2-bc", 2, bc, LINUX, [C], "completed"),
        _job("p3-bc", 3, bc, LINUX, [A, B], "failed"),
        _job("p3-bc-r1", 3, bc, LINUX, [A, B], "failed", action="retrigger", minutes=30),
        _job("p3-bc-r2", 3, bc, LINUX, [A, B], "failed", action="retrigger", minutes=31),
        _job("p3-bc-r3", 3, bc, LINUX, [A, B], "completed", action="retrigger", minutes=32),
        _job("p3-bc2", 3, bc2, LINUX, [C], "completed"),
        _job("p3-win", 3, bcw, WIN, [A, B], "failed"),
        _job("p2-win", 2, bcw, WIN, None, "completed"),
    ]
    world = World()
    with engine.begin() as conn:
        load_jobs(conn, [j for _, j in specs])
        by_task = dict(conn.execute(sa.select(job.c.task_id, job.c.id)).all())
        for name, j in specs:
            world.jobs[name] = by_task[j.task_id]
            world.task_ids[name] = j.task_id
        for index in range(4):
            world.push_ids[index] = find_push_id(conn, REPO, revision(index))
        for index in range(4):
            load_push_manifests(conn, world.push_ids[index], {}, TESTS)
        now = START + timedelta(hours=5)
        cases = [
            ("regression", "p3-bc", bc, "at least 2 of 3 retriggers reproduced a line", 0.97),
            ("not-eligible", "p3-win", bcw, "queue gecko-t/win11-64-24h2 not eligible", None),
        ]
        for verdict, name, label, rule, p in cases:
            world.cases[name] = conn.execute(
                triage_case.insert()
                .values(
                    job_id=world.jobs[name],
                    push_id=world.push_ids[3],
                    label=label,
                    state="decided",
                    verdict=verdict,
                    rule=rule,
                    policy="seed",
                    p_regression=p,
                    runs_wanted=6,
                    retriggers_requested=5 if verdict == "regression" else 0,
                    evidence={"lines": {FAILURE: 2}} if verdict == "regression" else None,
                    opened_at=now,
                    decided_at=now,
                    updated_at=now,
                )
                .returning(triage_case.c.id)
            ).scalar_one()
        for number, name in enumerate(["p3-bc", "p3-bc-r1", "p3-bc-r2", "p3-bc-r3"]):
            lines = [FAILURE] if name != "p3-bc-r3" else []
            conn.execute(
                run_observation.insert().values(
                    job_id=world.jobs[name],
                    treeherder_job_id=1000 + number,
                    parse_status="parsed",
                    errorsummary="present",
                    failure_lines=lines,
                    raw_failure_lines=lines,
                    structured_failures=[],
                    updated_at=now,
                )
            )
        push = world.push_ids
        at = now.isoformat()
        world.report_id = conn.execute(
            backfill_report.insert()
            .values(
                repository_id=1,
                push_id=push[3],
                job_id=world.jobs["p3-bc"],
                case_id=world.cases["p3-bc"],
                source="regression",
                label=bc,
                strategy="linear",
                same_manifests=True,
                tests=["dom/base/test/browser_a1.js"],
                failure_lines=[FAILURE],
                fail_rate=1.0,
                case_ids=[world.cases["p3-bc"]],
                status="culprit",
                culprit_push_id=push[2],
                culprit_revision=revision(2),
                opened_at=now,
                mature_at=now,
                closed_at=now,
                updated_at=now,
            )
            .returning(backfill_report.c.id)
        ).scalar_one()
        conn.execute(
            backfill_record.insert().values(
                report_id=world.report_id,
                job_id=world.jobs["p3-bc"],
                label=bc,
                platform=LINUX,
                option_collection="opt",
                tier=1,
                manifest_set_id=conn.execute(
                    sa.select(job.c.manifest_set_id).where(job.c.id == world.jobs["p3-bc"])
                ).scalar(),
                context={
                    "window": [push[i] for i in range(4)],
                    "outcomes": {
                        str(push[0]): "clean",
                        str(push[1]): "clean",
                        str(push[2]): "failing",
                        str(push[3]): "failing",
                    },
                    "requested": {
                        str(push[1]): [{"times": 2, "at": at}],
                        str(push[2]): [{"times": 1, "at": at}],
                    },
                    "untestable": [],
                },
                status="successful",
                actions_triggered=2,
                runs_successful=2,
                runs_failed=1,
                iterations=2,
                created_at=now,
                triggered_at=now,
                updated_at=now,
            )
        )
    return world


@pytest.fixture
def world(engine: Engine) -> World:
    return build_world(engine)


CULPRIT_AUTHOR = "ada@example.com"
CULPRIT_MESSAGE = "Bug 1234567 - Make browser_a1 count twice r=reviewer\n\nThe body of the message."


def add_regressions(engine: Engine, world: World) -> dict[str, int]:
    """On `build_world`'s data: the Linux regression (culprit push 2, its search the world's
    backfill report, one alert recorded), an older one merged into it, and one that stopped
    failing at push 3. Ids by name: open, merged, stopped."""
    from sheriff.actions.effects import enqueue_effect
    from sheriff.notify import ALERT

    at = START + timedelta(hours=5)
    p = world.push_ids
    common = {
        "repository_id": 1,
        "configurations": [f"{LINUX}/opt"],
        "opened_at": at,
        "updated_at": at,
    }
    with engine.begin() as conn:
        conn.execute(
            push.update()
            .where(push.c.id == p[2])
            .values(author=CULPRIT_AUTHOR, message=CULPRIT_MESSAGE)
        )

        def insert(**values: Any) -> int:
            return conn.execute(
                regression.insert().values(**common, **values).returning(regression.c.id)
            ).scalar_one()

        ids = {
            "open": insert(
                status="culprit",
                tests=["dom/base/test/browser_a1.js"],
                failure_lines=[FAILURE],
                labels=["test-linux1804-64-qr/opt-mochitest-browser-chrome-1"],
                first_push_id=p[3],
                last_push_id=p[3],
                culprit_push_id=p[2],
                culprit_revision=revision(2),
                backfill_report_id=world.report_id,
            ),
            "stopped": insert(
                status="stopped",
                tests=["layout/test/browser_b1.js"],
                failure_lines=["TEST-UNEXPECTED-FAIL | layout/test/browser_b1.js | timed out"],
                labels=["test-linux1804-64-qr/opt-mochitest-browser-chrome-2"],
                first_push_id=p[1],
                last_push_id=p[1],
                stopped_push_id=p[2],
            ),
        }
        ids["merged"] = insert(
            status="culprit",
            tests=["dom/base/test/browser_a2.js"],
            failure_lines=[],
            labels=["test-linux1804-64-qr/opt-mochitest-browser-chrome-1"],
            first_push_id=p[3],
            last_push_id=p[3],
            culprit_push_id=p[2],
            culprit_revision=revision(2),
            merged_into=ids["open"],
        )
        conn.execute(
            regression_case.insert().values(case_id=world.cases["p3-bc"], regression_id=ids["open"])
        )
        enqueue_effect(
            conn,
            f"alert:{ids['open']}:confirmed:log",
            ALERT,
            repository=REPO,
            revision=revision(3),
            input={"channel": "log", "event": "confirmed", "regression_id": ids["open"]},
            live=False,
            now=at,
        )
    return ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn serving an app on a loopback port, in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def offline_settings(**overrides: Any) -> Settings:
    """Settings that never reach the internet: Taskcluster on a closed loopback port."""
    values: dict[str, Any] = {
        "taskcluster_root_url": "http://127.0.0.1:9",
        "treeherder_url": "https://treeherder.example",
        "http_retries": 0,
        "http_timeout_seconds": 1.0,
        **overrides,
    }
    return load_settings(**values)


@pytest.fixture
def serve(engine: Engine) -> Iterator[Any]:
    """serve(**settings) → an httpx client on a live server of the engine's data."""
    servers: list[LiveServer] = []
    clients: list[httpx.Client] = []

    def start(**overrides: Any) -> httpx.Client:
        app = create_app(engine, offline_settings(**overrides), task_definition=task_definition)
        server = LiveServer(app)
        servers.append(server.__enter__())
        client = httpx.Client(base_url=server.url, timeout=10)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.close()
    for server in servers:
        server.__exit__()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's chromium, headless, driven by Playwright; skips (fails under CI) without it."""
    if CHROMIUM is None:
        reason = "Debian's chromium is not installed (apt-get install -y chromium)"
        if IN_CI:
            pytest.fail(f"{reason}; CI=true: the browser tests must run")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield browser
        browser.close()


@pytest.fixture
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a browser test saves screenshots: $SHERIFF_TEST_ARTIFACTS/<module>, else tmp."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    root = Path(os.environ.get("SHERIFF_TEST_ARTIFACTS", tmp_path)) / name
    root.mkdir(parents=True, exist_ok=True)
    return root


WIDTH = 1280  # the width every page must fit without scrolling sideways


class PageChecks:
    """What every page a browser test opens must pass: a screenshot kept as an artifact,
    no horizontal overflow at `WIDTH` px, and no serious or critical accessibility
    violation from axe-core run in the page. Problems are collected, not raised, so one
    test reports every page's."""

    def __init__(self, artifacts: Path) -> None:
        from axe_playwright_python.sync_playwright import Axe

        self.axe = Axe()
        self.artifacts = artifacts
        self.problems: list[str] = []
        self.checked: list[str] = []

    def __call__(self, page: Any, name: str) -> None:
        page.screenshot(path=self.artifacts / f"{name}.png", full_page=True)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > WIDTH:
            self.problems.append(f"{name}: {width} px wide")
        found = self.axe.run(page).response["violations"]
        self.problems += [
            f"{name}: {v['id']} ({v['impact']}): {v['help']}, {len(v['nodes'])} nodes"
            for v in found
            if v["impact"] in ("serious", "critical")
        ]
        self.checked.append(name)


@pytest.fixture
def page_checks(artifacts: Path) -> PageChecks:
    return PageChecks(artifacts)


@pytest.fixture(scope="module")
def played(played_database: str) -> Iterator[str]:
    """A live server over the database a play of small.yaml left behind."""
    from sheriff.store.db import open_database

    engine = open_database(played_database)
    with LiveServer(create_app(engine, offline_settings(), protocol_factory=None)) as server:
        yield server.url
    engine.dispose()


DAY_PUSHES = 24
DAY_BACKED_OUT_BY = 20


@pytest.fixture(scope="session")
def played_day(tmp_path_factory: pytest.TempPathFactory, scenarios_dir: Path) -> Iterator[str]:
    """A live server over the database a play of autoland-day.yaml's first pushes left (the
    default policy, as `sheriff sim run` plays it). The play takes minutes: once per session, for
    every test that needs it (they are marked `slow`, with a timeout that covers it)."""
    import yaml

    from sheriff.store.db import open_database
    from sheriff.triage.simrun import play

    # The first 24 of its 120 pushes: its platforms, suites and flakiness as in the whole
    # day, and its first regression (push 14) backed out at push 20 instead of 30, in a fifth
    # of the play's time (the whole day costs CI more than ten minutes).
    day = yaml.safe_load((scenarios_dir / "autoland-day.yaml").read_text())
    day["pushes"] = DAY_PUSHES
    day["regressions"] = [
        {**r, "fixed_at": min(r.get("fixed_at", DAY_BACKED_OUT_BY), DAY_BACKED_OUT_BY)}
        for r in day["regressions"]
        if r["push"] < DAY_BACKED_OUT_BY - 2
    ]
    folder = tmp_path_factory.mktemp("played-day")
    (folder / "autoland-day-start.yaml").write_text(yaml.safe_dump(day))
    url = f"sqlite:///{folder / 'sheriff.db'}"
    play(folder / "autoland-day-start.yaml", database_url=url)
    engine = open_database(url)
    with LiveServer(create_app(engine, offline_settings(), protocol_factory=None)) as server:
        yield server.url
    engine.dispose()


@pytest.fixture(scope="session")
def played_database(tmp_path_factory: pytest.TempPathFactory, scenarios_dir: Path) -> str:
    """URL of a SQLite database left by playing small.yaml (what `sheriff sim run` does)."""
    from sheriff.triage.simrun import play

    url = f"sqlite:///{tmp_path_factory.mktemp('played') / 'sheriff.db'}"
    play(scenarios_dir / "small.yaml", policy="seed", database_url=url)
    return url
