"""Session ids: 32 hex digits, unique, cheap to make."""

from __future__ import annotations

import itertools
import os

__all__ = ["new_session_id"]

_ID_PREFIX = os.urandom(8).hex()
_id_counter = itertools.count(1)


def _reseed_ids() -> None:  # a forked child must not repeat its parent's ids
    global _ID_PREFIX, _id_counter
    _ID_PREFIX = os.urandom(8).hex()
    _id_counter = itertools.count(1)


os.register_at_fork(after_in_child=_reseed_ids)


def new_session_id() -> str:
    """32 hex digits, unique: a random per-process prefix and a counter (a fresh
    ``os.urandom`` per session costs a system call on every fleet task)."""
    return f"{_ID_PREFIX}{next(_id_counter):016x}"
