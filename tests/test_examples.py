"""Every script in examples/ runs offline, exits 0 and prints something."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def test_there_is_an_example_per_major_feature() -> None:
    assert len(EXAMPLES) >= 13, [p.name for p in EXAMPLES]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, f"{path.name} exited with {proc.returncode}:\n{proc.stderr}"
    assert proc.stdout.strip(), f"{path.name} printed nothing; stderr:\n{proc.stderr}"
