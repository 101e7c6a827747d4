"""The usage examples in the model's docstrings run as written."""

from __future__ import annotations

import doctest

import pytest

from sheriff.model import bugs, case, policy


@pytest.mark.parametrize("module", [policy, case, bugs], ids=lambda m: m.__name__)
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0
