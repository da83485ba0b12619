"""Identifiers and timestamps of stored records: ULIDs and RFC 3339 UTC times.

Example:
    >>> from wingman_actors.server._ids import new_id, now
    >>> len(new_id())
    26
    >>> now().endswith("Z")
    True
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

from ulid import ULID

__all__ = ["new_id", "now", "rfc3339"]


def new_id() -> str:
    """A new ULID: 26 Crockford base32 characters, sortable by creation time."""
    return str(ULID())


def now() -> str:
    """The current UTC time in RFC 3339, to the second: ``2026-04-25T10:00:00Z``."""
    return _text_of(time.time_ns() // 1_000_000_000) + "Z"  # (datetime.now() truncates to the second too)


def rfc3339(timestamp: float | None) -> str | None:
    """Wall-clock seconds as RFC 3339 UTC to the millisecond (``2026-04-25T10:00:00.250Z``);
    None stays None."""
    if timestamp is None:
        return None
    # datetime.fromtimestamp's rounding (to the microsecond, half to even), then the
    # second's text made once per second: what isoformat() gives, several times faster
    fraction, whole = math.modf(timestamp)
    micros = round(fraction * 1e6)
    second = int(whole)
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    elif micros < 0:
        second, micros = second - 1, micros + 1_000_000
    if not 0 <= second < _YEAR_10000:
        return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return f"{_text_of(second)}.{micros // 1000:03d}Z"


_YEAR_10000 = 253402300800
_second = (0, "1970-01-01T00:00:00")  # the last second written (replaced whole: thread-safe)


def _text_of(second: int) -> str:
    """``second`` (since the epoch, in years 1970-9999) as ``2026-04-25T10:00:00``, made
    once per second."""
    global _second
    known = _second
    if known[0] != second:
        known = _second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return known[1]
