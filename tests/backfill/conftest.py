"""A tiny CI for backfill tests: pushes, runs with failure lines, and a fake action sender.

`FakeCI` plays what Gecko's actions would do with the requests the engine enqueues: it
creates the backfilled runs on the right pushes, each failing or passing by a known
culprit push and failure rate, with a run observation as triage would have stored it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from sheriff.model.job import job_from_task
from sheriff.store.loader import load_jobs
from sheriff.store.schema import job, run_observation, triage_case
from tests.factories import make_task, named_task_id, new_task_id

START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
LABEL = "test-linux1804-64-qr/opt-mochitest-browser-chrome-1"
SUITE = "mochitest-browser-chrome"  # the MOZHARNESS_TEST_PATHS key of LABEL's tasks
A, B, C, D = "a/browser.toml", "b/browser.toml", "c/browser.toml", "d/browser.toml"
TEST = "a/browser_regressed.js"
LINE = f"TEST-UNEXPECTED-FAIL | {TEST} | expected true, got false"
NOISE = "TEST-UNEXPECTED-TIMEOUT | d/browser_flaky.js | timed out"
# A crash between tests: no TEST-UNEXPECTED line, the process id where the test would be.
CRASH = "PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + <ptr>] | pid: <pid>"


def crash_seen(rng: random.Random) -> list[str]:
    """One run's raw crash line, as Treeherder shows it: its own pointer and pid."""
    offset, pid = rng.getrandbits(20), rng.randrange(1000, 60000)
    return [f"PROCESS-CRASH | application crashed [@ mozilla::dom::Foo::Bar + 0x{offset:x}]"
            f" | pid: {pid}"]  # fmt: skip


PLATFORM = "linux1804-64-qr"


def label_on(platform: str) -> str:
    """The label's name on another machine platform (LABEL on the default one)."""
    return LABEL.replace(PLATFORM, platform)


def revision(index: int) -> str:
    return f"{index:040x}"


@dataclass
class FakeCI:
    """Pushes 0..n-1 of one repository, a regression at `culprit` failing at `rate`."""

    engine: sa.Engine
    pushes: int = 30
    culprit: int = 11
    rate: float = 1.0
    seed: int = 1
    crash: bool = False  # the regression crashes between tests instead of failing LINE
    # (push, line): a second regression of the same manifest, from that push on, failing
    # beside the first one in every run it fails
    second: tuple[int, str] | None = None
    # platform → (push, line): the label on another platform fails that line in every run
    # from that push on, and nothing else
    elsewhere: dict[str, tuple[int, str]] = field(default_factory=dict)
    sent: list[dict[str, Any]] = field(default_factory=list)
    created_runs: int = 0
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- history -------------------------------------------------------------------------

    def chunk(self, index: int) -> list[str]:
        """Dynamic chunking: the label runs A only on even pushes."""
        return [A, B] if index % 2 == 0 else [C, D]

    def fails(self, index: int, manifests: list[str], platform: str = PLATFORM) -> bool:
        if platform in self.elsewhere:
            return index >= self.elsewhere[platform][0]
        return A in manifests and index >= self.culprit and self.rng.random() < self.rate

    def _shown(self, index: int, platform: str) -> list[str]:
        """The lines a failing run on `index` shows."""
        if platform in self.elsewhere:
            return [self.elsewhere[platform][1]]
        also = [self.second[1]] if self.second and index >= self.second[0] else []
        return [LINE, *also]

    def _job(
        self,
        index: int,
        manifests: list[str],
        action: str | None,
        failed: bool,
        state: str,
        platform: str = PLATFORM,
    ) -> Any:
        task = make_task(
            revision=revision(index),
            pushlog_id=index + 1,
            label=label_on(platform),
            platform=platform,
            manifests=manifests,
            action=action,
            created=(START + timedelta(minutes=12 * index)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            task_group_id=named_task_id(f"decision {index}"),
        )
        task_id = new_task_id()
        self.definitions[task_id] = task
        run: dict[str, Any] | None = None
        if state == "completed":
            run = {"runId": 0, "state": "failed" if failed else "completed"}
        elif state == "running":
            run = {"runId": 0, "state": "running"}
        return job_from_task(task_id, task, 0, run)

    def definition(self, task_id: str) -> dict[str, Any]:
        """`queue.task`: what the backfill engine reads the original's manifests from."""
        return self.definitions[task_id]

    def add_runs(
        self, runs: list[tuple[int, list[str], str | None]], platform: str = PLATFORM
    ) -> list[int]:
        """Completed runs (push index, manifests, action) in one transaction; their job ids."""
        jobs, shown = [], []
        for index, manifests, action in runs:
            failed = self.fails(index, manifests, platform)
            jobs.append(self._job(index, manifests, action, failed, "completed", platform))
            shown.append(self._shown(index, platform) if failed else None)
        with self.engine.begin() as conn:
            load_jobs(conn, jobs)
            ids = dict(
                conn.execute(
                    sa.select(job.c.task_id, job.c.id).where(
                        job.c.task_id.in_([j.task_id for j in jobs])
                    )
                ).all()
            )
            observations = [
                {"job_id": ids[j.task_id], "parse_status": "parsed", **self._lines(lines)}
                for j, lines in zip(jobs, shown, strict=True)
                if lines is not None
            ]
            if observations:
                conn.execute(sa.insert(run_observation).values(updated_at=START), observations)
        return [ids[j.task_id] for j in jobs]

    def add_run(
        self,
        index: int,
        manifests: list[str],
        *,
        action: str | None = None,
        failed: bool | None = None,
        state: str = "completed",
        lines: list[str] | None = None,
        observed: bool = True,
        platform: str = PLATFORM,
    ) -> int:
        failed = self.fails(index, manifests, platform) if failed is None else failed
        record = self._job(index, manifests, action, failed, state, platform)
        with self.engine.begin() as conn:
            load_jobs(conn, [record])
            job_id = conn.execute(
                sa.select(job.c.id).where(job.c.task_id == record.task_id)
            ).scalar_one()
            if failed and state == "completed" and observed:
                conn.execute(
                    sa.insert(run_observation).values(
                        job_id=job_id,
                        parse_status="parsed",
                        **self._lines(lines if lines is not None else [LINE]),
                        updated_at=START,
                    )
                )
        return job_id

    def _lines(self, lines: list[str]) -> dict[str, Any]:
        """A failed run's observed lines: `lines`, or in a crash world its crash alone
        (the TEST-UNEXPECTED lines empty, the raw PROCESS-CRASH line kept)."""
        if not self.crash or LINE not in lines:
            return {"failure_lines": lines, "raw_failure_lines": lines}
        return {"failure_lines": [], "raw_failure_lines": crash_seen(self.rng)}

    def history(self) -> None:
        """One scheduled run of the label per push."""
        self.add_runs([(index, self.chunk(index), None) for index in range(self.pushes)])

    def regression_case(
        self,
        index: int,
        retriggers: int = 5,
        platform: str = PLATFORM,
        lines: list[str] | None = None,
    ) -> int:
        """A failed original on push `index` with its retriggers, and its regression case;
        with `lines`, the original and every retrigger failed those."""
        shown = lines or [LINE, NOISE]
        job_id = self.add_run(index, [A, B], failed=True, lines=shown, platform=platform)
        for _ in range(retriggers):
            failed = True if lines else None
            self.add_run(
                index, [A, B], action="retrigger", failed=failed, lines=lines, platform=platform
            )
        with self.engine.begin() as conn:
            push_id = conn.execute(sa.select(job.c.push_id).where(job.c.id == job_id)).scalar()
            return conn.execute(
                sa.insert(triage_case)
                .values(
                    job_id=job_id,
                    push_id=push_id,
                    label=label_on(platform),
                    state="decided",
                    verdict="regression",
                    policy="seed",
                    opened_at=START,
                    updated_at=START,
                )
                .returning(triage_case.c.id)
            ).scalar_one()

    # -- the actions Gecko would run ---------------------------------------------------------

    def enqueue(self, conn: sa.Connection, key: str, strategy_name: str, **kw: Any) -> None:
        if any(s["key"] == key for s in self.sent):
            return
        self.sent.append({"key": key, "strategy": strategy_name, **kw})

    def run_requests(self) -> None:
        """Create the runs for every request not yet played."""
        for request in self.sent:
            if request.get("played"):
                continue
            request["played"] = True
            inp = request["input"]
            if request["strategy"] == "backfill":
                origin = int(request["revision"], 16)
                # Gecko's backfill runs the original task's manifests.
                runs = [
                    (index, [A, B], "backfill-task")
                    for index in range(origin - 1, max(-1, origin - inp["depth"] - 1), -1)
                    for _ in range(inp["times"])
                ]
            else:
                index = int(request["revision"], 16)
                # mozharness: the suite's entry of the object, else the default tests.
                paths = inp.get("test_manifests")
                chosen = paths.get(SUITE) if isinstance(paths, dict) else None
                manifests = list(chosen or self.chunk(index))
                runs = [(index, manifests, "backfill-task")] * inp["times"]
            label = (request.get("labels") or [LABEL])[0]
            self.add_runs(runs, platform=label[len("test-") : label.index("/")])
            self.created_runs += len(runs)


@pytest.fixture
def ci(engine: sa.Engine) -> FakeCI:
    return FakeCI(engine)
