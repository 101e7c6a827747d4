"""A corrupt artifact is a failed download: the pass goes on, nothing wrong is stored, a
later pass reads it again, and the verdicts are those of a world without corruption."""

from __future__ import annotations

import gzip
from collections import Counter
from typing import Any

import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.ci.artifacts import errorsummary_text
from sheriff.sim.scenario import load_scenario
from sheriff.sim.server import SimServer
from sheriff.store import db
from sheriff.store.schema import job, job_type, push, run_observation, triage_case
from tests.triage.conftest import TINY, drive, make_triage

CORRUPTIONS = (
    b"\xff\xd8\xff\xe0\x00\x10JFIF garbage \x00\x01",  # binary: not UTF-8
    b'{"action": \x01\x02 not text}\n',  # UTF-8, but control characters
)


class CorruptFirstReads:
    """Clients whose first read of each artifact answers corrupt bytes, in turn: garbage,
    text with control characters, a truncated gzip stream of the real content."""

    def __init__(self, clients: Any) -> None:
        self._clients = clients
        self.reads: Counter[tuple[str, str]] = Counter()
        self.corrupted: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients, name)

    def latest_artifact(self, task_id: str, name: str) -> bytes:
        return self._first_read_corrupt(task_id, name, self._clients.latest_artifact(task_id, name))

    def artifact(self, task_id: str, run_id: int, name: str) -> bytes:
        real = self._clients.artifact(task_id, run_id, name)
        return self._first_read_corrupt(f"{task_id}/{run_id}", name, real)

    def _first_read_corrupt(self, key: str, name: str, real: bytes) -> bytes:
        self.reads[(key, name)] += 1
        if self.reads[(key, name)] > 1:
            return real
        kind = sum(self.corrupted.values()) % 3
        self.corrupted[name.rsplit("/", 1)[-1]] += 1
        if kind == 2:
            packed = gzip.compress(real)
            return packed[: max(10, len(packed) // 2)]
        return CORRUPTIONS[kind]


def _verdicts(engine) -> dict[tuple[str, str], str | None]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(push.c.revision, job_type.c.name, job.c.run_id, triage_case.c.verdict)
            .join(job, job.c.id == triage_case.c.job_id)
            .join(push, push.c.id == triage_case.c.push_id)
            .join(job_type, job_type.c.id == job.c.job_type_id)
        ).all()
    return {(r.revision, f"{r.name}#{r.run_id}"): r.verdict for r in rows}


def test_corrupt_artifacts_are_read_again_and_change_no_verdict(engine, tmp_path) -> None:
    clean_engine = db.open_database(f"sqlite:///{tmp_path / 'clean.db'}")
    with SimServer(load_scenario(TINY), port=0) as sim:
        drive(make_triage(clean_engine, sim), sim)
        clean = _verdicts(clean_engine)
    clean_engine.dispose()
    with SimServer(load_scenario(TINY), port=0) as sim:
        triage = make_triage(engine, sim)
        corrupt = CorruptFirstReads(triage.clients)
        triage.clients = corrupt
        triage.observer.clients = corrupt  # type: ignore[assignment]
        drive(triage, sim)
    assert corrupt.corrupted["manifests-by-task.json.gz"] > 0
    assert any("errorsummary" in name for name in corrupt.corrupted)
    # Every corrupt read was followed by a good one, and the verdicts are the clean world's.
    assert clean and _verdicts(engine) == clean
    with engine.connect() as conn:
        states = Counter(conn.execute(sa.select(run_observation.c.errorsummary)).scalars())
        requests = request_log.requests(conn)
    # A corrupt actions.json made no request fail: it waited for a pass that could read it.
    assert requests and {r.state for r in requests} == {"sent"}
    assert corrupt.corrupted["actions.json"] > 0
    assert states["incomplete"] == 0 or states["incomplete"] == sum(
        1 for v in clean.values() if v == "infra"
    )


def test_errorsummary_text_tells_a_broken_download_from_an_incomplete_file(reference) -> None:
    real = (reference / "treeherder/logs/mochitest-browser-chrome_errorsummary.log").read_bytes()
    assert errorsummary_text(real) == real.decode()
    assert errorsummary_text(gzip.compress(real)) == real.decode()
    cut = real[: len(real) // 2]
    assert errorsummary_text(cut) == cut.decode("utf-8", "ignore")  # read: incomplete, evidence
    for broken in (*CORRUPTIONS, gzip.compress(real)[:40], b"\x1f\x8b" + b"\x00" * 30):
        try:
            errorsummary_text(broken)
        except Exception as exc:
            assert type(exc).__name__ == "InputError" and "\n" not in str(exc)
        else:
            raise AssertionError(f"{broken[:20]!r} was taken for an errorsummary")
