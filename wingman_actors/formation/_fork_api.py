"""``Formation.fork`` (a base class of :class:`~wingman_actors.formation.Formation`): the
forking itself, and with it the store, loads when ``fork`` is first called, so declaring
a formation stays light."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ._durable import StoreArg
    from ._graph import Formation
    from ._options import RunOptions

__all__ = ["Forks"]


class Forks:
    """What ``Formation`` has to fork journalled runs (see :meth:`fork`)."""

    def fork(self, run_id: str, *, store: StoreArg, at: str | tuple[str, int], output: Any = ...,
             input: Any = ..., timeout: float | timedelta | None = None, options: RunOptions | None = None) -> str:
        """Start a new run from the journalled run ``run_id``, as if node ``at``'s visit had
        given ``output`` (or ran again with ``input``), and run it to its end. The journal
        before that visit is reused (those visits are not executed again), the rest runs;
        the original run is left unchanged. ``store.history(run_id)`` lists the visits to
        fork at. Blocks the calling thread until the new run ends (from a coroutine, call
        it on a worker thread: ``await asyncio.to_thread(formation.fork, run_id, ...)``).

        Args:
            run_id: the run to fork (any status; this formation must have its shape).
            store: the run's store (a ``RunStore``, its path or its URL); the fork is
                journalled there.
            at: the node, for its first visit, or ``(node, visit)``.
            output: the visit's output in the new run.
            input: instead of ``output``, run the visit again with this input, in place
                of what its predecessors deliver (a join's: a dict by predecessor, as it
                receives them; for the first visit of the only source, the new run's
                input). It must fit the node's parameter type (for a nested formation,
                the types its sources take; for a map, each item).
            timeout: the new run's time limit, as for ``run``.
            options: other run options, as for ``resume``.

        Returns:
            The new run's id, once it has ended (succeeded, failed, or suspended at an
            interrupt: read it with ``store.get(new_id)`` or ``store.history(new_id)``).

        Raises:
            ValueError: neither or both of ``output`` and ``input``, an unknown node, a visit
                the run never made (a finished run's visits are those its history lists; one
                that did not succeed may also be forked at a node's next visit, such as
                the visit that failed), an ``input`` that does not fit the node's
                parameter type (naming the node, the parameter and the type), or an
                ``output`` that does not fit its output type (its return annotation).
            TypeError: ``timeout`` or ``options`` of the wrong kind, or ``options`` setting
                ``store`` or ``run_id`` (the fork gives them); like a bad ``timeout``
                value (a ``ValueError``), refused before anything is written.
            wingman_actors.store.UnknownRunError: no such run (or no store file at the path
                given: none is created).
            wingman_actors.store.FormationMismatchError: this formation differs from the run's.

        Example:
            >>> new_id = formation.fork(run_id, store="runs.sqlite", at="draft", output="a better draft")  # doctest: +SKIP
        """
        from ._fork import fork

        return fork(cast("Formation", self), run_id, store=store, at=at, output=output, input=input,
                    timeout=timeout, options=options)
