"""Node options as other workflow libraries spell them, and ours: the hint a setup error
gives for a policy keyword we do not take (``num_workers=3`` is ``concurrency=3``,
Metaflow's ``times=3`` is ``retries=3``).

Kept apart from validation: a close-name guess (``retry_policy`` → ``retry_on``) would
mislead for these, so a keyword listed here gets this hint instead of a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["spelling_hint"]


def _workers(key: str, value: Any) -> str:
    return (f"{key} is concurrency={value!r} here (replicas of the node serving runs at once); to run the "
            f"items of one list input in parallel, declare add_map(name, fn, max_workers={value!r})")


def _attempts(key: str, value: Any) -> str:
    retries = value - 1 if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else "N-1"
    return f"{key} counts the first attempt too: write retries={retries} (the attempts after the first)"


def _delay(key: str, value: Any) -> str:
    return (f"{key} is backoff={value!r} here (the first retry's delay, doubled per attempt up to max_backoff); "
            f"for a constant delay write backoff={value!r}, max_backoff={value!r}, jitter=False")


def _policy(key: str, value: Any) -> str:
    return (f"{key} is spelt as keywords here: retries=, backoff=, max_backoff=, jitter= and retry_on= (the "
            f"exception types to retry)")


def _retries(key: str, value: Any) -> str:
    return f"{key}={value!r} is retries={value!r} here (the attempts after the first)"


def _minutes_delay(key: str, value: Any) -> str:
    seconds = value * 60 if isinstance(value, int | float) and not isinstance(value, bool) else "N*60"
    return (f"{key}={value!r} is backoff={seconds} here (seconds: the first retry's delay, doubled per attempt up "
            f"to max_backoff); for a constant delay write backoff={seconds}, max_backoff={seconds}, jitter=False")


_SECONDS_PER = {"seconds": 1, "minutes": 60, "hours": 3600}


def _time_limit(key: str, value: Any) -> str:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    seconds = value * _SECONDS_PER[key] if numeric else f"N*{_SECONDS_PER[key]}"
    return f"{key}={value!r} is timeout={seconds} here (seconds per attempt)"


def _catch(key: str, value: Any) -> str:
    return (f"{key}={value!r}: catching a node's failure is an error edge here, connect(node, handler, "
            f"on_error=True); the handler receives a NodeFailure (node, error, input, attempts)")


_HINTS: dict[str, Callable[[str, Any], str]] = {
    "num_workers": _workers, "max_concurrency": _workers,
    "maximum_attempts": _attempts, "max_attempts": _attempts, "attempts": _attempts,
    "delay": _delay, "retry_delay": _delay,
    "retry_policy": _policy, "retry_config": _policy,
    # Metaflow's @retry(times=, minutes_between_retries=), @timeout(seconds=, minutes=, hours=), @catch(var=):
    # a close-name guess would take times= for timeout=
    "times": _retries, "minutes_between_retries": _minutes_delay,
    "seconds": _time_limit, "minutes": _time_limit, "hours": _time_limit, "var": _catch,
}


def spelling_hint(key: str, value: Any) -> str | None:
    """The hint for policy keyword ``key`` (given ``value``) as another library spells it,
    or None when it is not one of those.

    Example:
        >>> spelling_hint("maximum_attempts", 3)
        'maximum_attempts counts the first attempt too: write retries=2 (the attempts after the first)'
    """
    hint = _HINTS.get(key)
    return None if hint is None else hint(key, value)
