"""Fixtures of the formation tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event]]:
    """``(entered, release)`` for a node held until the test releases it: the held code
    sets ``entered`` and waits on ``release``, which is set when the test ends, pass or
    fail, so no thread outlives it. (tests/formation/test_nesting.py has a ``gate`` of its
    own, of another shape, which overrides this one there.)"""
    entered, release = threading.Event(), threading.Event()
    try:
        yield entered, release
    finally:
        release.set()
