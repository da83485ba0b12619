"""The file tree tells API from internals (DESIGN, "Dependencies and packaging"): a module
with a public name is part of the product's surface, so adding one is a decision made here;
every other module has a ``_``-prefixed name or lives in a ``_``-prefixed package. And no
module grows past what one reader can hold (STYLE 1)."""

from __future__ import annotations

from pathlib import Path

import wingman_actors

PACKAGE = Path(wingman_actors.__file__).parent
MAX_LINES = 600

PUBLIC = {
    "__init__.py", "__main__.py", "cli.py", "core.py", "errors.py", "events.py", "pytest_plugin.py", "testing.py",
    "actors/__init__.py", "agents/__init__.py", "backends/__init__.py", "formation/__init__.py",
    "formation/events.py", "integrations/__init__.py", "integrations/mcp/__init__.py", "integrations/otel.py",
    "orchestration/__init__.py", "providers/__init__.py", "server/__init__.py", "store/__init__.py",
    "tools/__init__.py",
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _is_public(path: Path) -> bool:
    parts = path.relative_to(PACKAGE).parts
    return not any(p.startswith("_") and p not in ("__init__.py", "__main__.py") for p in parts)


def test_every_module_with_a_public_name_is_one_the_api_lists() -> None:
    public = {p.relative_to(PACKAGE).as_posix() for p in _modules() if _is_public(p)}
    assert public == PUBLIC, (
        f"new public-named modules {sorted(public - PUBLIC)} (prefix internal ones with '_'); "
        f"gone {sorted(PUBLIC - public)}")
    assert len(PUBLIC) <= 45


def test_every_package_has_an_init() -> None:
    folders = {p.parent for p in _modules()}
    assert [f for f in folders if not (f / "__init__.py").exists()] == []


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    long = {p.relative_to(PACKAGE).as_posix(): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these modules (over {MAX_LINES} lines): {long}"
