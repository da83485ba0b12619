"""Blackboard: a thread-safe key-value store agents and functions coordinate through.

Values are JSON (checked on :meth:`Blackboard.set`) and stored as copies, so no reader
can change what another sees. :meth:`Blackboard.tools` gives agents three tools to read and
write it; :meth:`Blackboard.watch` blocks until a key is written.

A board can also be *active* for a stretch of code (``with use_blackboard(board):``):
:func:`current_blackboard` returns it there, and :func:`blackboard_tools` gives tools that act
on whichever board is active when they run, so an agent declared before its board exists
(a formation's node, say) still reaches the board of the run it serves. Tool calls and
delegated agents run in a copy of the caller's context, so they see the same active board.

Example:
    >>> board = Blackboard()
    >>> board.set("findings", ["cheap", "fast"])
    >>> board.get("findings"), board.keys()
    (['cheap', 'fast'], ['findings'])
    >>> [t.name for t in board.tools("team")]
    ['team_state_get', 'team_state_set', 'team_state_list']
"""

from __future__ import annotations

import contextvars
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..core import ToolDefinition
from ..errors import ToolError

if TYPE_CHECKING:  # only types: a run's board needs no tool machinery until an agent uses it
    from ..tools import Tool, ToolContext

__all__ = ["Blackboard", "blackboard_tools", "check_watch_timeout", "current_blackboard", "use_blackboard"]

_NAMESPACE_RE = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
_MISSING = object()


class Blackboard:
    """Shared state by key: ``get``, ``set``, ``delete``, ``keys``, ``update``, ``watch``.

    Thread-safe: every method may be called from any thread. Keys are non-empty strings;
    values anything :func:`json.dumps` accepts (tuples come back as lists). What you get is
    a copy: change it and ``set`` it back (or use :meth:`update`, atomic).
    """

    def __init__(self, initial: dict[str, Any] | None = None) -> None:
        if initial is not None and not isinstance(initial, Mapping):
            raise TypeError(
                f"Blackboard(initial) takes a dict of keys to JSON values, got {type(initial).__name__}; "
                "e.g. Blackboard({'status': 'draft'})"
            )
        self._cond = threading.Condition()
        self._data: dict[str, str] = {}  # JSON text: a stored value can never be aliased
        for key, value in (initial or {}).items():
            self.set(key, value)

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when it is not set.

        Raises:
            TypeError: ``key`` is not a non-empty string (no such key could ever be set).
        """
        _check_key(key)
        with self._cond:
            text = self._data.get(key)
        return default if text is None else json.loads(text)

    def set(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value`` and wake whoever watches it.

        Raises:
            TypeError: ``key`` is not a non-empty string, or ``value`` is not JSON-serialisable.
        """
        text = _encode(key, value)
        with self._cond:
            self._data[key] = text
            self._cond.notify_all()

    def update(self, key: str, fn: Callable[[Any], Any], default: Any = None) -> Any:
        """Atomically set ``key`` to ``fn(current value or default)``; return the new value.

        No other write can slip between the read and the write, so concurrent updates are
        never lost (e.g. ``board.update("count", lambda n: n + 1, 0)``). ``fn`` runs under
        the board's lock: keep it short and do not touch the board from it.

        Raises:
            TypeError: ``key`` is not a non-empty string, ``fn`` cannot be called (to store
                a value, use :meth:`set`), or its result is not JSON-serialisable.
        """
        check_update(key, fn)
        with self._cond:
            text = self._data.get(key)
            value = fn(default if text is None else json.loads(text))
            self._data[key] = _encode(key, value)
            self._cond.notify_all()
        return value

    def delete(self, key: str) -> None:
        """Remove ``key`` (KeyError naming the keys present when it is not set; TypeError
        when ``key`` is not a non-empty string)."""
        _check_key(key)
        with self._cond:
            if key not in self._data:
                raise KeyError(f"blackboard has no key {key!r}; keys: {sorted(self._data)}")
            del self._data[key]

    def keys(self) -> list[str]:
        """The keys set, sorted."""
        with self._cond:
            return sorted(self._data)

    def watch(self, key: str, timeout: float | None = None) -> Any:
        """Block until ``key`` is set, then return its value (at once if it already is).

        Args:
            key: the key to wait for.
            timeout: seconds to wait at most; None waits as long as it takes.

        Raises:
            TimeoutError: ``key`` was not set within ``timeout`` seconds.
            TypeError: ``key`` is not a non-empty string, or ``timeout`` is not a number.
            ValueError: ``timeout`` is below 0 (or nan).
        """
        _check_key(key)
        check_watch_timeout(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while key not in self._data:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise watch_timeout(key, timeout, sorted(self._data))
                self._cond.wait(remaining)
            text = self._data[key]
        return json.loads(text)

    def to_dict(self) -> dict[str, Any]:
        """A copy of everything, as a plain dict."""
        with self._cond:
            items = list(self._data.items())
        return {k: json.loads(v) for k, v in sorted(items)}

    def tools(self, namespace: str) -> list[Tool]:
        """Tools for an agent: ``{namespace}_state_get`` (``key``), ``{namespace}_state_set``
        (``key``, ``value``) and ``{namespace}_state_list``.

        Raises:
            TypeError: ``namespace`` is not a str.
            ValueError: ``namespace`` is not 1-40 letters, digits, '_' or '-'.
        """
        return _tools(self, namespace)

    def __contains__(self, key: object) -> bool:
        with self._cond:
            return key in self._data

    def __len__(self) -> int:
        with self._cond:
            return len(self._data)

    def __repr__(self) -> str:
        return f"Blackboard(keys={self.keys()})"

    def __reduce__(self) -> Any:
        # A copy in another process would silently stop being shared: refuse, and say so.
        raise TypeError(
            "a Blackboard is shared memory of one process and cannot be pickled; to share it with a "
            "formation's nodes (on any backend, Ray too), give it to the run (run(..., blackboard=board) or "
            "start(blackboard=board)) and take it as the node function's `blackboard` parameter or "
            "current_blackboard() instead of capturing it; or pass board.to_dict() if a copy of the values "
            "is what you need"
        )


_active: contextvars.ContextVar[Blackboard | None] = contextvars.ContextVar("wingman_blackboard", default=None)


def current_blackboard() -> Blackboard | None:
    """The board made active by the innermost :class:`use_blackboard`, if any."""
    return _active.get()


class use_blackboard:  # lower-case: used like a function, `with use_blackboard(board):`
    """Make ``board`` the active blackboard inside the ``with`` block (this context only)."""

    __slots__ = ("_reset", "board")

    def __init__(self, board: Blackboard) -> None:
        if not isinstance(board, Blackboard):
            raise TypeError(f"use_blackboard needs a Blackboard, got {type(board).__name__}")
        self.board = board

    def __enter__(self) -> Blackboard:
        self._reset = _active.set(self.board)
        return self.board

    def __exit__(self, *exc: object) -> None:
        _active.reset(self._reset)


def blackboard_tools(namespace: str) -> list[Tool]:
    """Like :meth:`Blackboard.tools`, on the board active when each call runs (see
    :class:`use_blackboard`); a call with no active board is a tool error."""
    return _tools(None, namespace)


def _tools(board: Blackboard | None, namespace: str) -> list[Tool]:
    if not isinstance(namespace, str):
        raise TypeError(f"blackboard tools namespace must be a str (1-40 letters, digits, '_' or '-'), got {namespace!r}")
    if not _NAMESPACE_RE.match(namespace):
        raise ValueError(f"blackboard tools namespace must be 1-40 letters, digits, '_' or '-', got {namespace!r}")
    return [_StateGet(board, namespace), _StateSet(board, namespace), _StateList(board, namespace)]


def check_update(key: str, fn: object) -> None:
    """Refuse a bad key, or an ``fn`` of :meth:`Blackboard.update` that cannot be called (a
    value given where a function belongs), before any board is touched."""
    _check_key(key)
    if not callable(fn):
        raise TypeError(
            f"blackboard update of {key!r}: fn must be a callable taking the current value, got {fn!r} "
            f"(to store a value, use set({key!r}, value))"
        )


def watch_timeout(key: str, timeout: float | None, keys: list[str]) -> TimeoutError:
    """The error of :meth:`Blackboard.watch` when ``key`` was not set within ``timeout``
    (``keys``: those set), wherever the board that was watched lives."""
    return TimeoutError(
        f"blackboard key {key!r} was not set within {timeout or 0:g}s; keys set: {keys}. "
        "Make sure a writer sets it, or wait longer."
    )


def check_watch_timeout(timeout: object) -> None:
    """Refuse a :meth:`Blackboard.watch` timeout that is not None or a number of seconds >= 0
    (nan would wait forever, a string fail in arithmetic)."""
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"Blackboard.watch: timeout must be a number of seconds >= 0 or None, got {timeout!r}")
    if not timeout >= 0:  # (not `< 0`: nan is neither)
        raise ValueError(f"Blackboard.watch: timeout must be a number of seconds >= 0 or None, got {timeout}")


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"blackboard keys are non-empty strings, got {key!r}")


def _encode(key: str, value: Any) -> str:
    _check_key(key)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"blackboard value for {key!r} is not JSON-serialisable ({type(value).__name__}: {exc}); "
            "store plain data (dict, list, str, int, float, bool, None), e.g. model.model_dump(mode='json')"
        ) from exc


class _StateTool:
    suffix: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self, board: Blackboard | None, namespace: str) -> None:
        self._board = board  # None: the active board at call time
        self.name = f"{namespace}_state_{self.suffix}"
        self.description = self.summary.format(ns=namespace)
        self._definition = ToolDefinition(name=self.name, description=self.description, input_schema=self.schema)

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    @property
    def board(self) -> Blackboard:
        board = self._board if self._board is not None else current_blackboard()  # an empty board is falsy
        if board is None:
            raise ToolError(
                f"{self.name}: no blackboard is shared with this run; share one (use_blackboard, or the "
                "formation's blackboard=), or give the agent Blackboard.tools() of a board",
                tool=self.name,
            )
        return board

    def _key(self, input: dict[str, Any]) -> str:
        key = (input or {}).get("key")
        if not isinstance(key, str) or not key:
            raise ToolError(f"{self.name} needs 'key', a non-empty string; got {key!r}", tool=self.name)
        return key


_KEY = {"type": "string", "description": "the key"}


class _StateGet(_StateTool):
    suffix = "get"
    summary = "Read a value of the shared {ns} state by key (JSON)."
    schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"key": _KEY}, "required": ["key"], "additionalProperties": False}

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        key = self._key(input)
        value = self.board.get(key, _MISSING)
        if value is _MISSING:
            raise ToolError(f"no key {key!r} in the shared state; keys: {self.board.keys()}", tool=self.name)
        return json.dumps(value, ensure_ascii=False)


class _StateSet(_StateTool):
    suffix = "set"
    summary = "Write a value (any JSON) to the shared {ns} state under a key, for others to read."
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"key": _KEY, "value": {"description": "any JSON value"}},
        "required": ["key", "value"],
        "additionalProperties": False,
    }

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        key = self._key(input)
        if "value" not in (input or {}):
            raise ToolError(f"{self.name} needs 'value' (any JSON)", tool=self.name)
        self.board.set(key, input["value"])
        return f"set {key!r}"


class _StateList(_StateTool):
    suffix = "list"
    summary = "List the keys of the shared {ns} state."

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        return json.dumps(self.board.keys(), ensure_ascii=False)
