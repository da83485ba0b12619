"""Map nodes on each backend (the Ray tests are marked ``ray``), journalled runs included.
Node code runs in Ray worker processes there, so state across attempts lives in files
under ``tmp_path``."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.store import RunStore


def _square(x: int) -> int:
    return x * x


async def _later(x: int) -> str:
    await asyncio.sleep(0.01)
    return f"<{x}>"


def test_a_map_node_maps_a_function_and_an_async_function_on_each_backend(backend: str) -> None:
    formation = (Formation("maps").add_map("square", _square, max_workers=2).add_map("later", _later)
                 .connect("square", "later"))

    assert formation.run([1, 2, 3], backend=backend).output == ["<1>", "<4>", "<9>"]


def test_an_async_function_node_is_awaited_on_each_backend(backend: str) -> None:
    formation = Formation("awaits").add_function("later", _later).add_function("shout", str.upper).connect("later", "shout")

    assert formation.run(4, backend=backend).output == "<4>"


def test_a_timeout_cancels_an_async_function_node_on_each_backend(backend: str, tmp_path: Path) -> None:
    marker = tmp_path / "unwound"
    began = tmp_path / "began"

    async def stuck(x: int) -> int:
        if x == 0:
            return x  # the warm-up: the node's (Ray) actor is up before the timed attempt
        began.write_text("yes")
        try:
            await asyncio.sleep(30)
        finally:
            marker.write_text("yes")
        return x

    formation = Formation("stuck").add_function("stuck", stuck, timeout=1.0)
    with formation.start(backend=backend) as running:
        for _ in range(5):  # a loaded machine may take longer than the timeout to start a Ray actor
            if running.submit(0).exception(60) is None:
                break
        with pytest.raises(FormationRuntimeError) as info:
            running.submit(1).result(60)
        assert isinstance(info.value.__cause__, NodeTimeoutError)
        # waited for before stop(): on Ray, stopping kills the node's worker process
        deadline = time.monotonic() + 10
        while not (marker.exists() and marker.read_text() == "yes") and time.monotonic() < deadline:
            time.sleep(0.02)  # written by the node's process (a Ray worker's, on Ray)
        # on a loaded machine the input may reach the Ray actor after the interrupt: it never runs
        assert marker.exists() or not began.exists(), "the coroutine began and was not cancelled"


def test_a_retry_of_a_map_node_reruns_only_the_failed_items_on_each_backend(backend: str, tmp_path: Path) -> None:
    def flaky(x: int) -> int:
        with open(tmp_path / f"calls-{x}", "a") as fh:
            fh.write("x")
        if x == 2 and len((tmp_path / "calls-2").read_text()) == 1:
            raise ValueError("item 2 fails the first time")
        return x + 100

    formation = Formation("retry").add_map("flaky", flaky, retries=1, backoff=0.01)
    result = formation.run([1, 2, 3], backend=backend)

    assert result.output == [101, 102, 103]
    assert {x: len((tmp_path / f"calls-{x}").read_text()) for x in (1, 2, 3)} == {1: 1, 2: 2, 3: 1}


def test_a_map_item_that_interrupts_suspends_the_run_and_resumes_alone_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"

    def check(item: str) -> str:
        with open(calls, "a") as fh:
            fh.write(item + "\n")
        if item == "ask":
            return f"ask: {interrupt({'ok?': item})}"
        return item.upper()

    f = Formation("m").add_map("check", check, max_workers=3)
    with RunStore(tmp_path / "runs.sqlite") as store:
        suspended = f.run(["a", "ask", "c"], store=store, backend=backend)
        assert (suspended.status, suspended.interrupt) == ("suspended", {"node": "check", "payload": {"ok?": "ask"}})
        assert store.load(suspended.run_id).items[("check", 1)] == {0: "A", 2: "C"}
        with f.start(store=store, backend=backend) as running:
            resumed = running.resume(suspended.run_id, answer="yes").result(timeout=50)

    assert resumed.output == ["A", "ask: yes", "C"]
    assert sorted(calls.read_text().split()) == ["a", "ask", "ask", "c"]
