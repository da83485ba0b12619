"""Behaviours ported from Dask's asynchronous client and its ``as_completed`` (dask/distributed
``distributed/tests/test_client.py``'s ``gen_cluster(client=True)`` tests, ``test_as_completed.py``'s
async ones), mapped onto ``Formation.arun``, ``astart``/``asubmit`` and asyncio's own
``as_completed``/``wait``; and the failing-task behaviours of ``test_peer_dask_graphs.py`` for
``async def`` nodes and map functions, and on ``backend="ray"``.

Deliberately different: as in ``test_peer_dask.py``, a failed run raises
``FormationRuntimeError`` with the node's own error as ``__cause__`` where Dask raises the task's
error; ``SystemExit`` and ``KeyboardInterrupt`` raised by a node fail its run (a Dask task's
``KeyboardInterrupt`` reaches the caller of ``get``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.formation.test_peer_dask import MyException
from tests.support.peers import local_ray  # noqa: F401  (local_ray: a fixture)
from wingman_actors import Agent, Formation, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import FleetItemsError, FormationRuntimeError, MapItemsError
from wingman_actors.testing import ScriptedProvider


async def ainc(x: Any) -> Any:
    """``inc``; raises on ``"bad"``, and ``SystemExit`` on a negative number."""
    if x == "bad":
        raise RuntimeError("hello!")
    if x < 0:
        raise SystemExit(3)
    await asyncio.sleep(0)
    return x + 1


def inc(x: int) -> int:
    return x + 1


def test_an_awaited_submit_gives_the_runs_result() -> None:
    """From dask/distributed test_client.py::test_submit (async: ``await c.submit(inc, 10)``)."""

    async def main() -> Any:
        async with Formation("inc").add_function("inc", inc).astart() as running:
            return (await running.asubmit(10)).output

    assert asyncio.run(main()) == 11


def test_gathering_awaited_submits_gives_their_results_in_order() -> None:
    """From dask/distributed test_client.py::test_gather (async: ``await c.gather(c.map(inc,
    range(10)))``)."""

    async def main() -> list[Any]:
        async with Formation("inc").add_function("inc", ainc).astart() as running:
            results = await asyncio.gather(*(running.asubmit(i) for i in range(10)))
            return [r.output for r in results]

    assert asyncio.run(main()) == list(range(1, 11))


def test_asyncio_as_completed_over_awaited_submits_yields_each_run_once() -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_async (three submitted, three
    come out) and test_as_completed_error_async (one raises, the others still come)."""

    async def main() -> tuple[list[Any], list[str]]:
        async with Formation("inc").add_function("inc", ainc).astart() as running:
            values, errors = [], []
            for next_done in asyncio.as_completed([running.asubmit(x) for x in (1, "bad", 2)]):
                try:
                    values.append((await next_done).output)
                except FormationRuntimeError as exc:
                    errors.append(str(exc.__cause__))
            return sorted(values), errors

    assert asyncio.run(main()) == ([2, 3], ["hello!"])


def test_asyncio_wait_first_completed_returns_the_first_run_to_finish() -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_async (``_first_completed``)."""

    async def slow(x: int) -> int:
        await asyncio.sleep(x)
        return x

    async def main() -> Any:
        async with Formation("slow").add_function("slow", slow, concurrency=2).astart() as running:
            quick = asyncio.ensure_future(running.asubmit(0))
            late = asyncio.ensure_future(running.asubmit(30))
            done, pending = await asyncio.wait([quick, late], return_when=asyncio.FIRST_COMPLETED)
            late.cancel()
            await asyncio.gather(late, return_exceptions=True)
            return [t.result().output for t in done], pending == {late}

    assert asyncio.run(main()) == ([0], True)


def test_an_awaited_run_that_fails_raises_with_the_functions_error_as_cause() -> None:
    """From dask/distributed test_client.py::test_exceptions (async: ``await x`` raises the task's
    error)."""

    async def main() -> None:
        await Formation("inc").add_function("inc", ainc).arun("bad")

    with pytest.raises(FormationRuntimeError, match="hello!") as info:
        asyncio.run(main())
    assert isinstance(info.value.__cause__, RuntimeError) and info.value.node == "inc"


def test_an_async_node_that_raised_system_exit_takes_the_next_runs() -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called and dask/distributed
    test_client.py::test_restart (the cluster goes on after a task killed its worker). Before, the
    ``SystemExit`` was let out of the node's event loop, which ended with it: the failed run
    resolved, but every later run of that node waited for good."""
    with Formation("a").add_function("a", ainc).start() as running:
        outcomes = []
        for x in (-1, 1, -1, 2):
            error = running.submit(x).exception(timeout=10)
            outcomes.append(type(error.__cause__).__name__ if error is not None else "ok")
        assert outcomes == ["SystemExit", "ok", "SystemExit", "ok"]
        assert running.submit(5).result(timeout=10).output == 6


def test_an_async_map_item_raising_system_exit_fails_that_item_and_the_others_run() -> None:
    """From dask/distributed test_client.py::test_map / test_gather_errors (one failing item of
    ``client.map`` is that future's error). Before, the ``SystemExit`` ended the map's event loop:
    the later items were reported stopped without having run."""

    async def item(x: int) -> int:
        if x == 1:
            raise SystemExit(2)
        return x

    with Formation("m").add_map("m", item, max_workers=1).start() as running:
        error = running.submit([0, 1, 2]).exception(timeout=10)
        assert isinstance(error, FormationRuntimeError)
        cause = error.__cause__
        assert isinstance(cause, MapItemsError)
        assert list(cause.errors) == [1] and isinstance(cause.errors[1], SystemExit)
        assert running.submit([3, 4]).result(timeout=10).output == [3, 4]


def test_a_formation_run_from_inside_a_node_of_an_async_run_returns_its_value() -> None:
    """From dask/distributed test_client.py::test_client_async_before_loop_starts / test_threaded.py's
    ``get`` from another thread: a blocking run called inside an ``async def`` caller's node."""
    inner = Formation("inner").add_function("one", lambda _: 1)

    async def main() -> Any:
        outer = Formation("outer").add_function("calls", lambda _: inner.run(None, timeout=10).output)
        return (await outer.arun(None, timeout=20)).output

    assert asyncio.run(main()) == 1


def raises_mine(_: Any) -> None:
    raise MyException(1, 2)


def exits(_: Any) -> None:
    raise SystemExit(3)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_the_cause_keeps_the_exceptions_attributes_and_system_exit_fails_the_run() -> None:
    """From dask/dask test_local.py::test_exceptions_propagate (across Dask's process pickling)
    and test_callbacks.py::test_finish_always_called, on ``backend="ray"``."""
    f = Formation("mine").add_function("mine", raises_mine)
    with pytest.raises(FormationRuntimeError, match="My Exception!") as info:
        f.run(None, backend="ray", timeout=60)
    cause = info.value.__cause__
    assert isinstance(cause, MyException) and (cause.a, cause.b) == (1, 2)
    with pytest.raises(FormationRuntimeError, match="SystemExit") as exited:
        Formation("exits").add_function("exits", exits).run(None, backend="ray", timeout=60)
    assert isinstance(exited.value.__cause__, SystemExit)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_futures_of_many_submits_gather_in_order_beside_a_failed_one() -> None:
    """From dask/distributed test_client.py::test_map and test_errors_dont_block, on
    ``backend="ray"``."""
    def picky(x: int) -> int:
        if x == 3:
            raise ValueError("no 3")
        return x + 1

    with Formation("picky").add_function("picky", picky).start(backend="ray") as running:
        futures = [running.submit(i) for i in range(6)]
        outcomes = [f.exception(timeout=60) for f in futures]
        assert [e is None for e in outcomes] == [True, True, True, False, True, True]
        assert [f.result().output for f in futures if f.exception() is None] == [1, 2, 3, 5, 6]
        assert str(outcomes[3].__cause__) == "no 3"  # type: ignore[union-attr]


def interrupts_on_one(x: int) -> int:
    if x == 1:
        raise KeyboardInterrupt
    return x * 10


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_a_map_item_raising_keyboard_interrupt_fails_that_item_and_the_node_takes_the_next_run() -> None:
    """From dask/distributed test_client.py::test_map / test_restart (a task that kills its worker
    fails alone, and the cluster goes on), on ``backend="ray"``."""
    with Formation("m").add_map("m", interrupts_on_one, max_workers=1).start(backend="ray") as running:
        error = running.submit([0, 1, 2]).exception(timeout=60)
        assert isinstance(error, FormationRuntimeError)
        cause = error.__cause__
        assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
        assert isinstance(cause.errors[1], KeyboardInterrupt)
        assert running.submit([2, 3]).result(timeout=60).output == [20, 30]


def test_a_fleet_item_whose_tool_raised_keyboard_interrupt_fails_naming_it() -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called (a task raising KeyboardInterrupt
    ends the computation with it), for a fleet item whose agent's tool raised one. The node's error
    used to end in "first: item 0: " and nothing more: a KeyboardInterrupt's text is empty."""

    @tool
    def quit_now(reason: str) -> str:
        """Quit at once."""
        raise KeyboardInterrupt

    call = InferenceResponse.of_tool_calls([("c1", "quit_now", {"reason": "done"})])
    agent = Agent("w", provider=ScriptedProvider([call], cycle=True), tools=[quit_now])
    with pytest.raises(FormationRuntimeError, match=r"first: item 0: KeyboardInterrupt") as info:
        Formation("f").add_fleet("f", agent, max_workers=1).run(["a", "b"], timeout=30)
    assert isinstance(info.value.__cause__, FleetItemsError)
    assert all(isinstance(e, KeyboardInterrupt) for e in info.value.__cause__.errors.values())
