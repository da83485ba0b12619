"""More behaviours ported from LangGraph's own test suite (langchain-ai/langgraph,
``libs/langgraph/tests``): checkpoint recovery inside loops, interrupts in loops and in
subgraphs visited more than once, Send inside subgraphs, error handlers around
subgraphs, and the causal order of streamed events. (Split from
``test_peer_langgraph.py`` to keep modules short.)"""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore


def test_a_run_that_fails_in_its_second_iteration_resumes_from_there(store: RunStore) -> None:
    """langgraph test_pregel.py::test_checkpoint_recovery (a failure after some steps;
    re-invoking the thread continues from the last checkpoint): the first iteration's
    visits are not run again."""
    counter = Counter()
    broken = [True]

    def step(x: int) -> int:
        counter.hit(f"step:{x}")
        if x == 1 and broken[0]:
            raise ConnectionError("flaky")
        return x + 1

    f = (Formation("recover").add_function("start", lambda x: x).add_function("step", step)
         .add_function("check", lambda x: x).add_function("done", lambda x: x)
         .connect("start", "step", "check").connect("check", "step", when=lambda x: x < 3)
         .connect("check", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError):
        f.run(0, store=store, run_id="recover-1")
    broken[0] = False
    result = f.resume("recover-1", store=store)
    assert result.output == 3
    assert counter.calls == {"step:0": 1, "step:1": 2, "step:2": 1}
    assert result.nodes["step"].outputs == [1, 2, 3]


def test_a_join_in_the_iteration_that_failed_pairs_the_resumed_branch_with_the_journalled_one(
    store: RunStore,
) -> None:
    """langgraph test_pregel.py::test_pending_writes_resume inside a loop: in iteration 2 one
    branch finished (journalled) and the other failed; on resume the join of iteration 2
    gets both of iteration 2's values."""
    counter = Counter()
    broken = [True]

    def left(x: int) -> str:
        counter.hit(f"left:{x}")
        return f"L{x}"

    def right(x: int) -> str:
        counter.hit(f"right:{x}")
        if x == 1 and broken[0]:
            raise ConnectionError("flaky")
        return f"R{x}"

    seen: list[tuple[str, str]] = []

    def join(left: str, right: str) -> int:
        seen.append((left, right))
        return int(left[1:]) + 1

    f = (Formation("loop_join").add_function("start", lambda x: x).add_function("fork", lambda x: x)
         .add_function("left", left).add_function("right", right).add_function("join", join)
         .add_function("done", lambda x: x)
         .connect("start", "fork").connect("fork", "left", "join").connect("fork", "right", "join")
         .connect("join", "fork", when=lambda x: x < 2).connect("join", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError):
        f.run(0, store=store, run_id="loop-join-1")
    broken[0] = False
    assert f.resume("loop-join-1", store=store).output == 2
    assert seen == [("L0", "R0"), ("L1", "R1")]
    assert counter.calls["left:1"] == 1 and counter.calls["right:1"] == 2


def test_an_interrupt_in_a_loop_suspends_each_iteration_and_each_resume_answers_one(store: RunStore) -> None:
    """langgraph test_pregel.py::test_interrupt_loop in graph form (a human node visited
    once per iteration asks each time): the answers reach their own iterations."""
    counter = Counter()

    def agent(x: Any) -> list[str]:
        counter.hit("agent")
        history = [] if isinstance(x, str) else x
        return [*history, f"draft{len(history)}"]

    def human(history: list[str]) -> list[str]:
        return [*history[:-1], f"{history[-1]}:{interrupt(history[-1])}"]

    f = (Formation("review").add_function("start", lambda x: x).add_function("agent", agent)
         .add_function("human", human).add_function("done", lambda h: h)
         .connect("start", "agent", "human").connect("human", "agent", when=lambda h: not h[-1].endswith("ok"))
         .connect("human", "done", otherwise=True))
    r = f.run("go", store=store)
    assert r.interrupt == {"node": "human", "payload": "draft0"}
    r = f.resume(r.run_id, store=store, answer="redo")
    assert r.interrupt == {"node": "human", "payload": "draft1"}
    r = f.resume(r.run_id, store=store, answer="ok")
    assert (r.status, r.output) == ("succeeded", ["draft0:redo", "draft1:ok"])
    assert counter.calls["agent"] == 2


def test_a_subgraph_visited_twice_interrupts_on_its_second_visit_and_resumes(store: RunStore) -> None:
    """langgraph test_pregel.py::test_nested_graph_interrupts_parallel / subgraph in a loop:
    each visit of a subgraph is its own inner run; an interrupt in the second visit does
    not rerun the first one."""
    counter = Counter()

    def inner_step(x: int) -> int:
        counter.hit(f"inner:{x}")
        return x + 1 if x == 0 else x + int(interrupt(f"visit with {x}"))

    inner = Formation("inner").add_function("inner_step", inner_step)
    f = (Formation("outer").add_function("start", lambda x: x).add_formation("sub", inner)
         .add_function("done", lambda x: x)
         .connect("start", "sub").connect("sub", "sub", when=lambda x: x < 2)
         .connect("sub", "done", otherwise=True))
    r = f.run(0, store=store)
    assert r.status == "suspended"
    assert r.interrupt is not None and r.interrupt["payload"] == "visit with 1"
    done = f.resume(r.run_id, store=store, answer=5)
    assert done.output == 6
    assert counter.calls == {"inner:0": 1, "inner:1": 2}


def test_the_traces_of_a_subgraph_visited_in_a_loop_count_every_visit_of_its_nodes() -> None:
    """langgraph test_pregel.py::test_nested_graph_state (the subgraph's state after each of
    its invocations), with the subgraph in a loop: DESIGN's ``NodeTrace.outputs`` holds
    every visit's output, so an inner node run once per outer visit shows them all."""
    inner = Formation("inner").add_function("x", lambda v: v + 1).add_function("y", lambda v: v * 10).connect("x", "y")
    f = (Formation("outer").add_function("start", lambda v: v).add_formation("sub", inner)
         .add_function("shrink", lambda v: v // 10).add_function("done", lambda v: v)
         .connect("start", "sub", "shrink").connect("shrink", "sub", when=lambda v: v < 3)
         .connect("shrink", "done", otherwise=True))
    result = f.run(0)
    assert result.output == 3
    assert result.nodes["sub"].outputs == [10, 20, 30]
    assert (result.nodes["sub/x"].visits, result.nodes["sub/x"].outputs) == (3, [1, 2, 3])
    assert (result.nodes["sub/y"].visits, result.nodes["sub/y"].output) == (3, 30)


def test_a_resumed_run_keeps_the_traces_of_the_subgraph_visits_it_took_from_its_journal(store: RunStore) -> None:
    """langgraph test_pregel.py::test_nested_graph_state (the subgraph's state is still there
    after the parent resumes): the inner nodes of a journalled formation-node visit that a
    resume does not run again keep their traces in the resumed run's result."""
    broken = [True]

    def publish(x: int) -> int:
        if broken[0]:
            raise ConnectionError("flaky")
        return x

    inner = Formation("inner").add_function("x", lambda v: v + 1).add_function("y", lambda v: v * 10).connect("x", "y")
    f = Formation("outer").add_formation("sub", inner).add_function("publish", publish).connect("sub", "publish")
    with pytest.raises(FormationRuntimeError):
        f.run(1, store=store, run_id="nested-1")
    broken[0] = False
    result = f.resume("nested-1", store=store)
    assert result.output == 20
    assert (result.nodes["sub/x"].status, result.nodes["sub/x"].outputs) == ("succeeded", [2])
    assert (result.nodes["sub/y"].visits, result.nodes["sub/y"].output) == (1, 20)


def test_send_inside_a_subgraph_fans_out_and_its_results_leave_the_subgraph() -> None:
    """langgraph test_pregel.py::test_send_to_nested_graphs (Send to a subgraph per item);
    ours: a map of a formation."""
    inner = (Formation("joke").add_function("generate", lambda subject: f"joke about {subject}")
             .add_function("polish", str.capitalize).connect("generate", "polish"))
    f = (Formation("jokes").add_function("subjects", lambda s: s.split(",")).add_map("jokes", formation=inner)
         .connect("subjects", "jokes"))
    result = f.run("cats,dogs")
    assert result.output == ["Joke about cats", "Joke about dogs"]


def test_an_error_handler_around_a_subgraph_receives_its_failure_and_the_run_goes_on() -> None:
    """langgraph test_error_handler_parallel.py (a failing node routed to its handler while
    parallel work goes on): here the failing node is a subgraph."""

    def boom(x: Any) -> Any:
        raise ValueError("inner broke")

    inner = Formation("inner").add_function("ok", lambda x: x).add_function("boom", boom).connect("ok", "boom")
    seen: list[NodeFailure] = []

    def handler(failure: NodeFailure) -> str:
        seen.append(failure)
        return f"handled {failure.node}"

    f = (Formation("outer").add_function("start", lambda x: x).add_formation("sub", inner)
         .add_function("handler", handler).add_function("sibling", lambda x: x * 2)
         .add_function("join", lambda d: d)
         .connect("start", "sub", "join").connect("sub", "handler", on_error=True).connect("handler", "join")
         .connect("start", "sibling", "join"))
    result = f.run(2)
    assert result.status == "succeeded"
    assert result.output == {"handler": "handled sub", "sibling": 4}
    assert result.nodes["sub"].status == "failed"
    assert len(seen) == 1 and seen[0].input == 2 and "inner broke" in str(seen[0].error)


def test_a_node_finishes_before_any_node_it_feeds_starts_in_the_stream() -> None:
    """langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge (stream
    mode "updates"): updates arrive in causal order; the join's comes last."""
    f = (Formation("causal").add_function("a", lambda x: x).add_function("b", lambda x: x)
         .add_function("c", lambda x: x).add_function("d", lambda b, c: b + c)
         .connect("a", "b", "d").connect("a", "c", "d"))
    events = list(f.run_stream(1))
    position = {(e.type.value, e.node): i for i, e in enumerate(events)}
    for u, v in [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]:
        assert position[("node_finished", u)] < position[("node_started", v)]
    assert [e.type.value for e in events][-2:] == ["node_finished", "run_finished"]


def test_a_retried_node_inside_a_loop_counts_its_attempts_per_visit() -> None:
    """langgraph test_retry.py::test_graph_with_single_retry_policy, in a loop: each visit
    has its own attempts (the retry policy applies per visit, not per run)."""
    counter = Counter()
    events: list[FormationEvent] = []

    def step(x: int) -> int:
        if counter.hit(f"step:{x}") == 1:
            raise ConnectionError("first attempt of every visit fails")
        return x + 1

    f = (Formation("loop_retry").add_function("start", lambda x: x)
         .add_function("step", step, retries=1, backoff=0, jitter=False).add_function("done", lambda x: x)
         .connect("start", "step").connect("step", "step", when=lambda x: x < 3)
         .connect("step", "done", otherwise=True))
    result = f.run(0, on_event=events.append)
    assert result.output == 3
    assert result.nodes["step"].visits == 3 and result.nodes["step"].attempts == 2
    assert len([e for e in events if e.type == "node_retry"]) == 3


def test_a_breakpoint_after_a_node_stops_with_its_output_and_resume_goes_on(store: RunStore) -> None:
    """langgraph test_pregel.py::test_invoke_two_processes_in_out_interrupt (interrupt_after)."""
    f = Formation("chain").add_function("one", lambda x: x + 1).add_function("two", lambda x: x * 10)
    f.connect("one", "two")
    first = f.run(1, store=store, break_after=["one"])
    assert first.interrupt == {"node": "one", "payload": {"breakpoint": "after", "output": 2}}
    assert f.resume(first.run_id, store=store).output == 20


def test_resuming_a_finished_run_is_refused(store: RunStore) -> None:
    """langgraph test_pregel.py::test_invoke_checkpoint (re-invoking a finished thread with
    no new input does nothing); ours refuses a resume of a run that succeeded."""
    f = Formation("done").add_function("one", lambda x: x + 1)
    run_id = f.run(1, store=store).run_id
    with pytest.raises(Exception, match=r"succeeded"):
        f.resume(run_id, store=store)


def test_a_fanned_out_dict_mutated_by_one_receiver_is_unchanged_for_the_other() -> None:
    """langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge with a
    mutating retriever: the state each branch sees is its own (LangGraph copies the state
    into each task; DESIGN: payloads are isolated per receiver)."""
    barrier = threading.Barrier(2, timeout=5)

    def mutate(d: dict[str, list[str]]) -> list[str]:
        barrier.wait()
        d["docs"].append("mutated")
        return d["docs"]

    def read(d: dict[str, list[str]]) -> list[str]:
        barrier.wait()
        return list(d["docs"])

    f = (Formation("iso").add_function("query", lambda q: {"docs": [q]}).add_function("mutate", mutate)
         .add_function("read", read).add_function("qa", lambda d: d)
         .connect("query", "mutate", "qa").connect("query", "read", "qa"))
    result = f.run("doc1")
    assert result.output["read"] in (["doc1"],)
    assert result.nodes["query"].output == {"docs": ["doc1"]}


def test_map_items_that_mutate_their_item_do_not_change_the_list_upstream() -> None:
    """langgraph test_pregel.py::test_send_sequences with mutating receivers: each Send's
    argument is its own."""

    def tag(item: dict[str, int]) -> dict[str, int]:
        item["seen"] = 1
        return item

    f = Formation("iso_map").add_function("plan", lambda n: [{"i": i} for i in range(n)]).add_map("tag", tag)
    result = f.connect("plan", "tag").run(2)
    assert result.output == [{"i": 0, "seen": 1}, {"i": 1, "seen": 1}]
    assert result.nodes["plan"].output == [{"i": 0}, {"i": 1}]


def test_a_batch_of_inputs_gives_one_result_per_input_in_order() -> None:
    """langgraph test_pregel.py::test_batch_two_processes_in_out: ``batch`` of many inputs;
    ours: a started formation takes them all in flight at once."""
    f = Formation("batch").add_function("one", lambda x: x + 1).add_function("two", lambda x: x + 1)
    with f.connect("one", "two").start() as running:
        futures = [running.submit(i) for i in range(20)]
        assert [future.result(10).output for future in futures] == [i + 2 for i in range(20)]


def test_a_node_timeout_is_retried_and_the_second_attempt_succeeds() -> None:
    """langgraph test_retry.py (a TimeoutPolicy run timeout, NodeTimeoutError retried by
    default): a stuck first attempt times out, the retry succeeds."""
    counter = Counter()
    release = threading.Event()

    def stuck_once(x: int) -> int:
        if counter.hit("n") == 1:
            release.wait(5)
        return x * 2

    f = Formation("timeout").add_function("n", stuck_once, timeout=0.2, retries=1, backoff=0)
    try:
        result = f.run(21)
    finally:
        release.set()
    assert result.output == 42
    assert result.nodes["n"].attempts == 2


def test_cancelling_a_run_in_flight_raises_cancelled_and_reports_it() -> None:
    """langgraph test_pregel_async.py::test_cancel_graph_astream (a cancelled run stops and
    says so); ours: ``future.cancel()``, then ``CancelledError`` and ``run_cancelled``."""
    entered, release = threading.Event(), threading.Event()
    events: list[FormationEvent] = []

    def slow(x: int) -> int:
        entered.set()
        release.wait(5)
        return x

    f = Formation("cancel").add_function("slow", slow).add_function("after", lambda x: x).connect("slow", "after")
    try:
        with f.start(on_event=events.append) as running:
            future = running.submit(1)
            assert entered.wait(5)
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(5)
    finally:
        release.set()
    assert "run_cancelled" in [e.type for e in events]
    assert "after" not in [e.node for e in events if e.type == "node_started"]


@pytest.mark.parametrize("parallel", [False, True], ids=["solo", "parallel"])
@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_an_error_handler_runs_once_and_the_handled_error_does_not_escape(parallel: bool, stream: bool) -> None:
    """langgraph test_error_handler_parallel.py::test_error_handler_suppresses_handled_error_invoke
    and ..._stream: with or without a parallel sibling, run or streamed."""
    counter = Counter()

    def boom(x: Any) -> Any:
        raise RuntimeError("test")

    def handler(failure: NodeFailure) -> str:
        counter.hit("handler")
        return "handled"

    f = (Formation("handled").add_function("start", lambda x: x).add_function("boom", boom)
         .add_function("handler", handler).connect("start", "boom").connect("boom", "handler", on_error=True))
    if parallel:
        f.add_function("sibling", lambda x: "sibling").connect("start", "sibling")
    if stream:
        events = list(f.run_stream({}))
        assert events[-1].type == "run_finished"
        outputs = events[-1].data["result"].outputs
    else:
        outputs = f.run({}).outputs
    assert outputs["handler"] == "handled"
    assert counter.calls == {"handler": 1}
    assert ("sibling" in outputs) is parallel
