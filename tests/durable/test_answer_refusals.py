"""A resume refused for its answer (one the store cannot journal) leaves the suspended
run as it was: suspended, not claimed in this process, and resumable with an answer the
store can keep. Every way in: resume, resume_stream, aresume, aresume_stream, and a
started formation's resume and aresume; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.store import RunNotResumableError, RunStore, SerializationError


def _formation() -> Formation:
    return Formation("asks").add_function("ask", lambda v: f"{v}:{interrupt({'ok?': v})}")


def _sync(f: Formation, run_id: str, store: RunStore) -> None:
    f.resume(run_id, store=store, answer=object())


def _stream(f: Formation, run_id: str, store: RunStore) -> None:
    list(f.resume_stream(run_id, store=store, answer=object()))


def _awaited(f: Formation, run_id: str, store: RunStore) -> None:
    asyncio.run(f.aresume(run_id, store=store, answer=object()))


def _awaited_stream(f: Formation, run_id: str, store: RunStore) -> None:
    async def drain() -> None:
        async for _ in f.aresume_stream(run_id, store=store, answer=object()):
            pass

    asyncio.run(drain())


def _started(f: Formation, run_id: str, store: RunStore) -> None:
    with f.start(store=store) as running:
        running.resume(run_id, answer=object()).result(timeout=10)


def _started_awaited(f: Formation, run_id: str, store: RunStore) -> None:
    async def go() -> None:
        with f.start(store=store) as running:
            await running.aresume(run_id, answer=object())

    asyncio.run(go())


_WAYS: dict[str, Callable[[Formation, str, RunStore], Any]] = {
    "resume": _sync, "resume_stream": _stream, "aresume": _awaited, "aresume_stream": _awaited_stream,
    "started.resume": _started, "started.aresume": _started_awaited,
}


@pytest.mark.parametrize("way", sorted(_WAYS))
def test_an_answer_the_store_cannot_keep_is_refused_and_the_run_stays_resumable(location: str, way: str) -> None:
    f = _formation()
    with RunStore(location) as store:
        run_id = f.run("trip", store=store).run_id
        assert store.get(run_id).status == "suspended"

        with pytest.raises(SerializationError):
            _WAYS[way](f, run_id, store)

        assert store.get(run_id).status == "suspended"
        resumed = f.resume(run_id, store=store, answer="yes")
        assert (resumed.status, resumed.output) == ("succeeded", "trip:yes")


def test_an_answer_for_a_run_being_resumed_is_refused_saying_it_is_running(location: str) -> None:
    # not with "no pending interrupt: resume it without answer=", which is refused again (it is running)
    release = threading.Event()

    def ask(v: str) -> str:
        answer = interrupt({"ok?": v})
        release.wait(10)
        return f"{v}:{answer}"

    f = Formation("asks").add_function("ask", ask)
    with RunStore(location) as store, f.start(store=store) as running:
        run_id = running.submit("trip").result(10).run_id
        resumed = running.resume(run_id, answer="yes")
        try:
            deadline = time.monotonic() + 10
            while store.get(run_id).status != "running" and time.monotonic() < deadline:
                time.sleep(0.01)
            for answer_again in (lambda: f.resume(run_id, store=store, answer="again"),
                                 lambda: running.resume(run_id, answer="again").result(10)):
                with pytest.raises(RunNotResumableError, match=r"is running") as info:
                    answer_again()
                assert info.value.status == "running"
        finally:
            release.set()
        assert resumed.result(10).output == "trip:yes"
