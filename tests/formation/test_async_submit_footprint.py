"""What a run of ``asubmit`` holds while it waits in a node: every object the collector
tracks is walked by each collection while it lives, and a burst of runs in flight is what
makes CPython's collections (and the event loop's longest stalls) come often. A run awaited
on a loop is settled there through one small object, not through a
``concurrent.futures.Future`` (its condition, lock, waiters and callbacks) that the
``AsyncRun`` would follow with a callback closure."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref

from wingman_actors import Formation


def test_a_run_of_asubmit_waiting_in_its_first_node_holds_few_tracked_objects() -> None:
    gate = threading.Event()

    def first(x: int) -> int:
        gate.wait(5)
        return x + 1

    def then(x: int) -> int:
        return x + 1

    formation = Formation("held").add_function("a", first).add_function("b", then).connect("a", "b")
    count = 200

    async def main() -> float:
        async with formation.astart() as running:
            blocker = running.asubmit(0)  # the node's one replica now waits on the gate
            await asyncio.sleep(0.05)
            gc.collect()
            before = len(gc.get_objects())
            runs = [running.asubmit(i) for i in range(count)]  # queued behind it
            gc.collect()
            held = (len(gc.get_objects()) - before - 1) / count  # less the list
            gate.set()
            results = await asyncio.gather(blocker, *runs)
            assert [r.output for r in results] == [2] + [i + 2 for i in range(count)]
        return held

    # 6 on CPython 3.11: the AsyncRun, its settler, the run's state and log, the work
    # queued for the first node and Pykka's envelope of it (21 when the run resolved a
    # RunFuture that the AsyncRun followed through a done-callback closure)
    assert asyncio.run(main()) <= 8


def test_a_settled_asubmit_run_kept_by_the_caller_does_not_keep_its_formation() -> None:
    async def plus_one(x: int) -> int:
        return x + 1

    async def main() -> tuple[object, weakref.ref[object]]:
        async with Formation("one").add_function("a", plus_one).astart() as running:
            run = running.asubmit(1)
            assert (await run).output == 2
            ref: weakref.ref[object] = weakref.ref(running)
        del running
        return run, ref

    run, ref = asyncio.run(main())
    gc.collect()
    assert run.done() and ref() is None
