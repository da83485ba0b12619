"""The data behind the bundled sample statement, read from formations/data/make_statement.py."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
STATEMENT = ROOT / "formations" / "data" / "statement.pdf"


@cache
def make_statement() -> ModuleType:
    """formations/data/make_statement.py, imported by path (data/ is not a package)."""
    spec = importlib.util.spec_from_file_location("make_statement", ROOT / "formations" / "data" / "make_statement.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transactions() -> list[tuple[str, str, float]]:
    """(date, description, amount) of every transaction in the sample statement."""
    return list(make_statement().TRANSACTIONS)


def income() -> float:
    return round(sum(a for _, _, a in transactions() if a > 0), 2)


def spending() -> float:
    return round(-sum(a for _, _, a in transactions() if a < 0), 2)
