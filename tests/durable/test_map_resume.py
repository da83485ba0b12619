"""Map nodes in journalled runs: each item is journalled as it finishes, and a resumed
run (after a failure, or after its process was killed) runs only the items that were not."""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.durable import map_worker
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore


def test_map_items_are_journalled_as_they_finish_before_the_visit(store: RunStore) -> None:
    f = Formation("m").add_function("split", lambda s: s.split()).add_map("up", str.upper).connect("split", "up")

    result = f.run("p q r", store=store)

    journal = store.load(result.run_id)
    assert journal.items[("up", 1)] == {0: "P", 1: "Q", 2: "R"}
    kinds = [(e.kind, e.node) for e in journal.entries]
    assert kinds.index(("visit", "up")) > max(i for i, k in enumerate(kinds) if k == ("item", "up"))


def test_a_failed_run_resumes_running_only_the_items_not_journalled(store: RunStore) -> None:
    calls: Counter[str] = Counter()
    lock = threading.Lock()
    broken = {"on": True}

    def up(word: str) -> str:
        with lock:
            calls[word] += 1
        if broken["on"] and word == "q":
            raise RuntimeError("outage")
        return word.upper()

    f = Formation("m").add_function("split", lambda s: s.split()).add_map("up", up, max_workers=3)
    f.connect("split", "up")
    with pytest.raises(FormationRuntimeError) as info:
        f.run("p q r", store=store)
    broken["on"] = False
    calls.clear()

    result = f.resume(info.value.run_id or "", store=store)

    assert result.output == ["P", "Q", "R"]
    assert calls == Counter({"q": 1})


@pytest.mark.parametrize("is_async", [False, True], ids=["function", "async-function"])
def test_an_item_that_calls_interrupt_suspends_the_run_and_resumes_alone(store: RunStore, is_async: bool) -> None:
    calls: Counter[int] = Counter()

    def check(x: int) -> int:
        calls[x] += 1
        if x == 2:
            return x * (10 if interrupt({"ok?": x}) == "yes" else -1)
        return x * 10

    async def acheck(x: int) -> int:
        await asyncio.sleep(0.001)
        return check(x)

    f = Formation("m").add_map("check", acheck if is_async else check)
    suspended = f.run([1, 2, 3], store=store)
    assert suspended.status == "suspended"
    assert suspended.interrupt == {"node": "check", "payload": {"ok?": 2}}

    result = f.resume(suspended.run_id, store=store, answer="yes")

    assert result.output == [10, 20, 30]
    assert calls == Counter({1: 1, 2: 2, 3: 1})


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_killed_run_resumes_without_rerunning_the_items_journalled_before_the_kill(tmp_path: Path) -> None:
    store_path, log = tmp_path / "runs.sqlite", tmp_path / "items.log"
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.durable.map_worker"])
    child = ctx.Process(target=map_worker.work, args=(str(store_path), str(log), "m1"))
    child.start()
    deadline = time.monotonic() + 30
    while (not log.exists() or len(log.read_text().split()) < 10) and time.monotonic() < deadline:
        time.sleep(0.002)
    child.kill()  # SIGKILL, some 10 of the 40 items in
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    with RunStore(store_path) as store:  # opening it marks the killed process's run interrupted
        journalled = set(store.load("m1").items.get(("word", 1), {}))
        assert 0 < len(journalled) < map_worker.ITEMS
        before = len(log.read_text().split())

        result = map_worker.build(log).resume("m1", store=store)

    assert result.output == [f"w{i}" for i in range(map_worker.ITEMS)]
    rerun = {int(x) for x in log.read_text().split()[before:]}
    assert rerun.isdisjoint(journalled)
    assert rerun | journalled == set(range(map_worker.ITEMS))
