"""What a new user meets first: usage, --version, and bad input refused in one line, before
anything is created, deleted or asked of the network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SHERIFF = [sys.executable, "-m", "sheriff"]
SLUGID = "Quz_6cklT520K0_YuFUv2g"


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TASKCLUSTER_", "SHERIFF_"))}
    # Nothing here may reach a network: a request to this root URL fails at once.
    clean["TASKCLUSTER_ROOT_URL"] = "http://127.0.0.1:9"
    clean["SHERIFF_TREEHERDER_URL"] = "http://127.0.0.1:9"
    return subprocess.run(
        [*SHERIFF, *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


REFUSED = [
    (["triage", "--policy", "bogus"], {}, "unknown triage policy 'bogus'"),
    (["triage", "--since", "soon"], {}, "not a duration"),
    (["triage", "--now", "yesterday"], {}, "not an ISO 8601 time"),
    (["triage", "--now", "2026-11-02T08:00:00Z", "--every", "10m"], {}, "--now and --every"),
    (["triage"], {"SHERIFF_BACKFILL_STRATEGY": "nope"}, "unknown backfill strategy 'nope'"),
    (["triage"], {"SHERIFF_POLICY": "bogus"}, "invalid setting policy"),
    (["sim", "run", "--scenario", "small", "--backfill", "nope"], {}, "'nope'"),
    (["sim", "run", "--scenario", "small"], {"SHERIFF_BACKFILL_STRATEGY": "x"}, "strategy 'x'"),
    (["sim", "run", "--scenario", "nope"], {}, "bundled: autoland-day, small"),
    (["sim", "run", "--scenario", "small", "--policy", "bogus"], {}, "policy 'bogus'"),
    (["sim", "run", "--scenario", "small", "--json", "no/such/out.json"], {}, "existing folder"),
    (["sim", "worlds", "--count", "1", "--seed", "1", "--out", "/dev/null/w"], {}, "/dev/null/w"),
    (["demo", "--policy", "bogus"], {}, "unknown triage policy 'bogus'"),
    (["retrigger", "notaslugid"], {}, "'notaslugid' is not a Taskcluster task id"),
    (["actions", "notaslugid"], {}, "'notaslugid' is not a Taskcluster task id"),
    (["backfill", "notaslugid"], {}, "is not a task id"),
    (["backfill", SLUGID, "--strategy", "nope"], {}, "unknown backfill strategy 'nope'"),
    (["backfill", "status", "--status", "nope"], {}, "unknown report status"),
    (["cycle", "--days", "0"], {}, "greater than or equal to 1"),
    (["ingest", "tasks", "absent.json"], {}, "absent.json"),
    (["ingest", "manifests", "absent.json", "--repo", "r", "--revision", "a"], {}, "absent.json"),
    (["serve", "--port", "70000"], {}, "less than or equal to 65535"),
    (["db", "upgrade"], {"SHERIFF_DATABASE_URL": "postgresql://bob:s3cret@:x/db"}, "bob:***@"),
]


@pytest.mark.parametrize(
    ("args", "env", "message"), REFUSED, ids=[" ".join(a) for a, _, _ in REFUSED]
)
def test_refused_in_one_line_creating_nothing(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    result = _run(args, tmp_path, **env)
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sheriff: error: "), result.stderr
    assert message in lines[0]
    assert "s3cret" not in result.stderr + result.stdout
    assert list(tmp_path.iterdir()) == []  # no empty sheriff.db, no demo database


def test_a_refused_demo_keeps_the_last_demo_database(tmp_path: Path) -> None:
    (tmp_path / "sheriff-demo.db").write_bytes(b"the last demo")
    result = _run(["demo", "--policy", "bogus"], tmp_path)
    assert result.returncode != 0
    assert (tmp_path / "sheriff-demo.db").read_bytes() == b"the last demo"


def test_sheriff_alone_prints_its_usage_as_help_does(tmp_path: Path) -> None:
    alone = _run([], tmp_path)
    helped = _run(["--help"], tmp_path)
    assert alone.returncode == 2 and helped.returncode == 0
    assert alone.stderr.strip() == helped.stdout.strip()
    assert alone.stderr.count("\n") > 10  # the usage, not one squashed line
    commands = [
        line.split()[0]
        for line in helped.stdout.split("Commands:")[1].splitlines()
        if line.startswith("  ")
    ]
    assert commands == sorted(commands) and {"demo", "triage", "sim", "backfill"} <= set(commands)
    assert list(tmp_path.iterdir()) == []


def test_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    result = _run(["--version"], tmp_path)
    assert result.returncode == 0 and result.stdout == f"sheriff {version('sheriff')}\n"


def test_once_does_not_call_itself_the_default(tmp_path: Path) -> None:
    text = _run(["triage", "--help"], tmp_path).stdout
    assert "(the default)" not in text and "--now" in text
