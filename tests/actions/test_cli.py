"""Every protocol failure reaches the command line as one line and a non-zero exit.

The commands run in-process on the in-memory Taskcluster of conftest.py (the real
reference actions.json); tests/actions/test_e2e_sim.py runs them as processes against
the simulator.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sheriff.actions.protocol import ActionsProtocol
from sheriff.cli import main
from sheriff.config import settings
from tests.actions.conftest import DECISION, ORIGINAL, FakeClients, FakeTaskcluster


@pytest.fixture
def cli(
    world: FakeTaskcluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., int]]:
    import sheriff.cli.actions as commands

    monkeypatch.setenv("SHERIFF_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("TASKCLUSTER_CLIENT_ID", "sheriff-dev")
    monkeypatch.setenv("TASKCLUSTER_ACCESS_TOKEN", "sheriff-dev-token")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        commands, "_protocol", lambda live=False: ActionsProtocol(FakeClients(world))
    )
    settings.cache_clear()

    def run(*args: str) -> int:
        """The exit code; the output is in the caller's capsys."""
        try:
            main(list(args))
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    yield run
    settings.cache_clear()


def _edit_actions(world: FakeTaskcluster, edit: Callable[[dict], None]) -> None:
    data = json.loads(world.artifacts[(DECISION, "public/actions.json")])
    edit(data)
    world.artifacts[(DECISION, "public/actions.json")] = json.dumps(data).encode()


def _set_kind(kind: str) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        for action in data["actions"]:
            action["kind"] = kind

    return edit


def _drop_retrigger(data: dict) -> None:
    data["actions"] = [a for a in data["actions"] if a["name"] != "retrigger"]


BREAKAGES: list[tuple[str, Callable[[FakeTaskcluster], None], str]] = [
    ("no decision task", lambda w: w.index.clear(), "no decision task for autoland c7766d0b4a12"),
    (
        "actions.json missing",
        lambda w: w.artifacts.clear(),
        "has no public/actions.json",
    ),
    (
        "actions.json malformed",
        lambda w: w.artifacts.update({(DECISION, "public/actions.json"): b"[1, 2"}),
        "public/actions.json of",
    ),
    (
        "wrong version",
        lambda w: _edit_actions(w, lambda d: d.update(version=3)),
        "has version 3; sheriff reads version 1",
    ),
    ("no matching action", lambda w: _edit_actions(w, _drop_retrigger), "no action 'retrigger'"),
    ("not a hook", lambda w: _edit_actions(w, _set_kind("task")), "kind 'task'"),
    ("scopes", lambda w: w.roles.clear(), "lacks scope in-tree:hook-action:project-gecko/"),
    ("hook refused", lambda w: w.hook_failures.append(400), "refused: POST triggerHook: HTTP 400"),
    (
        "hook down",
        lambda w: w.hook_failures.extend([503] * 3),
        "failed: POST triggerHook: HTTP 503",
    ),
]


@pytest.mark.parametrize(
    ("breakage", "message"), [(b, m) for _, b, m in BREAKAGES], ids=[n for n, _, _ in BREAKAGES]
)
def test_each_failure_is_one_line_and_non_zero(
    cli, world: FakeTaskcluster, capsys: pytest.CaptureFixture[str], breakage, message: str
) -> None:
    breakage(world)
    code = cli("retrigger", ORIGINAL, "--times", "2", "--live")
    err = capsys.readouterr().err
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sheriff: error: "), err
    assert message in lines[0]
    assert world.action_task_count() == 0


def test_live_sends_once_and_dry_run_sends_nothing(
    cli, world: FakeTaskcluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("retrigger", ORIGINAL, "--times", "3") == 0
    assert "dry run: would trigger hook" in capsys.readouterr().out
    assert world.triggered == []
    assert cli("retrigger", ORIGINAL, "--times", "3", "--live") == 0
    assert "sent, action task ACTION_TASK_" in capsys.readouterr().out
    assert cli("retrigger", ORIGINAL, "--times", "3", "--live") == 0
    assert "already sent" in capsys.readouterr().out
    assert cli("retrigger", ORIGINAL, "--times", "3", "--live", "--key", "again") == 0
    assert len(world.triggered) == 2


def test_a_failed_request_is_tried_again_by_hand(
    cli, world: FakeTaskcluster, capsys: pytest.CaptureFixture[str]
) -> None:
    world.hook_failures.append(400)
    assert cli("retrigger", ORIGINAL, "--live") != 0
    assert cli("retrigger", ORIGINAL, "--live") == 0
    assert "sent, action task" in capsys.readouterr().out
    assert world.action_task_count() == 1


def test_actions_lists_the_reference_actions(cli, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("actions", ORIGINAL, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["decisionTaskId"] == DECISION
    names = [a["name"] for a in shown["actions"]]
    assert names[0] == "retrigger"
    assert "retrigger-custom" not in names  # it is for mochitest and reftest, not raptor
    assert "geckoprofile" in names  # for talos and raptor
    assert "retrigger-multiple" not in names  # push-level
    assert cli("actions", ORIGINAL, "--push", "--json") == 0
    push_names = [a["name"] for a in json.loads(capsys.readouterr().out)["actions"]]
    assert "retrigger-multiple" in push_names
