"""Fixtures of the backend tests: one local Ray per test session (started on first use)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


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
