"""A clone with nothing beside it carries every file its tests and the simulator need."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Tests that read the reference data, the bundled scenarios and the simulator.
SAMPLE = [
    "tests/model/test_errorsummary.py",
    "tests/model/test_actions.py",
    "tests/model/test_job.py",
    "tests/sim/test_scenario.py",
    "tests/contract/test_formats.py",
    "tests/cli/test_ingest_cli.py",
]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    alone = tmp_path_factory.mktemp("alone")
    target = alone / "sheriff"
    subprocess.run(
        ["git", "clone", "--quiet", "--depth", "1", f"file://{ROOT}", str(target)],
        check=True,
        capture_output=True,
    )
    assert sorted(p.name for p in alone.iterdir()) == ["sheriff"]  # nothing beside it
    return target


def _in(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The clone's own sources come first, ahead of the editable install of this checkout.
    env = {**os.environ, "PYTHONPATH": str(clone / "src") + os.pathsep + str(clone)}
    return subprocess.run(
        [sys.executable, *args], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )


def test_a_sample_of_the_suite_passes_in_a_lone_clone(clone: Path) -> None:
    where = _in(clone, "-c", "import sheriff, tests; print(sheriff.__file__, tests.__file__)")
    assert where.stdout.split() == [
        str(clone / "src/sheriff/__init__.py"),
        str(clone / "tests/__init__.py"),
    ]
    # One process: this test already runs beside the rest of the suite's workers.
    result = _in(clone, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *SAMPLE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout


def test_the_bundled_scenarios_play_in_a_lone_clone(clone: Path) -> None:
    result = _in(clone, "-m", "sheriff", "sim", "serve", "--help")
    assert result.returncode == 0
    loaded = _in(
        clone,
        "-c",
        "from sheriff.sim.scenario import load_scenario as l; "
        "print(l('small').name, l('autoland-day').name)",
    )
    assert loaded.returncode == 0, loaded.stderr
    assert len(loaded.stdout.split()) == 2


# The sibling folder the project's data came from, named in parts so that this file is
# not itself a mention of it.
BESIDE = "/".join(("..", "shared"))


def test_nothing_refers_to_a_folder_beside_the_repository() -> None:
    suffixes = {".py", ".md", ".toml", ".yaml", ".html", ".js"}
    mentions = [
        str(path.relative_to(ROOT))
        for top in ("src", "tests", "docs", "benchmarks", ".ci")
        for path in (ROOT / top).rglob("*")
        if path.suffix in suffixes and BESIDE in path.read_text(errors="replace")
    ]
    readme = (ROOT / "README.md").read_text()
    assert mentions == [] and BESIDE not in readme
