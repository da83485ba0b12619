"""break_before/break_after suspend a journalled run at a node like interrupt();
resume continues it, without stopping again at the visit it stopped at."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation import RunOptions
from wingman_actors.store import RunStore


def chain(calls: Counter[str] | None = None) -> Formation:
    seen: Counter[str] = Counter() if calls is None else calls

    def step(name: str) -> Any:
        def fn(x: str) -> str:
            seen[name] += 1
            return x + name
        return fn

    return (Formation("chain").add_function("a", step("a")).add_function("b", step("b"))
            .add_function("c", step("c")).connect("a", "b").connect("b", "c"))


def inc(n: int) -> int:
    return n + 1


def loop() -> Formation:
    return (Formation("loop").add_function("inc", inc).add_function("show", str)
            .connect("inc", "inc", when=lambda n: n < 3).connect("inc", "show", when=lambda n: n >= 3))


def test_break_before_suspends_the_run_with_the_nodes_input(store: RunStore) -> None:
    calls: Counter[str] = Counter()
    result = chain(calls).run("x", store=store, break_before=["b"])
    assert result.status == "suspended"
    assert result.interrupt == {"node": "b", "payload": {"breakpoint": "before", "input": "xa"}}
    assert calls == Counter(a=1)
    assert store.get(result.run_id).status == "suspended"


def test_break_after_suspends_the_run_with_the_nodes_output(store: RunStore) -> None:
    calls: Counter[str] = Counter()
    result = chain(calls).run("x", store=store, break_after=["b"])
    assert result.interrupt == {"node": "b", "payload": {"breakpoint": "after", "output": "xab"}}
    assert result.nodes["b"].output == "xab"
    assert calls == Counter(a=1, b=1)


@pytest.mark.parametrize("where", ["break_before", "break_after"])
def test_resume_continues_from_the_breakpoint_it_stopped_at_without_stopping_again(
    store: RunStore, where: str
) -> None:
    # before: the visit it stopped before runs; after: the journalled output is sent on
    calls: Counter[str] = Counter()
    f = chain(calls)
    stopped = f.run("x", store=store, **{where: ["b"]})
    result = f.resume(stopped.run_id, store=store)
    assert (result.status, result.output) == ("succeeded", "xabc")
    assert calls == Counter(a=1, b=1, c=1)


def test_a_resumed_run_stops_at_its_later_breakpoints(store: RunStore) -> None:
    f = chain()
    first = f.run("x", store=store, break_before=["b"], break_after=["c"])
    second = f.resume(first.run_id, store=store)
    assert second.interrupt == {"node": "c", "payload": {"breakpoint": "after", "output": "xabc"}}
    assert f.resume(second.run_id, store=store).output == "xabc"


def test_a_loop_node_with_a_breakpoint_stops_at_every_visit(store: RunStore) -> None:
    f = loop()
    result = f.run(0, store=store, break_after=["inc"])
    seen = []
    while result.status == "suspended":
        assert result.interrupt is not None
        seen.append(result.interrupt["payload"]["output"])
        result = f.resume(result.run_id, store=store)
    assert seen == [1, 2, 3]
    assert result.output == "3"


def test_breakpoints_given_to_resume_replace_the_runs_own(store: RunStore) -> None:
    f = chain()
    first = f.run("x", store=store, break_before=["b"], break_after=["c"])
    result = f.resume(first.run_id, store=store, break_after=[])
    assert (result.status, result.output) == ("succeeded", "xabc")


def test_a_node_interrupt_after_a_breakpoint_still_asks(store: RunStore) -> None:
    def ask(x: str) -> str:
        return f"{x}:{interrupt('ok?')}"

    f = Formation("ask").add_function("a", str.upper).add_function("ask", ask).connect("a", "ask")
    stopped = f.run("x", store=store, break_before=["ask"])
    asked = f.resume(stopped.run_id, store=store)
    assert asked.interrupt == {"node": "ask", "payload": "ok?"}
    assert f.resume(asked.run_id, store=store, answer="yes").output == "X:yes"


def test_breakpoints_come_through_run_options(store: RunStore) -> None:
    result = chain().run("x", options=RunOptions(store=store, break_before=["c"]))
    assert result.interrupt == {"node": "c", "payload": {"breakpoint": "before", "input": "xab"}}


def test_breakpoints_work_on_submitted_runs(store: RunStore) -> None:
    with chain().start(store=store) as running:
        result = running.submit("x", break_after=["a"]).result(timeout=10)
        assert result.interrupt == {"node": "a", "payload": {"breakpoint": "after", "output": "xa"}}
        assert running.resume(result.run_id).result(timeout=10).output == "xabc"


def test_a_breakpoint_without_a_store_is_refused_naming_the_fix() -> None:
    with pytest.raises(FormationSetupError, match=r"store='runs.sqlite'"):
        chain().run("x", break_before=["b"])


def test_a_breakpoint_on_an_unknown_node_is_refused_listing_the_nodes(store: RunStore) -> None:
    with pytest.raises(FormationSetupError, match=r"no node named 'bb'; the nodes are 'a', 'b', 'c'"):
        chain().run("x", store=store, break_after=["bb"])


@pytest.mark.parametrize("option", ["break_before", "break_after"])
def test_a_breakpoint_on_an_unknown_node_blames_the_option_not_the_formation(store: RunStore, option: str) -> None:
    with pytest.raises(FormationSetupError) as refused:
        chain().run("x", store=store, **{option: ["bb", "zz"]})
    message = str(refused.value)
    assert "not valid" not in message
    assert f"{option}: no node named 'bb', 'zz'; the nodes are 'a', 'b', 'c'" in message
    assert message.splitlines()[0] == f"breakpoint option {option}= is wrong for formation 'chain' (1 problem(s)):"


def test_resuming_with_a_breakpoint_on_an_unknown_node_blames_the_option_not_the_formation(store: RunStore) -> None:
    stopped = chain().run("x", store=store, break_after=["a"])
    with pytest.raises(FormationSetupError) as refused:
        chain().resume(stopped.run_id, store=store, break_before=["nope"])
    assert "not valid" not in str(refused.value) and "break_before: no node named 'nope'" in str(refused.value)
    assert store.get(stopped.run_id).status == "suspended"


def test_a_breakpoint_given_as_one_string_is_refused(store: RunStore) -> None:
    with pytest.raises(FormationSetupError, match=r"list of node names"):
        chain().run("x", store=store, break_after="b")  # type: ignore[arg-type]


def test_start_refuses_breakpoints_in_its_options(store: RunStore) -> None:
    with pytest.raises(TypeError, match="give them to submit"):
        chain().start(options=RunOptions(store=store, break_before=["b"]))


def test_a_resumed_runs_journalled_visits_carry_their_outputs(store: RunStore) -> None:
    f = chain()
    stopped = f.run("x", store=store, break_before=["c"])
    result = f.resume(stopped.run_id, store=store)
    assert result.nodes["a"].outputs == ["xa"]
    assert (result.nodes["b"].output, result.nodes["b"].attempts) == ("xab", 0)


def test_run_stream_stops_at_a_breakpoint(store: RunStore) -> None:
    events = list(chain().run_stream("x", store=store, break_after=["a"]))
    result = events[-1].data["result"]
    assert result.interrupt == {"node": "a", "payload": {"breakpoint": "after", "output": "xa"}}


def test_a_journalled_visits_node_finished_event_carries_its_output(store: RunStore) -> None:
    f = chain()
    stopped = f.run("x", store=store, break_before=["c"])
    events = list(f.resume_stream(stopped.run_id, store=store))
    journalled = {e.node: e.data["output"] for e in events if e.data.get("journalled")}
    assert journalled == {"a": "xa", "b": "xab"}


def test_a_resumed_runs_inner_journalled_visits_carry_their_outputs(store: RunStore) -> None:
    broken = {"b": True}

    def flaky(x: str) -> str:
        if broken["b"]:
            raise RuntimeError("provider outage")
        return x + "?"

    inner = Formation("inner").add_function("a", str.upper).add_function("b", flaky).connect("a", "b")
    outer = Formation("outer").add_formation("sub", inner).add_function("n", len).connect("sub", "n")
    with pytest.raises(FormationRuntimeError) as info:
        outer.run("hey", store=store)
    broken["b"] = False
    result = outer.resume(info.value.run_id or "", store=store)
    assert (result.nodes["sub/a"].output, result.nodes["sub/a"].attempts) == ("HEY", 0)  # from the inner journal
    assert result.nodes["sub/b"].output == "HEY?"


class _SlowInterrupts(RunStore):
    """Journals an ``interrupt()`` of node ``y`` slowly, so a breakpoint elsewhere is
    reached while it is being written."""

    def record_interrupt(self, run_id: str, node: str, visit: int, payload: Any, *,
                         item: int | None = None) -> None:
        if node == "y":
            time.sleep(0.3)
        super().record_interrupt(run_id, node, visit, payload, item=item)


def test_an_interrupt_and_a_breakpoint_on_parallel_branches_suspend_at_the_one_the_store_says_is_pending(
    tmp_path: Any,
) -> None:
    # The interrupt() of y is being journalled while the other branch reaches its
    # breakpoint before x: the run must suspend at the one that is pending in the store, so
    # the answer given to resume goes to the question the result showed.
    answers: list[Any] = []

    def y(v: int) -> str:
        answers.append(interrupt({"question": "approve?"}))
        return f"y{v}"

    def a(v: int) -> int:
        time.sleep(0.1)  # y's interrupt is being journalled when x's breakpoint comes
        return v + 1

    f = (Formation("race").add_function("start", lambda v: v).add_function("a", a)
         .add_function("x", lambda v: f"x{v}").add_function("y", y).add_function("end", lambda d: d)
         .connect("start", "a", "x", "end").connect("start", "y", "end"))
    with _SlowInterrupts(tmp_path / "runs.sqlite") as store:
        first = f.run(1, store=store, run_id="r1", break_before=["x"])
        assert first.status == "suspended"
        pending = store.get("r1").interrupt
        assert pending is not None and pending.node == first.interrupt["node"], (pending, first.interrupt)
        # answer what the result asked; go on until the run ends
        result = first
        while result.status == "suspended":
            node = result.interrupt["node"]
            result = f.resume("r1", store=store, answer="yes" if node == "y" else None)
    assert result.output == {"x": "x2", "y": "y1"}
    assert answers[-1] == "yes"
