"""Small values both stores share: the URL schemes of PostgreSQL, durations given as
timedeltas or seconds, and generated run ids."""

from __future__ import annotations

import datetime
import itertools
import math
import time
import uuid
from typing import Any

__all__ = ["POSTGRES_SCHEMES", "new_run_id", "duration"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""The URL schemes ``RunStore`` opens on PostgreSQL."""


def duration(value: Any, name: str, *, allow_none: bool) -> float | None:
    """``value`` (a timedelta or a number of seconds >= 0, or None if allowed) in seconds.

    Raises:
        ValueError: naming ``name`` and what it takes.
    """
    if value is None and allow_none:
        return None
    given = value
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"RunStore: {name} must be a datetime.timedelta or a number of seconds >= 0"
                         f"{' or None' if allow_none else ''}, got {given!r}")
    return float(value)


_RUN_PREFIX = uuid.uuid4().hex[:8]
_RUN_COUNTER = itertools.count()


def new_run_id() -> str:
    """32 hex digits: the time in microseconds, a per-process random prefix and a counter.
    Ids made later sort later, so new rows are appended to the tables' B-trees instead of
    landing on random pages (fewer pages written per commit)."""
    return f"{time.time_ns() // 1000:014x}{_RUN_PREFIX}{next(_RUN_COUNTER) % 16**10:010x}"
