"""The one check of every time limit the library takes: a node's ``timeout`` (the builders and
hand-built graphs), a run's (``run``, ``submit``, ``arun``, ``astream``, ``resume``, ``fork``,
``RunOptions``), a session's (``Session.run``, ``arun``, ``resume``), a fleet's and
``testing.run_node``'s.

A limit is a number of seconds > 0, or a ``datetime.timedelta`` of them (as Temporal's and
Hatchet's SDKs take; read as its ``total_seconds()``); ``None`` and ``math.inf`` both mean no
limit, and are both read as ``None``, so no timer, wait or deadline ever meets an infinite number (``Lock.acquire``
and ``Event.wait`` refuse one). NaN, zero, a negative number and anything that is no number are
refused, naming the parameter and what fits.

Example:
    >>> import math
    >>> from datetime import timedelta
    >>> limit("timeout", 2.5), limit("timeout", timedelta(minutes=1)), limit("timeout", math.inf), limit("timeout", None)
    (2.5, 60.0, None, None)
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

__all__ = ["FITS", "fits", "limit"]

FITS = "a number of seconds > 0, or None or math.inf for no limit"
"""What a time limit may be, as error messages say it."""


def fits(value: Any) -> bool:
    """Whether ``value`` is a time limit :func:`limit` takes."""
    if value is None:
        return True
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return not isinstance(value, bool) and isinstance(value, int | float) and value > 0  # (nan is not > 0)


def limit(name: str, value: Any) -> float | None:
    """``value`` as a time limit in seconds: itself when finite (a ``timedelta``: its
    seconds), ``None`` for no limit (``None`` or ``math.inf``).

    Args:
        name: how the caller names the parameter in the error (``"timeout"``, ``"Fleet timeout"``).
        value: what the caller was given.

    Raises:
        TypeError: not a number (a bool is not one) nor None.
        ValueError: not > 0 (NaN included).
    """
    if value is None:
        return None
    if not fits(value):
        numeric = isinstance(value, int | float | timedelta) and not isinstance(value, bool)
        error = ValueError if numeric else TypeError
        raise error(f"{name} must be {FITS}, got {value!r}")
    if isinstance(value, timedelta):
        return value.total_seconds()
    return None if math.isinf(value) else float(value)  # an int too: limits are floats
