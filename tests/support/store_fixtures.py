"""Store fixtures shared by the run-store and durable-run tests: a store on a temporary
file, closed after the test. Import them into a conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors.store import RunStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[RunStore]:
    with RunStore(path) as s:
        yield s
