"""Journalled runs of nested formations: the inner run is journalled in the outer run's
store, so a resume (after a failure, an interrupt or the process being killed) does not
repeat the inner visits that finished; an ``interrupt()`` inside suspends the outer run."""

from __future__ import annotations

import multiprocessing
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.durable import nested_worker
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._nesting import inner_run_id
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunStore


def logged(calls: list[str], node: str, fn: Any) -> Any:
    def run(x: Any) -> Any:
        calls.append(node)
        return fn(x)

    return run


def approval(calls: list[str], questions: int = 1) -> Formation:
    """draft → ask (``questions`` interrupts in a row)."""

    def ask(text: str) -> str:
        calls.append("ask")
        answers = [interrupt({"approve?": text, "question": i}) for i in range(questions)]
        return f"{text}: {'/'.join(answers)}"

    return Formation("approval").add_function("draft", logged(calls, "draft", lambda t: f"draft about {t}")) \
        .add_function("ask", ask).connect("draft", "ask")


def outer_of(inner: Formation, calls: list[str], **policies: Any) -> Formation:
    return (Formation("outer").add_function("topic", logged(calls, "topic", str.strip))
            .add_formation("sub", inner, **policies).add_function("publish", logged(calls, "publish", str.upper))
            .connect("topic", "sub", "publish"))


def test_an_interrupt_inside_suspends_the_outer_run_saying_where(store: RunStore) -> None:
    calls: list[str] = []
    result = outer_of(approval(calls), calls).run(" cats ", store=store)
    assert result.status == "suspended"
    assert result.interrupt == {"node": "sub/ask", "payload": {"approve?": "draft about cats", "question": 0}}
    assert store.get(result.run_id).status == "suspended"


def test_a_suspended_outer_run_traces_the_inner_nodes_that_ran(store: RunStore) -> None:
    calls: list[str] = []
    result = outer_of(approval(calls), calls).run(" cats ", store=store)
    assert result.status == "suspended"
    assert result.nodes["sub/draft"].status == "succeeded" and result.nodes["sub/draft"].parent == "sub"
    assert "sub/ask" in result.nodes


def test_an_interrupt_two_formations_deep_traces_every_level_while_suspended(store: RunStore) -> None:
    middle = Formation("middle").add_formation("deep", approval([]))
    suspended = Formation("outer").add_formation("mid", middle).run("dogs", store=store)
    assert suspended.nodes["mid/deep/draft"].status == "succeeded"


def test_resume_with_an_answer_finishes_the_inner_run_without_repeating_its_finished_visits(store: RunStore) -> None:
    calls: list[str] = []
    outer = outer_of(approval(calls), calls)
    suspended = outer.run(" cats ", store=store)
    result = outer.resume(suspended.run_id, store=store, answer="yes")
    assert result.status == "succeeded"
    assert result.output == "DRAFT ABOUT CATS: YES"
    assert calls == ["topic", "draft", "ask", "ask", "publish"]


def test_each_interrupt_of_the_inner_run_gets_its_own_answer(store: RunStore) -> None:
    calls: list[str] = []
    outer = outer_of(approval(calls, questions=2), calls)
    first = outer.run("cats", store=store)
    second = outer.resume(first.run_id, store=store, answer="yes")
    assert second.status == "suspended"
    assert second.interrupt == {"node": "sub/ask", "payload": {"approve?": "draft about cats", "question": 1}}
    result = outer.resume(first.run_id, store=store, answer="sure")
    assert result.output == "DRAFT ABOUT CATS: YES/SURE"


def test_an_interrupt_two_formations_deep_suspends_and_resumes_the_outer_run(store: RunStore) -> None:
    calls: list[str] = []
    middle = Formation("middle").add_formation("deep", approval(calls))
    outer = Formation("outer").add_formation("mid", middle)
    suspended = outer.run("dogs", store=store)
    assert suspended.interrupt is not None and suspended.interrupt["node"] == "mid/deep/ask"
    assert outer.resume(suspended.run_id, store=store, answer="ok").output == "draft about dogs: ok"
    assert calls == ["draft", "ask", "ask"]


def test_the_inner_run_is_journalled_under_an_id_derived_from_the_outer_run(store: RunStore) -> None:
    calls: list[str] = []
    inner = Formation("inner").add_function("draft", logged(calls, "draft", str.title))
    result = outer_of(inner, calls).run("cats", store=store)
    record = store.get(inner_run_id(result.run_id, "sub", 1))
    assert (record.formation, record.status) == ("inner", "succeeded")
    assert store.load(record.id).visits == {"draft": {1: "Cats"}}


def test_a_failed_run_resumes_without_repeating_the_inner_visits_that_finished(store: RunStore) -> None:
    calls: list[str] = []
    failing = [True]

    def check(text: str) -> str:
        calls.append("check")
        if failing[0]:
            raise ValueError("not yet")
        return text

    inner = Formation("inner").add_function("draft", logged(calls, "draft", str.title)).add_function("check", check)
    outer = outer_of(inner.connect("draft", "check"), calls)
    try:
        outer.run("cats", store=store, run_id="r1")
    except FormationRuntimeError:
        pass
    failing[0] = False
    assert outer.resume("r1", store=store).output == "CATS"
    assert calls == ["topic", "draft", "check", "check", "publish"]


def test_a_retry_of_a_journalled_formation_node_resumes_its_inner_run(store: RunStore) -> None:
    calls: list[str] = []

    def check(text: str) -> str:
        calls.append("check")
        if calls.count("check") == 1:
            raise ValueError("first time")
        return text

    inner = Formation("inner").add_function("draft", logged(calls, "draft", str.title)).add_function("check", check)
    result = outer_of(inner.connect("draft", "check"), calls, retries=1, backoff=0).run("cats", store=store)
    assert result.output == "CATS"
    assert calls == ["topic", "draft", "check", "check", "publish"]


def test_an_inner_run_that_had_succeeded_gives_its_journalled_output(store: RunStore) -> None:
    calls: list[str] = []
    inner = Formation("inner").add_function("draft", logged(calls, "draft", str.title))
    outer = outer_of(inner, calls)
    gone = RunStore(store.path)  # a process killed right after the inner run ended, before "sub" was journalled
    gone.begin_run("outer", outer.graph, "cats", run_id="r1")
    gone.record_visit("r1", "topic", 1, "cats")
    inner_id = inner_run_id("r1", "sub", 1)
    gone.begin_run("inner", inner.graph, "cats", run_id=inner_id, parent="r1")
    gone.record_visit(inner_id, "draft", 1, "Cats")
    gone.set_status(inner_id, "succeeded")
    gone.close()
    result = outer.resume("r1", store=store)
    assert result.output == "CATS"
    assert calls == ["publish"]


def test_resumed_inner_visits_report_journalled_events_by_path(store: RunStore) -> None:
    calls: list[str] = []
    outer = outer_of(approval(calls), calls)
    suspended = outer.run("cats", store=store)
    events: list[FormationEvent] = []
    outer.resume(suspended.run_id, store=store, answer="yes", on_event=events.append)
    journalled = [e.node for e in events if e.type is FormationEventType.NODE_FINISHED and e.data.get("journalled")]
    assert journalled == ["topic", "sub/draft"]


def _mapped(inner: Formation) -> Formation:
    items = Formation("outer").add_function("items", logged([], "items", lambda n: list(range(n))))
    return items.add_map("each", formation=inner, max_workers=2).connect("items", "each")


def test_a_journalled_map_resumes_without_rerunning_the_items_that_finished(store: RunStore) -> None:
    calls: list[int] = []
    failing = [True]

    def flaky(x: int) -> int:
        calls.append(x)
        if x == 1 and failing[0]:
            raise ValueError("not yet")
        return x

    f = _mapped(Formation("per-item").add_function("flaky", flaky))
    with pytest.raises(FormationRuntimeError):
        f.run(3, store=store, run_id="r1")
    failing[0] = False
    assert f.resume("r1", store=store).output == [0, 1, 2]
    assert sorted(calls) == [0, 1, 1, 2]
    assert store.load("r1").items[("each", 1)] == {0: 0, 1: 1, 2: 2}
    assert store.get(inner_run_id("r1", "each", 1) + "/1").status == "succeeded"


def test_an_interrupt_in_an_item_suspends_the_run_and_the_answer_reaches_that_item(store: RunStore) -> None:
    calls: list[int] = []

    def ask(x: int) -> str:
        calls.append(x)
        return f"{x}:{interrupt({'item': x})}" if x == 1 else str(x)

    f = _mapped(Formation("per-item").add_function("ask", ask))
    suspended = f.run(3, store=store)
    assert suspended.status == "suspended"
    assert suspended.interrupt == {"node": "each/1/ask", "payload": {"item": 1}}
    assert f.resume(suspended.run_id, store=store, answer="ok").output == ["0", "1:ok", "2"]
    assert sorted(calls) == [0, 1, 1, 2]


def test_a_run_killed_after_an_inner_node_finished_resumes_without_running_it_again(tmp_path: Path) -> None:
    store_path, log, hold = tmp_path / "runs.sqlite", tmp_path / "visits.log", tmp_path / "holding"
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.durable.nested_worker"])
    child = ctx.Process(target=nested_worker.work, args=(str(store_path), str(log), str(hold)))
    child.start()
    deadline = time.monotonic() + 30
    while not hold.exists() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert hold.exists(), "the child never reached the inner node b"
    child.kill()  # SIGKILL, while b holds: a's visit is journalled, b's is not
    child.join(10)
    assert child.exitcode == -signal.SIGKILL

    with RunStore(store_path) as store:  # opening it marks the dead child's runs interrupted
        assert store.get(nested_worker.RUN_ID).status == "interrupted"
        result = nested_worker.build(log, 1).resume(nested_worker.RUN_ID, store=store)
        assert store.get(inner_run_id(nested_worker.RUN_ID, "sub", 1)).status == "succeeded"
    assert result.output == "out 22"  # ((1 + 1) * 10) + 2
    assert log.read_text().split("\n") == ["0 src", "0 a", "0 b", "1 b", "1 out", ""]


def test_a_resumed_inner_run_shares_the_outer_runs_blackboard(store: RunStore) -> None:
    def ask(x: int, blackboard: Blackboard) -> int:
        blackboard.set("asked", interrupt("go?"))
        return x

    outer = Formation("outer").add_formation("sub", Formation("inner").add_function("ask", ask))
    board = Blackboard()
    suspended = outer.run(1, store=store, blackboard=board)
    assert outer.resume(suspended.run_id, store=store, answer="yes", blackboard=board).output == 1
    assert board.get("asked") == "yes"
