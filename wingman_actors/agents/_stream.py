"""A streamed run of a session (``Session.run_stream``): its events, then its result."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any, cast

from ..core import StreamEvent
from ._result import Result

if TYPE_CHECKING:
    from ._session import RunGen

__all__ = ["SessionStream"]


class Unbegun:
    """A session's stream made and not yet iterated: a ``cancel()`` of the session meanwhile
    (nothing of it runs yet) is kept here, and the run acts on it as it begins."""

    __slots__ = ("__weakref__", "reason")

    def __init__(self) -> None:
        self.reason: str | None = None


class SessionStream:
    """The events of a streamed run; :meth:`result` once iteration has ended.

    Iterate it once. If the run fails, an ``error`` event is yielded and then the error is
    raised from the iteration. Left before its end, :meth:`close` it (or use it as a
    context manager): the run ends there, its provider request is closed and the session
    is free for its next message.
    """

    def __init__(self, gen: RunGen, on_close: Any = None) -> None:
        self._gen = gen
        self._result: Result | None = None
        self._error: BaseException | None = None
        self._on_close = on_close
        self._events: Generator[StreamEvent, None, None] | None = None

    def __iter__(self) -> Iterator[StreamEvent]:
        self._events = events = self._iterate()
        return events

    def close(self) -> None:
        """End the run where it is (nothing more is streamed); a finished stream is left as it is."""
        if self._events is not None:
            self._events.close()
        self._gen.close()

    def __enter__(self) -> SessionStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _iterate(self) -> Generator[StreamEvent, None, None]:
        try:
            self._result = yield from cast("Generator[StreamEvent, None, Result]", self._gen)
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._gen.close()

    def result(self) -> Result:
        """The run's result; raises the run's error if it failed."""
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError("the stream has not finished: iterate it to the end first")
        return self._result
