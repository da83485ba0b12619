"""Launcher tests run with no provider configured in the environment, from the repository
root, and leave ``sys.path`` as they found it."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_ENV = ("ANTHROPIC_API_KEY", "WINGMAN_PROVIDER", "WINGMAN_MODEL", "WINGMAN_BASE_URL")


@pytest.fixture(autouse=True)
def _clean_launcher_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in _ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.fixture
def formation_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """``formation_file(name, source)`` writes a formation module into tmp_path."""

    def write(name: str, source: str) -> Path:
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        return path

    return write
