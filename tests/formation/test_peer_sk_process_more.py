"""More behaviours of Semantic Kernel's Process framework tests (microsoft/semantic-kernel,
``python/tests/unit/processes/``), ported to formations: external events a process waits
for (ours: ``interrupt()`` and ``resume(answer=...)``), errors of a sub-process and of a
step that times out inside a cycle, one step emitting several events at once, and step
state across a restart. The module docstring of ``test_peer_sk_process.py`` says where we
differ in general.

Deliberate difference pinned here: SK's Dapr runtime persists each step's state
(``KernelProcessStepState``) with the process, so a restarted process sees it. Our
blackboard's contents are not journalled (docs/durable-runs.md: "give the resumed run the
board it needs"): a resumed run sees only what its own board holds, and journalled visits
are not run again to rebuild it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunStore


def approval_loop(counter: Counter) -> Formation:
    """draft → approve (waits for a person) → draft again until approved → done."""

    def draft(value: Any) -> int:
        n = value["n"] if isinstance(value, dict) else value
        counter.hit(("draft", n))
        return int(n) + 1

    def approve(n: int) -> dict[str, Any]:
        counter.hit(("approve", n))
        return {"n": n, "ok": interrupt({"approve draft": n})}

    return (
        Formation("approval")
        .add_function("start", lambda x: x)
        .add_function("draft", draft)
        .add_function("approve", approve)
        .add_function("done", lambda d: f"draft {d['n']} approved")
        .connect("start", "draft")
        .connect("draft", "approve")
        .connect("approve", "draft", when=lambda d: not d["ok"])
        .connect("approve", "done", otherwise=True)
    )


def test_a_process_waits_for_an_external_event_and_continues_with_it(store: RunStore) -> None:
    """From semantic-kernel python/tests/unit/processes/local_runtime/test_local_process.py (test_send_message:
    an external event sent to a running process reaches the step listening for it)."""
    counter = Counter()
    f = approval_loop(counter)
    first = f.run(0, store=store, run_id="p")

    assert (first.status, first.interrupt) == ("suspended", {"node": "approve", "payload": {"approve draft": 1}})
    done = f.resume("p", store=store, answer=True)

    assert (done.status, done.output) == ("succeeded", "draft 1 approved")
    assert counter.count(("draft", 0)) == 1


def test_an_external_event_that_rejects_sends_the_process_round_its_cycle_again(store: RunStore) -> None:
    """From semantic-kernel python/tests/unit/processes (a human-in-the-loop cycle: a rejection routes back
    to the drafting step, which drafts again and waits again)."""
    counter = Counter()
    f = approval_loop(counter)
    f.run(0, store=store, run_id="p")
    again = f.resume("p", store=store, answer=False)

    assert again.interrupt == {"node": "approve", "payload": {"approve draft": 2}}
    done = f.resume("p", store=store, answer=True)

    assert done.output == "draft 2 approved"
    assert (counter.count(("draft", 0)), counter.count(("draft", 1))) == (1, 1)  # journalled drafts never rerun


def test_a_resumed_run_sees_only_the_board_it_is_given(store: RunStore) -> None:
    """From semantic-kernel python/tests/unit/processes/dapr_runtime/test_step_actor.py (a step's state is
    restored when its actor is activated again). Differs (see the module docstring): the board is not
    journalled, and the visits before the failure are not rerun to refill it."""
    healthy = threading.Event()

    def tally(n: int, blackboard: Blackboard) -> int:
        blackboard.set("seen", [*blackboard.get("seen", []), n])
        if n == 2 and not healthy.is_set():
            raise ConnectionError("store down")
        return n + 1

    f = (
        Formation("tally")
        .add_function("start", lambda x: x)
        .add_function("tally", tally)
        .add_function("done", lambda n, blackboard: blackboard.get("seen"))
        .connect("start", "tally")
        .connect("tally", "tally", when=lambda n: n < 4)
        .connect("tally", "done", otherwise=True)
    )
    boards = {"fresh": Blackboard(), "rebuilt": Blackboard()}
    for run_id, board in boards.items():
        with pytest.raises(FormationRuntimeError):
            f.run(0, store=store, run_id=run_id, blackboard=board)
        assert board.get("seen") == [0, 1, 2]

    healthy.set()
    assert f.resume("fresh", store=store, blackboard=Blackboard()).output == [2, 3]
    rebuilt = Blackboard()
    rebuilt.set("seen", [0, 1])  # what the journalled visits wrote, given back by the caller
    assert f.resume("rebuilt", store=store, blackboard=rebuilt).output == [0, 1, 2, 3]


def test_a_failing_sub_process_is_handed_to_the_outer_error_handler() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_builder.py (a process used as a step:
    its failure is the step's failure, which on_function_error routes)."""

    def boom(_: Any) -> None:
        raise ValueError("inner broke")

    inner = Formation("inner").add_function("a", lambda x: x).add_function("boom", boom).connect("a", "boom")
    outer = (
        Formation("outer")
        .add_formation("sub", inner)
        .add_function("ok", lambda x: x)
        .add_function("handler", lambda failure: (failure.node, failure.input, "inner broke" in str(failure.error)))
        .connect("sub", "ok")
        .connect("sub", "handler", on_error=True)
    )
    result = outer.run(7)

    assert result.outputs == {"handler": ("sub", 7, True)}
    assert result.nodes["ok"].status == "skipped"


def test_a_step_emitting_two_events_at_once_runs_both_listeners() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_step_builder.py (a step may emit several
    events from one invocation; each routes to its own listeners)."""
    f = (
        Formation("both")
        .add_function("s", lambda x: x)
        .add_function("a", lambda x: f"a{x}")
        .add_function("b", lambda x: f"b{x}")
        .connect("s", "a", when=lambda x: x > 0)
        .connect("s", "b", when=lambda x: x > 1)
    )
    assert f.run(5).outputs == {"a": "a5", "b": "b5"}
    result = f.run(1)
    assert result.outputs == {"a": "a1"} and result.nodes["b"].status == "skipped"


def test_a_step_that_times_out_inside_a_cycle_is_handled_and_the_cycle_goes_on() -> None:
    """From semantic-kernel python/tests/unit/processes/local_runtime/test_local_step.py (a failing invocation
    emits the step's error event; the process continues from its handler)."""
    release = threading.Event()

    def slow(n: int) -> int:
        if n == 1:
            release.wait(5)
        return n + 1

    def handle(failure: NodeFailure) -> int:
        return int(failure.input) + 10

    f = (
        Formation("timeouts")
        .add_function("start", lambda x: x)
        .add_function("slow", slow, timeout=0.3)
        .add_function("handle", handle)
        .add_function("out", lambda x: x)
        .connect("start", "slow")
        .connect("slow", "slow", when=lambda n: n < 3)
        .connect("slow", "out", otherwise=True)
        .connect("slow", "handle", on_error=True)
        .connect("handle", "slow", when=lambda n: n > 0)
    )
    try:
        result = f.run(0, timeout=20)
    finally:
        release.set()

    assert result.output == 12 and result.nodes["slow"].outputs == [1, 12]
