"""Runs with a store are journalled: the run before submit() returns, each visit and fleet
item as it finishes (before anything downstream), skips, and the final status."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def chain() -> Formation:
    return (Formation("chain").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2)
            .add_function("c", lambda x: f"={x}").connect("a", "b").connect("b", "c"))


def test_run_with_a_store_journals_every_visit_and_succeeds(store: RunStore) -> None:
    result = chain().run(1, store=store)
    assert (result.status, result.output, result.interrupt) == ("succeeded", "=4", None)
    journal = store.load(result.run_id)
    assert journal.run.status == "succeeded"
    assert journal.run.input == 1
    assert journal.visits == {"a": {1: 2}, "b": {1: 4}, "c": {1: "=4"}}
    assert [e.node for e in journal.entries if e.kind == "visit"] == ["a", "b", "c"]


def test_run_without_a_store_has_status_succeeded() -> None:
    result = chain().run(1)
    assert (result.status, result.interrupt, result.output) == ("succeeded", None, "=4")


def test_store_may_be_given_as_a_path_and_run_id_is_used(path: Path) -> None:
    result = chain().run(2, store=str(path), run_id="my-run")
    assert result.run_id == "my-run"
    with RunStore(path) as store:
        assert store.get("my-run").status == "succeeded"


def test_a_run_is_recorded_before_submit_returns(store: RunStore) -> None:
    gate = threading.Event()
    f = Formation("slow").add_function("a", lambda x: gate.wait(5) and x)
    with f.start(store=store) as running:
        future = running.submit(7)
        record = store.get(future.run_id)
        assert (record.status, record.input) == ("running", 7)
        gate.set()
        assert future.result().output == 7


def test_a_failed_run_is_journalled_failed_with_its_error(store: RunStore) -> None:
    def boom(x: int) -> int:
        raise ValueError("no luck")

    f = Formation("f").add_function("a", lambda x: x).add_function("b", boom).connect("a", "b")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    record = store.get(info.value.run_id or "")
    assert record.status == "failed"
    assert "no luck" in (record.error or "")
    assert store.load(record.id).visits == {"a": {1: 1}}


def test_a_cancelled_run_is_journalled_cancelled(store: RunStore) -> None:
    gate = threading.Event()
    f = Formation("slow").add_function("a", lambda x: gate.wait(5) and x)
    with f.start(store=store) as running:
        future = running.submit(1)
        assert future.cancel()
        gate.set()
    assert store.get(future.run_id).status == "cancelled"


def test_a_skipped_visit_is_journalled(store: RunStore) -> None:
    def boom(x: int) -> int:
        raise ValueError("skip me")

    f = (Formation("s").add_function("a", lambda x: x).add_function("b", boom, on_error="skip")
         .add_function("c", lambda a, b=None: (a, b)).connect("a", "b").connect("a", "c").connect("b", "c"))
    result = f.run(3, store=store)
    assert result.output == (3, None)
    assert list(store.load(result.run_id).skipped) == [("b", 1)]


def test_loop_visits_are_journalled_by_visit_number(store: RunStore) -> None:
    f = (Formation("loop").add_function("inc", lambda x: x + 1).add_function("out", lambda x: x)
         .connect("inc", "inc", when=lambda x: x < 3).connect("inc", "out", when=lambda x: x >= 3))
    result = f.run(0, store=store)
    assert result.output == 3
    assert store.load(result.run_id).visits["inc"] == {1: 1, 2: 2, 3: 3}


def test_fleet_items_are_journalled_as_they_finish(store: RunStore) -> None:
    agent = Agent("w", provider=ScriptedProvider(["x"], cycle=True))
    f = Formation("fl").add_function("split", lambda s: s.split()).add_fleet("fleet", agent, max_workers=2)
    f.connect("split", "fleet")
    result = f.run("p q r", store=store)
    assert result.output == ["x", "x", "x"]
    journal = store.load(result.run_id)
    assert journal.items[("fleet", 1)] == {0: "x", 1: "x", 2: "x"}
    kinds = [(e.kind, e.node) for e in journal.entries]
    assert kinds.index(("visit", "fleet")) > max(i for i, k in enumerate(kinds) if k == ("item", "fleet"))


def test_submit_with_run_id_without_a_store_is_refused() -> None:
    with chain().start() as running, pytest.raises(ValueError, match="needs a store"):
        running.submit(1, run_id="x")


def test_a_bad_store_argument_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="store must be a RunStore"):
        chain().run(1, store=42)  # type: ignore[arg-type]


def test_a_bad_store_argument_names_a_postgresql_url_among_what_store_takes() -> None:
    with pytest.raises(TypeError, match=r"the path of its SQLite file or a postgresql:// URL, got NoneType"):
        chain().fork("x", store=None, at="a", output=1)  # type: ignore[arg-type]


def test_a_run_cut_short_by_stop_is_interrupted_and_resumable(store: RunStore) -> None:
    gate = threading.Event()
    seen: list[int] = []

    def slow(x: int) -> int:
        seen.append(x)
        gate.wait(5)
        return x * 10

    f = Formation("stopped").add_function("a", lambda x: x + 1).add_function("b", slow).connect("a", "b")
    running = f.start(store=store)
    future = running.submit(1)
    while not seen:
        time.sleep(0.01)
    running.stop(timeout=0.1)
    gate.set()
    with pytest.raises(FormationRuntimeError):
        future.result()
    assert store.get(future.run_id).status == "interrupted"
    assert f.resume(future.run_id, store=store).output == 20
    assert store.load(future.run_id).visits["a"] == {1: 2}
