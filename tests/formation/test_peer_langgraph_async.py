"""Behaviours ported from LangGraph's async tests (langchain-ai/langgraph,
``libs/langgraph/tests/test_pregel_async.py``), translated to ``arun``, ``astream``,
``astart``/``asubmit`` and ``async def`` nodes: a failing node or a cancelled caller
cancels the coroutines still running (their ``finally`` blocks run), time limits hold
while the caller is slow, a cancelled or abandoned journalled run keeps what finished,
and async nodes in loops and subgraphs join per round. (The sync side:
``test_peer_langgraph_more.py``.)"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

SLACK = 1.0  # a loaded, shared 2-core machine


class Hang:
    """An ``async def`` node that waits ``seconds`` (long), saying when it started and
    when its ``finally`` ran."""

    def __init__(self, seconds: float = 30.0) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.unwound = threading.Event()

    async def __call__(self, x: Any) -> Any:
        self.started.set()
        try:
            await asyncio.sleep(self.seconds)
        finally:
            self.unwound.set()
        return x


async def until(event: threading.Event, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not event.is_set():
        assert time.monotonic() < deadline, "the event was never set"
        await asyncio.sleep(0.005)


def identity(x: Any) -> Any:
    return x


# -- a failure or a cancel reaches the coroutines in flight -------------------------------


def test_a_node_that_fails_cancels_its_async_sibling_whose_finally_runs_and_the_run_fails_at_once() -> None:
    # langgraph test_pregel_async.py::test_node_cancellation_on_other_node_exception
    hang = Hang()

    async def iambad(x: int) -> int:
        await asyncio.sleep(0.05)
        raise ValueError("I am bad")

    f = (Formation("bad").add_function("start", identity).add_function("agent", hang).add_function("bad", iambad)
         .connect("start", "agent").connect("start", "bad"))

    async def main() -> float:
        t0 = time.perf_counter()
        with pytest.raises(FormationRuntimeError, match=r"I am bad") as info:
            await f.arun(1)
        assert info.value.node == "bad"
        return time.perf_counter() - t0

    assert asyncio.run(main()) < 0.05 + SLACK
    assert hang.started.is_set() and hang.unwound.wait(5)


def test_asyncio_wait_for_on_arun_cancels_an_async_node_inside_a_subgraph() -> None:
    # langgraph test_pregel_async.py::test_node_cancellation_on_external_cancel, the node in a subgraph
    hang = Hang()
    inner = Formation("inner").add_function("prep", identity).add_function("agent", hang).connect("prep", "agent")
    f = Formation("outer").add_function("start", identity).add_formation("sub", inner).connect("start", "sub")

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(f.arun(1), 0.5)

    asyncio.run(main())
    assert hang.started.is_set() and hang.unwound.wait(5)


def test_a_node_timeout_holds_while_the_astream_consumer_is_slow() -> None:
    # langgraph test_pregel_async.py::test_step_timeout_on_stream_hang
    hang = Hang(seconds=3)

    async def alittlewhile(x: int) -> int:
        await asyncio.sleep(0.1)
        return x

    f = (Formation("slow_reader").add_function("start", identity).add_function("awhile", hang, timeout=0.5)
         .add_function("alittlewhile", alittlewhile).connect("start", "awhile").connect("start", "alittlewhile"))

    async def main() -> tuple[float, list[str], str]:
        t0 = time.perf_counter()
        kinds: list[str] = []
        last = None
        async for event in f.astream(1):
            kinds.append(event.type.value)
            last = event
            await asyncio.sleep(0.3)  # the consumer hangs on every event
        assert last is not None
        return time.perf_counter() - t0, kinds, str(last.data)

    took, kinds, data = asyncio.run(main())
    assert kinds[-1] == "run_failed" and "awhile" in data
    assert hang.unwound.wait(5)
    assert took < 3


# -- durable runs: what finished before a cancel or an early exit is kept ------------------


def test_a_journalled_run_cancelled_through_its_awaiting_task_resumes_without_rerunning_what_finished(
    store: RunStore,
) -> None:
    # langgraph test_pregel_async.py::test_checkpoint_put_after_cancellation
    count = Counter()
    hang = Hang()

    def first(x: int) -> int:
        count.hit("first")
        return x + 1

    f = Formation("cancel_kept").add_function("first", first).add_function("second", hang).connect("first", "second")

    async def main() -> None:
        task = asyncio.ensure_future(f.arun(1, store=store, run_id="cancel-kept-1"))
        await until(hang.started)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert hang.unwound.wait(5)
    assert store.get("cancel-kept-1").status == "cancelled"
    f.graph.nodes["second"]["fn"] = lambda x: x * 10
    result = asyncio.run(f.aresume("cancel-kept-1", store=store))
    assert result.output == 20
    assert count.calls == {"first": 1}


def test_leaving_astream_of_a_journalled_run_early_leaves_it_resumable_from_where_it_was(store: RunStore) -> None:
    # langgraph test_pregel_async.py::test_cancel_graph_astream (the checkpoint is saved on cancel)
    count = Counter()
    hang = Hang()

    def first(x: int) -> int:
        count.hit("first")
        return x + 1

    f = Formation("left_early").add_function("first", first).add_function("second", hang).connect("first", "second")

    async def main() -> str:
        run_id = ""
        async for event in f.astream(1, store=store):
            run_id = event.run_id
            if event.type == "node_started" and event.node == "second":
                break
        return run_id

    run_id = asyncio.run(main())
    assert hang.unwound.wait(5)
    assert store.get(run_id).status == "interrupted"  # DESIGN: leaving early, a journalled run is interrupted
    f.graph.nodes["second"]["fn"] = lambda x: x * 10
    assert f.resume(run_id, store=store).output == 20
    assert count.calls == {"first": 1}


def test_an_async_node_that_fails_in_a_later_round_resumes_from_that_round(store: RunStore) -> None:
    # langgraph test_pregel_async.py::test_checkpoint_recovery_async
    count = Counter()
    broken = [True]

    async def step(x: int) -> int:
        count.hit(f"step:{x}")
        await asyncio.sleep(0.01)
        if x == 2 and broken[0]:
            raise ConnectionError("flaky")
        return x + 1

    f = (Formation("recover").add_function("start", identity).add_function("step", step)
         .add_function("done", identity)
         .connect("start", "step").connect("step", "step", when=lambda x: x < 4).connect("step", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError):
        asyncio.run(f.arun(0, store=store, run_id="recover-async-1"))
    broken[0] = False
    assert asyncio.run(f.aresume("recover-async-1", store=store)).output == 4
    assert count.calls == {"step:0": 1, "step:1": 1, "step:2": 2, "step:3": 1}


def test_an_async_node_inside_a_subgraph_interrupts_and_aresume_answers_it(store: RunStore) -> None:
    # langgraph test_pregel_async.py::test_nested_graph_interrupts (async)
    count = Counter()

    async def inner_1(x: str) -> str:
        count.hit("inner_1")
        return f"{x}|inner_1"

    async def inner_2(x: str) -> str:
        await asyncio.sleep(0)
        return f"{x}|{interrupt('inner?')}"

    inner = Formation("inner").add_function("inner_1", inner_1).add_function("inner_2", inner_2)
    f = (Formation("outer").add_function("outer_1", lambda x: f"{x}|outer_1")
         .add_formation("inner", inner.connect("inner_1", "inner_2")).connect("outer_1", "inner"))

    async def main() -> Any:
        first = await f.arun("v", store=store)
        assert first.status == "suspended"
        assert first.interrupt == {"node": "inner/inner_2", "payload": "inner?"}
        return await f.aresume(first.run_id, store=store, answer="ok")

    assert asyncio.run(main()).output == "v|outer_1|inner_1|ok"
    assert count.calls == {"inner_1": 1}


# -- concurrency, batches, joins ---------------------------------------------------------


def test_an_async_map_with_max_workers_awaits_at_most_that_many_items_at_once() -> None:
    # langgraph test_pregel_async.py::test_max_concurrency
    lock, running, peak = threading.Lock(), [0], [0]

    async def work(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        await asyncio.sleep(0.01)
        with lock:
            running[0] -= 1
        return i

    f = Formation("many").add_function("plan", lambda n: list(range(n))).add_map("work", work, max_workers=10)
    assert asyncio.run(f.connect("plan", "work").arun(60)).output == list(range(60))
    assert 1 < peak[0] <= 10


def test_a_batch_of_asubmits_gathered_gives_each_input_its_own_output_in_order() -> None:
    # langgraph test_pregel_async.py::test_batch_two_processes_in_out
    async def one(x: int) -> int:
        await asyncio.sleep(0.001 * (x % 5))
        return x + 1

    f = Formation("batch").add_function("one", one).add_function("two", lambda x: x * 10).connect("one", "two")

    async def main() -> list[int]:
        async with f.astart() as running:
            results = await asyncio.gather(*(running.asubmit(i) for i in range(30)))
            return [r.output for r in results]

    assert asyncio.run(main()) == [(i + 1) * 10 for i in range(30)]


def test_async_branches_that_finish_in_reverse_order_each_round_are_joined_per_round() -> None:
    # langgraph test_pregel_async.py::test_in_one_fan_out_state_graph_waiting_edge (async), in a cycle
    seen: list[tuple[str, str]] = []

    async def left(n: int) -> str:
        await asyncio.sleep(0.04 if n % 2 == 0 else 0.0)
        return f"L{n}"

    async def right(n: int) -> str:
        await asyncio.sleep(0.0 if n % 2 == 0 else 0.04)
        return f"R{n}"

    def meet(left: str, right: str) -> int:
        seen.append((left, right))
        return int(left[1:]) + 1

    f = (Formation("rounds").add_function("entry", identity).add_function("fork", identity)
         .add_function("left", left).add_function("right", right).add_function("meet", meet)
         .add_function("done", identity)
         .connect("entry", "fork").connect("fork", "left", "meet").connect("fork", "right", "meet")
         .connect("meet", "fork", when=lambda n: n < 4).connect("meet", "done", otherwise=True))
    assert asyncio.run(f.arun(0)).output == 4
    assert seen == [("L0", "R0"), ("L1", "R1"), ("L2", "R2"), ("L3", "R3")]


def test_astream_of_a_subgraph_of_async_nodes_reports_the_inner_nodes_by_path_in_order() -> None:
    # langgraph test_pregel_async.py::test_stream_subgraphs_during_execution
    async def inner_1(x: int) -> int:
        await asyncio.sleep(0.01)
        return x + 1

    inner = Formation("inner").add_function("inner_1", inner_1).add_function("inner_2", lambda x: x * 2)
    f = (Formation("outer").add_function("outer_1", identity).add_formation("inner", inner.connect("inner_1", "inner_2"))
         .add_function("outer_2", identity).connect("outer_1", "inner", "outer_2"))

    async def main() -> list[str | None]:
        return [e.node async for e in f.astream(1) if e.type == "node_finished"]

    assert asyncio.run(main()) == ["outer_1", "inner/inner_1", "inner/inner_2", "inner", "outer_2"]


def test_a_run_timeout_through_arun_cancels_every_async_branch_in_flight() -> None:
    # langgraph test_pregel_async.py::test_node_cancellation_on_external_cancel, with parallel branches
    hang_a, hang_b = Hang(), Hang()
    f = (Formation("both").add_function("start", identity).add_function("a", hang_a).add_function("b", hang_b)
         .connect("start", "a").connect("start", "b"))

    async def main() -> float:
        t0 = time.perf_counter()
        with pytest.raises(FormationRuntimeError):
            await f.arun(1, timeout=0.3)
        return time.perf_counter() - t0

    assert asyncio.run(main()) < 0.3 + SLACK
    assert hang_a.unwound.wait(5) and hang_b.unwound.wait(5)


def test_an_async_node_timed_out_once_is_retried_and_its_first_coroutines_finally_ran() -> None:
    # langgraph test_pregel_async.py::test_step_timeout (a timed-out task retried under a RetryPolicy)
    count = Counter()
    unwound = threading.Event()

    async def slow_once(x: int) -> int:
        if count.hit("n") == 1:
            try:
                await asyncio.sleep(30)
            finally:
                unwound.set()
        return x * 2

    f = Formation("retry_timeout").add_function("n", slow_once, timeout=0.2, retries=1, backoff=0)
    result = asyncio.run(f.arun(21))
    assert result.output == 42 and result.nodes["n"].attempts == 2
    assert unwound.is_set()


class SlowCleanup:
    """An ``async def`` node that waits long and, when cancelled, awaits its cleanup
    (``cleanup_s``) before it ends, as closing a connection does; ``log`` says how far it got."""

    def __init__(self, cleanup_s: float = 0.1) -> None:
        self.cleanup_s = cleanup_s
        self.started = threading.Event()
        self.log: list[str] = []

    async def __call__(self, x: Any) -> Any:
        self.started.set()
        try:
            await asyncio.sleep(30)
        finally:
            self.log.append("cleanup started")
            await asyncio.sleep(self.cleanup_s)
            self.log.append("cleanup finished")
        return x

    def finished(self, timeout: float = 3.0) -> bool:
        deadline = time.monotonic() + timeout
        while "cleanup finished" not in self.log and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.log == ["cleanup started", "cleanup finished"]


def test_cancelling_the_task_awaiting_arun_lets_the_async_nodes_cleanup_finish_its_awaits() -> None:
    # langgraph test_pregel_async.py::test_py_async_with_cancel_behavior (an async context's exit runs to its end)
    node = SlowCleanup()
    f = Formation("cleanup").add_function("node", node)

    async def main() -> None:
        task = asyncio.ensure_future(f.arun(1))
        await until(node.started)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert node.finished()


def test_a_node_timeout_lets_the_cancelled_async_nodes_cleanup_finish_its_awaits() -> None:
    # langgraph test_pregel_async.py::test_checkpoint_put_after_cancellation (the cancelled write's "end" is logged)
    node = SlowCleanup(cleanup_s=0.2)
    f = Formation("cleanup").add_function("node", node, timeout=0.1)
    with f.start() as running:
        for _ in range(5):  # the run's failure once cancelled the visit again, cutting the cleanup short
            node.log.clear()
            with pytest.raises(FormationRuntimeError, match=r"timed out"):
                running.submit(1).result(10)
            assert node.finished()
