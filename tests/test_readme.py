"""Every ```python block of README.md runs, in order, each in a fresh namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    code = compile(BLOCKS[index], f"README.md[python block {index}]", "exec")
    exec(code, {"__name__": f"readme_block_{index}"})
