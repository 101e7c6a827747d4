"""README's newcomer commands and .ci/run stay in step."""

import re

from tests.conftest import ROOT


def _indented_commands(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^    (\S.*)$", text, re.M)]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    test_command = next(c for c in _indented_commands(readme) if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()
