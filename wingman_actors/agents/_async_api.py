"""The async methods of :class:`~wingman_actors.agents._session.Session`: ``arun``,
``astream`` and ``aresume``, the twins of ``run``, ``run_stream`` and ``resume``, for code
running on an asyncio event loop. They run the session's one loop through the async driver
(:mod:`._async_session`), which awaits its model calls on the caller's loop and its
``async def`` tools on an event loop of the runtime's.

Example:
    >>> import asyncio
    >>> from wingman_actors import Agent, Session
    >>> from wingman_actors.testing import ScriptedProvider
    >>> asyncio.run(Session(Agent("a", provider=ScriptedProvider(["Paris."]))).arun("Capital?")).response
    'Paris.'
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from .._cancel import CancelToken
from ..core import Message
from ._async_session import AsyncSessionStream, complete
from ._inputs import check_timeout
from ._on_session import on_a_session
from ._result import Result

if TYPE_CHECKING:
    from ._session import RunGen, Session

__all__ = ["AsyncSessionRuns"]


class AsyncSessionRuns:
    """``arun``, ``astream`` and ``aresume``: a session's runs awaited on an event loop."""

    __slots__ = ()

    if TYPE_CHECKING:  # given by Session
        _store: Any

        def _run(self, message: str | Message, *, timeout: float | None, stream: bool,
                 parent_token: CancelToken | None = None, metadata: Mapping[str, Any] | None = None,
                 aio: bool = False) -> RunGen: ...

    async def arun(
        self, message: str | Message, *, timeout: float | timedelta | None = None, parent_token: CancelToken | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Result:
        """:meth:`run`, awaited on the caller's event loop, which it never blocks: the same
        loop (middleware, retries, tools, journalling), its model calls made with the
        provider's ``arun_inference`` when it has one (no thread of its own; otherwise
        ``run_inference`` on a worker thread), ``async def`` tools awaited, other tools on
        a worker thread. Cancelling the awaiting task cancels the run: the awaited call
        is cancelled and the session is free for the next message.

        With a ``store``, a tool's ``interrupt()`` ends the run with ``status="suspended"``
        (see :meth:`aresume`); the store is written on a worker thread.

        Raises:
            AgentError: as for :meth:`run`.
            asyncio.CancelledError: the awaiting task was cancelled.

        Example:
            >>> result = await session.arun("Capital of France?")  # doctest: +SKIP
        """
        timeout = check_timeout(timeout)  # (a timedelta: its seconds; math.inf: None)
        if self._store is not None:
            from ._waiting import arun_waiting

            return await arun_waiting(cast("Session", self), message, timeout, parent_token, metadata)
        return await complete(cast("Session", self), message, timeout, parent_token, metadata)

    @on_a_session
    async def aresume(
        self, session_id: str, *, store: Any = None, answer: Any = None, timeout: float | timedelta | None = None
    ) -> Result:
        """:meth:`resume`, awaited on the caller's event loop, which it never blocks: the
        store is read and written on a worker thread, the run is awaited as :meth:`arun`
        awaits it. Cancelling the awaiting task cancels the resumed run (the store marks
        it failed; the answer it was given stays recorded, and a later resume continues
        from it). The arguments are those of :meth:`resume`.

        Raises:
            TypeError: called on the class: call it on a session of the agent, as :meth:`resume`.
            ValueError: no store given, or nothing of that session is waiting in it.
            StoreError: the run cannot be resumed (expired, finished, another agent's).
            asyncio.CancelledError: the awaiting task was cancelled.

        Example:
            >>> result = await session.aresume(session_id, store=store, answer="Lisbon")  # doctest: +SKIP
        """
        timeout = check_timeout(timeout)  # (a timedelta: its seconds; math.inf: None)
        from ._waiting import aresume_waiting

        return await aresume_waiting(cast("Session", self), session_id, store if store is not None else self._store, answer, timeout)

    async def _arun(
        self, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
        metadata: Mapping[str, Any] | None,
    ) -> Result:
        return await complete(cast("Session", self), message, timeout, parent_token, metadata)

    def astream(
        self, message: str | Message, *, timeout: float | timedelta | None = None, parent_token: CancelToken | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AsyncSessionStream:
        """:meth:`run_stream`, for ``async for``: the provider's events (its
        ``astream_inference`` when it has one) and ``tool_start``/``tool_end`` events, as
        :meth:`arun` runs the loop; call ``.result()`` on the stream after iterating it.
        With a ``store``, an ``interrupt()`` ends the stream, and ``.result()`` is the
        suspended result :meth:`arun` would return (continue with :meth:`aresume`).

        Example:
            >>> stream = session.astream("Capital of France?")  # doctest: +SKIP
            >>> async for event in stream:                       # doctest: +SKIP
            ...     print(event.text or "", end="")
        """
        timeout = check_timeout(timeout)  # (a timedelta: its seconds; math.inf: None)
        if self._store is not None:
            from ._waiting import astream_waiting

            return astream_waiting(cast("Session", self), message, timeout, parent_token, metadata)
        return AsyncSessionStream(self._run(message, timeout=timeout, stream=True, parent_token=parent_token,
                                            metadata=metadata, aio=True))
