"""Behaviours ported from Dask's own tests of its graphs and local schedulers (dask/dask
``dask/tests/test_delayed.py``, ``test_local.py``, ``test_threaded.py``, ``test_callbacks.py``,
``test_core.py``; dask/distributed ``distributed/tests/test_client.py``'s retries and
``test_worker.py``'s failing tasks), mapped onto formations: a Dask graph (``{"z": (inc,
"x")}`` or ``dask.delayed``) is a formation's ``networkx.DiGraph``, ``client.map`` a map node,
a task's ``retries`` a node's, and a worker that dies with its task a node that raises
something no ``Exception`` catches (``SystemExit``, ``KeyboardInterrupt``).

Deliberately different (each test that touches one says so):
- Dask lets a ``KeyboardInterrupt`` raised by a task out of ``get`` in the caller; a node runs
  on a thread of its own, so what it raises, ``SystemExit`` and ``KeyboardInterrupt``
  included, fails its run (``FormationRuntimeError`` with it as ``__cause__``), as a
  ``concurrent.futures`` executor sets it on the future. It is not retried unless
  ``retry_on`` names it.
"""

from __future__ import annotations

import dataclasses

from wingman_actors import Formation


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_a_dataclass_passes_between_nodes_and_a_receivers_change_stays_its_own() -> None:
    """From dask/dask test_delayed.py::test_delayed_with_dataclass (dataclass fields reach the
    task). A mutable dataclass whose fields were all immutable used to be shared, not copied, so
    ``move``'s change showed in ``keep``'s value (and the run's result)."""

    def move(p: Point) -> Point:
        p.x += 10  # in place: the sender's value must not change
        return p

    f = Formation("dc").add_function("start", lambda p: p).add_function("move", move)
    f.add_function("keep", lambda p: p).connect("start", "move").connect("start", "keep")
    result = f.run(Point(1, 2))
    assert result.outputs == {"move": Point(11, 2), "keep": Point(1, 2)}
