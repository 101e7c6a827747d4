"""Hostile input to `sheriff ingest`: every refused file is one line on stderr and a
non-zero exit, leaves the database as it was, and no accepted file stores a value out of
range. Mutations of the real reference files (tests/data/treeherder/pulse), hand-picked
and drawn by hypothesis, through the command itself (in process, on the test's engine)."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sheriff.cli.ingest as ingest_commands
from sheriff.ci.artifacts import errorsummary_text
from sheriff.cli import main
from sheriff.errors import InputError
from sheriff.model.errorsummary import parse_errorsummary
from sheriff.store.schema import metadata
from tests.conftest import REFERENCE

PULSE = REFERENCE / "treeherder" / "pulse"
TASKS: dict[str, Any] = json.loads((PULSE / "taskcluster_tasks.json").read_text())
MESSAGES: dict[str, Any] = json.loads((PULSE / "taskcluster_pulse_messages.json").read_text())
TASK_ID = "A35mWTRuQmyj88yMnIF0fA"  # a real linux64-qr debug mochitest task
MESSAGE_ID = "A4AV9EXXREGCV-hVKT0blQ"
REVISION = "219d38523a321229f7f48aca6592f76b993fb1aa"
DEEP = "__nested_2000_deep__"  # replaced by 2,000 nested arrays in the file's text


class Sheriff:
    """`sheriff …` in this process, on the test's engine: (exit code, stdout, stderr)."""

    def __init__(self, engine: sa.Engine, capsys: pytest.CaptureFixture[str], tmp: Path):
        self.engine, self.capsys, self.tmp = engine, capsys, tmp

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = self.capsys.readouterr()
        return code, out, err

    def file(self, data: Any, name: str = "input.json", *, gz: bool = False) -> str:
        text = json.dumps(data).replace(json.dumps(DEEP), "[" * 2000 + "]" * 2000)
        path = self.tmp / name
        path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
        return str(path)


@pytest.fixture
def sheriff(
    engine: sa.Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch
) -> Iterator[Sheriff]:
    monkeypatch.setattr(ingest_commands, "_engine", lambda: engine)
    run = Sheriff(engine, capsys, tmp_path)
    code, _, err = run("ingest", "tasks", str(PULSE / "taskcluster_tasks.json"))
    assert code == 0, err
    yield run


def snapshot(engine: sa.Engine) -> dict[str, list[str]]:
    with engine.connect() as conn:
        return {
            t.name: sorted(repr(tuple(row)) for row in conn.execute(sa.select(t)))
            for t in metadata.sorted_tables
        }


_INT_RANGE = {sa.SmallInteger: 2**15, sa.Integer: 2**31, sa.BigInteger: 2**63}


def assert_nothing_out_of_range(engine: sa.Engine) -> None:
    """Every stored string fits its column, every integer its type: what PostgreSQL would
    refuse with a traceback and SQLite would keep."""
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(sa.select(table)).mappings():
                for column in table.columns:
                    value, kind = row[column.name], column.type
                    if isinstance(value, str) and getattr(kind, "length", None):
                        assert len(value) <= kind.length, (table.name, column.name, value[:50])
                    if isinstance(value, int) and not isinstance(value, bool):
                        bound = next(
                            (b for t, b in _INT_RANGE.items() if isinstance(kind, t)), 2**63
                        )
                        assert -bound <= value < bound, (table.name, column.name, value)
        tiers = set(conn.execute(sa.text("SELECT DISTINCT tier FROM job")).scalars())
        runs = set(conn.execute(sa.text("SELECT DISTINCT run_id FROM job")).scalars())
    assert tiers <= {1, 2, 3} and all(0 <= r <= 1000 for r in runs)


def assert_refused_or_sound(
    sheriff: Sheriff, before: dict[str, list[str]], result: tuple[int, str, str]
) -> None:
    code, _, err = result
    if code != 0:
        assert err.startswith("sheriff: error: ") and err.count("\n") == 1, err
        assert "Traceback" not in err
        assert snapshot(sheriff.engine) == before, "a refused file changed the database"
    else:
        assert err == "", err
    assert_nothing_out_of_range(sheriff.engine)


# -- the bullet list of the issue, and a few more -------------------------------------------


def _task(edit: Callable[[dict], Any]) -> dict[str, Any]:
    task = copy.deepcopy(TASKS[TASK_ID])
    edit(task)
    return {TASK_ID: task}


def _message(edit: Callable[[dict], Any]) -> dict[str, Any]:
    message = copy.deepcopy(MESSAGES[MESSAGE_ID])
    edit(message)
    return {MESSAGE_ID: message}


def _run0(message: dict) -> dict:
    return message["payload"]["status"]["runs"][message["payload"]["runId"]]


def _treeherder(**values: Any) -> dict[str, Any]:
    return _task(lambda t: t["extra"]["treeherder"].update(values))


def _routes(*routes: str) -> dict[str, Any]:
    return _task(lambda t: t.update(routes=list(routes)))


def _test_paths(value: str) -> dict[str, Any]:
    return _task(lambda t: t["payload"]["env"].update(MOZHARNESS_TEST_PATHS=value))


def _listing(status: dict[str, Any]) -> dict[str, Any]:
    return {"tasks": [{"task": TASKS[TASK_ID], "status": status}]}


HOSTILE_TASKS = {
    "created nope": _task(lambda t: t.update(created="nope")),
    "created a number": _task(lambda t: t.update(created=12345)),
    "created month 13": _task(lambda t: t.update(created="2019-13-26T19:13:51.402Z")),
    "tier abc": _treeherder(tier="abc"),
    "tier 99": _treeherder(tier=99),
    "tier true": _treeherder(tier=True),
    "symbol a list": _treeherder(symbol=["x"]),
    "job kind": _treeherder(jobKind="weird"),
    "platform too long": _treeherder(machine={"platform": "p" * 80}),
    "label too long": _task(lambda t: t["metadata"].update(name="x" * 300)),
    "pushlog id huge": _routes(f"tc-treeherder.v2.autoland.{REVISION}.99999999999999999999"),
    "revision with a slash": _routes("tc-treeherder.autoland.ab/cd"),
    "parent not a task id": _task(lambda t: t["extra"].update(parent="x" * 40)),
    "test paths not strings": _test_paths('{"a": [1]}'),
    "test paths deep": _test_paths("[" * 500 + "]" * 500),
    "deeply nested": {TASK_ID: DEEP},
    "nested in a field": _task(lambda t: t.update(extra=DEEP)),
    "1e400": "1e400",
    "a listing with runs ['x']": _listing({"taskId": TASK_ID, "runs": ["x"]}),
    "a listing with a bad task id": _listing({"taskId": "x" * 22}),
}

HOSTILE_MESSAGES = {
    "runId 1e400": "__raw__",
    "runId -1": _message(lambda m: m["payload"].update(runId=-1)),
    "runId a string": _message(lambda m: m["payload"].update(runId="0")),
    "runId true": _message(lambda m: m["payload"].update(runId=True)),
    "runId past the runs": _message(lambda m: m["payload"].update(runId=5)),
    "runs ['x']": _message(lambda m: m["payload"]["status"].update(runs=["x"])),
    "state bogus": _message(lambda m: _run0(m).update(state="bogus")),
    "resolved yesterday": _message(lambda m: _run0(m).update(resolved="yesterday")),
    "resolved 12345": _message(lambda m: _run0(m).update(resolved=12345)),
    "a run out of place": _message(lambda m: _run0(m).update(runId=3)),
    "exchange": _message(lambda m: m.update(exchange="exchange/elsewhere")),
    "deeply nested": {MESSAGE_ID: DEEP},
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TASKS))
def test_hostile_task_files_are_refused_in_one_line(sheriff: Sheriff, name: str) -> None:
    before = snapshot(sheriff.engine)
    data = HOSTILE_TASKS[name]
    path = sheriff.tmp / "hostile.json"
    if isinstance(data, str) and not data.startswith("__"):
        path.write_text(f'{{"{TASK_ID}": {data}}}')
    else:
        sheriff.file(data, "hostile.json")
    result = sheriff("ingest", "tasks", str(path))
    assert result[0] != 0, f"{name}: accepted"
    assert_refused_or_sound(sheriff, before, result)


@pytest.mark.parametrize("name", sorted(HOSTILE_MESSAGES))
def test_hostile_pulse_files_are_refused_in_one_line(sheriff: Sheriff, name: str) -> None:
    before = snapshot(sheriff.engine)
    data = HOSTILE_MESSAGES[name]
    if data == "__raw__":
        text = json.dumps({MESSAGE_ID: MESSAGES[MESSAGE_ID]}).replace(
            '"runId": 0', '"runId": 1e400'
        )
        path = sheriff.tmp / "hostile.json"
        path.write_text(text)
        file = str(path)
    else:
        file = sheriff.file(data, "hostile.json")
    result = sheriff("ingest", "pulse", file)
    assert result[0] != 0, f"{name}: accepted"
    assert_refused_or_sound(sheriff, before, result)


def test_hostile_manifest_files_are_refused_in_one_line(sheriff: Sheriff) -> None:
    for bad in ({"label": [1]}, {"l" * 300: ["a.toml"]}, {"label": ["m" * 2000]}, ["a"], DEEP):
        before = snapshot(sheriff.engine)
        file = sheriff.file(bad, "manifests.json")
        result = sheriff("ingest", "manifests", "--repo", "autoland", "--revision", REVISION, file)
        assert result[0] != 0, bad
        assert_refused_or_sound(sheriff, before, result)
    cut = sheriff.tmp / "cut.json.gz"
    whole = gzip.compress(json.dumps({f"label-{i}": [f"a{i}.toml"] for i in range(99)}).encode())
    cut.write_bytes(whole[: len(whole) // 2])
    before = snapshot(sheriff.engine)
    result = sheriff("ingest", "manifests", "--repo", "autoland", "--revision", REVISION, str(cut))
    assert result[0] == 1 and "gzip" in result[2]  # not the 130 of an "aborted" prompt
    assert_refused_or_sound(sheriff, before, result)


# -- drawn by hypothesis ------------------------------------------------------------------

HOSTILE_VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 3, 4, 1000, 1001, 32768, 2**31, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=40),
    st.sampled_from(
        ["", "x" * 300, "y" * 3000, "yesterday", "1e400", "2019-06-26T19:13:51.402Z",
         "2019-13-40T99:99:99Z", "bogus", "exception", "\x00", "A35mWTRuQmyj88yMnIF0fA",
         "tc-treeherder.v2.autoland.abc.1", "gecko-t/t-linux-large", DEEP]
    ),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=3),
)  # fmt: skip


def _paths(value: Any, prefix: tuple = (), depth: int = 6) -> list[tuple]:
    """Every place in a JSON value, to depth `depth`."""
    found = [prefix]
    if depth and isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key), depth - 1)
    elif depth and isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index), depth - 1)
    return found


def _mutated(data: st.DataObject, value: Any) -> Any:
    """`value` with one to three places replaced by a hostile value, or removed."""
    value = copy.deepcopy(value)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        places = [p for p in _paths(value) if p]
        if not places:
            break
        *parent_path, last = data.draw(st.sampled_from(places), label="place")
        parent = value
        for key in parent_path:
            parent = parent[key]
        if isinstance(parent, dict) and data.draw(st.booleans(), label="remove"):
            del parent[last]
        else:
            parent[last] = data.draw(HOSTILE_VALUES, label="value")
    return value


FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    database=None,
    suppress_health_check=list(HealthCheck),
)


@FUZZ
@given(data=st.data())
def test_fuzzed_task_definitions(sheriff: Sheriff, data: st.DataObject) -> None:
    task_id = data.draw(st.sampled_from(sorted(TASKS)[:12]), label="task")
    listing = data.draw(st.booleans(), label="as a listing")
    if listing:
        entry = {"task": TASKS[task_id], "status": MESSAGES[task_id]["payload"]["status"]}
        content: Any = {"tasks": [_mutated(data, entry)]}
    else:
        content = {task_id: _mutated(data, TASKS[task_id])}
    before = snapshot(sheriff.engine)
    result = sheriff("ingest", "tasks", sheriff.file(content, gz=data.draw(st.booleans())))
    event(
        "refused" if result[0] else "accepted"
    )  # both, in good shares (--hypothesis-show-statistics)
    assert_refused_or_sound(sheriff, before, result)


@FUZZ
@given(data=st.data())
def test_fuzzed_pulse_messages(sheriff: Sheriff, data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(MESSAGES)[:12]), label="message")
    content = {key: _mutated(data, MESSAGES[key])}
    before = snapshot(sheriff.engine)
    result = sheriff("ingest", "pulse", sheriff.file(content))
    event("refused" if result[0] else "accepted")
    assert_refused_or_sound(sheriff, before, result)


@FUZZ
@given(data=st.data())
def test_fuzzed_manifest_artifacts(sheriff: Sheriff, data: st.DataObject) -> None:
    label = TASKS[TASK_ID]["metadata"]["name"]
    by_label = _mutated(data, {label: ["dom/a/mochitest.toml", "dom/b/mochitest.toml"]})
    by_manifest = _mutated(data, {"dom/a/mochitest.toml": ["dom/a/test_x.html"]})
    before = snapshot(sheriff.engine)
    result = sheriff(
        "ingest", "manifests", "--repo", "autoland", "--revision", REVISION,
        sheriff.file(by_label, "m.json"), sheriff.file(by_manifest, "t.json.gz", gz=True),
    )  # fmt: skip
    event("refused" if result[0] else "accepted")
    assert_refused_or_sound(sheriff, before, result)


ERRORSUMMARIES = sorted((REFERENCE / "treeherder" / "logs").glob("*errorsummary*.log"))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    source=st.sampled_from(ERRORSUMMARIES),
    cut=st.integers(min_value=0, max_value=20_000),
    noise=st.binary(max_size=40),
    at=st.integers(min_value=0, max_value=20_000),
    gz=st.booleans(),
)
def test_fuzzed_errorsummary_bytes_are_read_or_refused(
    source: Path, cut: int, noise: bytes, at: int, gz: bool
) -> None:
    raw = source.read_bytes()
    raw = raw[: len(raw) - cut % max(1, len(raw))] if cut % 3 else raw
    raw = raw[:at] + noise + raw[at:]
    if gz:
        packed = gzip.compress(raw)
        raw = packed[: len(packed) - cut % 7]  # sometimes cut mid-stream
    try:
        text = errorsummary_text(raw)
    except InputError as exc:
        assert "\n" not in str(exc)  # a failed download: read again later, never evidence
        return
    summary = parse_errorsummary(text)  # read: complete or incomplete, never a crash
    assert summary.complete in (True, False)
