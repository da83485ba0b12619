"""Model calls of a blocking run made to a provider that may not heed the run's cancel token
(a provider of one's own): made on a daemon thread of their own, so that the run's time
limit and ``Session.cancel()`` hold even when the provider's call never looks at the token.

The session thread only waits: a cancel or the run's deadline wakes it at once, and the
call in flight is abandoned as a stuck tool call is (:meth:`ToolStep.run_calls`): logged
once, its thread (a daemon) left to end whenever the provider returns, its late answer
dropped, blocking neither the session, a formation's ``stop()`` nor interpreter exit. The
built-in providers close their request on a cancel and mark their class so
(``_heeds_cancel = True``): their calls are made on the session's thread, as before.

Used by :mod:`~wingman_actors.agents._model_calls`; not a public API.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

from .._cancel import CancelToken, next_handed
from ..core import StreamEvent

__all__ = ["heeds_cancel", "stream_on_thread", "wait_on_thread"]

_T = TypeVar("_T")
log = logging.getLogger("wingman_actors.agents")

# What the call's thread hands the waiting session thread: (what, value).
_DONE, _EVENT, _FAILED = range(3)


def heeds_cancel(provider: object) -> bool:
    """True for a provider whose calls stop at the run's cancel or deadline themselves (the
    built-in ones: they close their request); a provider of one's own is not trusted to."""
    return getattr(provider, "_heeds_cancel", False) is True


def wait_on_thread(fn: Callable[[], _T], token: CancelToken, what: str) -> _T:
    """``fn()`` (in a copy of the caller's context: the run's token, a visit's scope) on a
    daemon thread, waited for until it returns or ``token`` says the run must stop, which
    raises the run's error (``what``: the call, for the log line of one abandoned)."""
    done: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            done.put((_DONE, context.run(fn)))
        except BaseException as exc:  # handed to the session thread, whatever it is
            done.put((_FAILED, exc))

    thread = threading.Thread(target=work, name="wingman-model-call", daemon=True)
    thread.start()
    unregister = token.on_cancel(lambda: done.put(None))
    try:
        kind, value = next_handed(done, token, lambda: _log_abandoned(what, token))
    finally:
        unregister()
    thread.join()  # it has handed over its outcome: it is only returning
    if kind == _FAILED:
        raise value
    return value  # type: ignore[no-any-return]  # what fn returned


def stream_on_thread(
    make: Callable[[], Iterable[StreamEvent]], token: CancelToken, what: str
) -> Generator[StreamEvent, None, Any]:
    """The events of ``make()`` (a provider's stream), made and iterated on a daemon thread
    of their own (in a copy of the caller's context), yielded here as they come; returns the
    stream's ``response``. A cancel, the run's deadline or this generator being closed stops
    the waiting at once; the thread closes the stream once back from the provider."""
    items: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()
    left = threading.Event()  # nobody reads the events any more: the pump stops at the next one
    context = contextvars.copy_context()

    def pump() -> None:
        source: Any = None
        try:
            source = make()
            for event in source:
                if left.is_set():
                    return
                items.put((_EVENT, event))
            items.put((_DONE, source.response))
        except BaseException as exc:  # handed to the session thread
            items.put((_FAILED, exc))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=context.run, args=(pump,), name="wingman-model-stream", daemon=True)
    thread.start()
    unregister = token.on_cancel(lambda: items.put(None))
    try:
        while True:
            kind, value = next_handed(items, token, lambda: _log_abandoned(what, token))
            if kind != _EVENT:
                break
            yield value
            token.check()
    finally:
        left.set()
        unregister()
    thread.join()  # the stream has ended and been closed: the thread is only returning
    if kind == _FAILED:
        raise value
    return value


def _log_abandoned(what: str, token: CancelToken) -> None:
    """Say once that the run stopped with ``what`` in flight, left to its thread."""
    why = "the run was cancelled" if token.cancelled else "the run's deadline passed"
    log.warning(
        "abandoned %s in flight: %s; its thread (a daemon) runs on until the provider returns, and "
        "its answer is dropped (a provider that ignores the run's cancel cannot be stopped sooner)",
        what, why,
    )
