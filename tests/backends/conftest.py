"""Fixtures of the backend tests: one local Ray per test session (started on first use)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


@contextmanager
def module_from_file(source: Path, name: str) -> Iterator[ModuleType]:
    """``source`` imported under ``name`` as the launcher loads a formation file (in
    ``sys.modules``, but no import statement can find it); removed afterwards."""
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """A local Ray with 2 CPUs, started once for the session and shut down at its end
    (formations on it share it, and leave it running)."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(params=["threads", pytest.param("ray", marks=pytest.mark.ray)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend in turn (Ray tests need the ``ray`` extra; they are marked ``ray``)."""
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    name: str = request.param
    return name
