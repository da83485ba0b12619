"""``async def`` function nodes: awaited on an event loop the runtime owns (one per node
replica), their output the awaited value; a timeout or a cancel cancels the coroutine (its
``finally`` runs); a retry awaits a fresh coroutine. (Async map functions:
tests/formation/test_map_nodes.py.)"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunStore
from wingman_actors.testing import ActorProbe, ReplyKind, node_actor, run_node, work


async def fetch(x: int) -> int:
    await asyncio.sleep(0.01)
    return x + 1


def test_an_async_function_node_outputs_the_awaited_value() -> None:
    result = Formation("a").add_function("fetch", fetch).run(1)

    assert result.output == 2


def test_an_async_function_node_runs_on_a_loop_thread_of_the_runtime_not_the_node_thread() -> None:
    seen: list[str] = []

    async def where(x: int) -> int:
        asyncio.get_running_loop()  # raises outside a running loop
        seen.append(threading.current_thread().name)
        return x

    Formation("a").add_function("where", where).run(1)

    assert seen == ["wingman-node-where-loop-0"]


def test_a_typed_node_after_an_async_node_takes_its_awaited_return_type() -> None:
    def double(x: int) -> int:
        return 2 * x

    f = Formation("a").add_function("fetch", fetch).add_function("double", double).connect("fetch", "double")

    assert f.run(1).output == 4


def test_validation_judges_an_async_node_by_its_awaited_return_type() -> None:
    async def label(x: int) -> str:
        return str(x)

    def double(x: int) -> int:
        return 2 * x

    f = Formation("a").add_function("label", label).add_function("double", double).connect("label", "double")

    with pytest.raises(FormationSetupError, match="'label' outputs str but parameter 'x' of 'double' expects int"):
        f.validate()


def test_an_async_function_node_takes_its_predecessors_as_keywords() -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    f = (Formation("j").add_function("a", lambda x: x).add_function("b", lambda x: 10 * x)
         .add_function("add", add).connect("a", "add").connect("b", "add"))

    assert f.run(2).output == 22


def test_an_async_function_node_with_a_blackboard_parameter_gets_the_runs_board() -> None:
    async def note(x: int, blackboard: Blackboard) -> int:
        await asyncio.sleep(0)
        blackboard.set("seen", x)
        return x

    board = Blackboard()
    Formation("b").add_function("note", note).run(3, blackboard=board)

    assert board.get("seen") == 3


def test_a_timeout_cancels_an_async_function_node_and_its_finally_runs() -> None:
    unwound = threading.Event()

    async def stuck(x: int) -> int:
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return x

    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError) as info:
        Formation("t").add_function("stuck", stuck, timeout=0.2).run(1)

    assert time.perf_counter() - t0 < 2
    assert isinstance(info.value.__cause__, NodeTimeoutError)
    assert unwound.wait(5)


def test_cancelling_a_run_cancels_its_async_function_node_and_its_finally_runs() -> None:
    started = threading.Event()
    unwound = threading.Event()

    async def stuck(x: int) -> int:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return x

    with Formation("c").add_function("stuck", stuck).start() as running:
        future = running.submit(1)
        assert started.wait(5)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(1)
        assert unwound.wait(5)


def test_a_retry_awaits_a_fresh_coroutine() -> None:
    calls: list[int] = []

    async def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return x

    result = Formation("r").add_function("flaky", flaky, retries=2, backoff=0).run(7)

    assert result.output == 7 and calls == [7, 7, 7]


def test_an_async_node_that_timed_out_is_retried_with_a_fresh_coroutine() -> None:
    calls: list[int] = []

    async def slow_once(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            await asyncio.sleep(30)
        return x

    result = Formation("r").add_function("slow", slow_once, timeout=0.2, retries=1, backoff=0).run(5)

    assert result.output == 5 and calls == [5, 5]


def test_an_async_node_error_fails_the_run_naming_the_node() -> None:
    async def broken(x: int) -> int:
        raise ValueError("bad input")

    with pytest.raises(FormationRuntimeError, match="broken") as info:
        Formation("e").add_function("broken", broken).run(1)

    assert isinstance(info.value.__cause__, ValueError)


def test_an_async_function_node_runs_alone_with_run_node() -> None:
    f = Formation("a").add_function("fetch", fetch)

    assert run_node(f, "fetch", 1).output == 2


def test_an_async_node_serves_many_runs_in_flight_on_one_loop() -> None:
    loops: set[int] = set()

    async def step(x: int) -> int:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.001)
        return x

    with Formation("p").add_function("step", step).start() as running:
        futures: list[Any] = [running.submit(i) for i in range(20)]
        assert [fut.result(10).output for fut in futures] == list(range(20))
    assert len(loops) == 1


def test_an_async_node_that_calls_interrupt_suspends_a_journalled_run_and_resumes(tmp_path: Path) -> None:
    async def ask(x: str) -> str:
        await asyncio.sleep(0)
        return f"{x}:{interrupt('ok?')}"

    f = Formation("ask").add_function("ask", ask)
    with RunStore(tmp_path / "runs.sqlite") as store:
        asked = f.run("x", store=store)
        assert (asked.status, asked.interrupt) == ("suspended", {"node": "ask", "payload": "ok?"})
        assert f.resume(asked.run_id, store=store, answer="yes").output == "x:yes"


def test_an_async_node_interrupt_logs_no_task_exception_never_retrieved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """LangGraph's test_pregel_async.py::test_dynamic_interrupt, with an async node: the
    suspension is handled, so asyncio must not report the visit's task as failed."""

    async def ask(x: str) -> str:
        await asyncio.sleep(0)
        return f"{x}:{interrupt('ok?')}"

    f = Formation("ask").add_function("ask", ask)
    with caplog.at_level(logging.ERROR, logger="asyncio"), RunStore(tmp_path / "runs.sqlite") as store:
        asked = f.run("x", store=store)
        assert f.resume(asked.run_id, store=store, answer="yes").output == "x:yes"
        gc.collect()  # a task whose exception nobody retrieved reports it when collected
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_a_standalone_node_actor_of_an_async_function_replies_the_awaited_value(actor_probe: ActorProbe) -> None:
    ref = node_actor(fetch, name="fetch", reply_to=actor_probe)
    try:
        ref.tell(work(41))
        reply = actor_probe.expect_message(ReplyKind.RESULT)
    finally:
        ref.stop()
    assert reply.payload == 42


def test_a_cancel_that_finds_an_async_node_mid_step_waits_for_the_step_and_its_finally_runs_before_arun_returns() -> None:
    # The cancel comes while the node's loop is inside one short blocking step (on a busy
    # machine, a step whose thread was descheduled looks the same). That is not code stuck
    # for good: the step ends, the loop takes the cancel and the node's finally runs before
    # arun gives the cancel back; a stuck replica would have been replaced and left behind.
    in_step, finished = threading.Event(), []

    async def busy_then_waits(x: int) -> int:
        try:
            in_step.set()
            time.sleep(0.03)  # one blocking step, shorter than the grace
            await asyncio.sleep(30)
        finally:
            finished.append(x)
        return x

    async def main() -> list[int]:
        task = asyncio.ensure_future(Formation("mid").add_function("busy", busy_then_waits).arun(1))
        while not in_step.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return list(finished)

    assert asyncio.run(main()) == [1]
