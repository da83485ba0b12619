"""``Session.resume`` and ``Session.aresume`` called on the class say how to call them.

DESIGN writes ``Session.resume(session_id, *, store, answer)``: read as a call on the
class, it would bind the id as the session and fail with Python's "missing argument".
The store keeps a conversation, not its agent (tools and providers are code), so a
resume needs a session of the same agent; :class:`on_a_session` makes the call on the
class raise a TypeError saying so, and is an ordinary method on a session.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, Concatenate, Generic, NoReturn, ParamSpec, TypeVar, overload

__all__ = ["on_a_session"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class on_a_session(Generic[_P, _R]):  # lower-case: used as a decorator
    """A session method that, looked up on the class, raises a TypeError naming the call
    to make instead (``Session(agent).<name>(session_id, store=store, answer=...)``)."""

    def __init__(self, fn: Callable[Concatenate[Any, _P], _R]) -> None:
        self._fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

        @functools.wraps(fn)  # help(Session.resume) and inspect.getdoc show the method's docs
        def on_the_class(*args: Any, **kwargs: Any) -> NoReturn:
            raise TypeError(
                f"Session.{fn.__name__}() is called on a session, not on the class: the store keeps the "
                f"conversation, not its agent, so make a session of the same agent and call it there: "
                f"Session(agent).{fn.__name__}(session_id, store=store, answer=...)"
            )

        self._on_the_class = on_the_class

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Callable[..., NoReturn]: ...
    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> Callable[_P, _R]: ...
    def __get__(self, obj: object | None, owner: type[Any] | None = None) -> Callable[..., Any]:
        if obj is None:
            return self._on_the_class
        return types.MethodType(self._fn, obj)
