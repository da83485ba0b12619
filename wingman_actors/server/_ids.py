"""Identifiers and timestamps of stored records: ULIDs and RFC 3339 UTC times.

Example:
    >>> from wingman_actors.server._ids import new_id, now
    >>> len(new_id())
    26
    >>> now().endswith("Z")
    True
"""

from __future__ import annotations

from datetime import UTC, datetime

from ulid import ULID

__all__ = ["new_id", "now", "rfc3339"]


def new_id() -> str:
    """A new ULID: 26 Crockford base32 characters, sortable by creation time."""
    return str(ULID())


def now() -> str:
    """The current UTC time in RFC 3339, to the second: ``2026-04-25T10:00:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(timestamp: float | None) -> str | None:
    """Wall-clock seconds as RFC 3339 UTC to the millisecond (``2026-04-25T10:00:00.250Z``);
    None stays None."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
