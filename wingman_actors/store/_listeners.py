"""The listeners a store tells of what it finds on its own threads (runs lost to another
owner, requests to cancel runs): added and removed from any thread, read without a lock."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Listeners"]

_log = logging.getLogger("wingman_actors.store")

T = TypeVar("T")


class Listeners(Generic[T]):
    """Listeners of one kind of news (a ``T``), each called with it in the order they came.

    Args:
        what: the news, for the log line of a listener that raises (e.g. ``"lost runs"``).
    """

    __slots__ = ("_lock", "_what", "all")

    def __init__(self, what: str) -> None:
        self.all: tuple[Callable[[T], None], ...] = ()  # replaced whole: readers take it without the lock
        self._lock = threading.Lock()
        self._what = what

    def subscribe(self, listener: Callable[[T], None]) -> Callable[[], None]:
        """Tell ``listener`` of all news from now on; returns the unsubscribe call."""
        with self._lock:
            self.all = (*self.all, listener)

        def unsubscribe() -> None:
            with self._lock:
                self.all = tuple(x for x in self.all if x is not listener)

        return unsubscribe

    def tell(self, news: list[T], *, thread: str | None = None) -> None:
        """Call every listener with each of ``news``; on a short-lived thread of that name
        with ``thread`` (a store's writer thread must not run a formation's ending). A
        listener that raises is logged; the others are still told."""
        listeners = self.all
        if not listeners or not news:
            return
        if thread is None:
            self._tell(listeners, news)
        else:
            threading.Thread(target=self._tell, args=(listeners, news), name=thread, daemon=True).start()

    def _tell(self, listeners: tuple[Callable[[T], None], ...], news: list[T]) -> None:
        for item in news:
            for listener in listeners:
                try:
                    listener(item)
                except Exception:
                    _log.exception("run store: a listener of %s failed on %s", self._what, item)
