"""Behaviours ported from LangGraph's own test suite (langchain-ai/langgraph,
``libs/langgraph/tests``), translated to formations: fan-out and fan-in, conditional
edges, Send (our map nodes), subgraphs (our nested formations), interrupts and resume,
retry policies and the order of streamed events.

Each test names the peer test it comes from. Where DESIGN deliberately differs from
LangGraph, the test follows DESIGN and a comment says so. LangGraph graphs share one
state dict; ours pass each node's output along its edges, so "the state after the run"
becomes the outputs the nodes received and gave."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore


class Calls:
    """What each node received, in call order (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: list[str] = []
        self.seen: dict[str, list[Any]] = {}

    def record(self, node: str, value: Any) -> None:
        with self.lock:
            self.order.append(node)
            self.seen.setdefault(node, []).append(value)

    def count(self, node: str) -> int:
        return len(self.seen.get(node, []))

    def node(self, name: str, fn: Any) -> Any:
        def run(x: Any) -> Any:
            self.record(name, x)
            return fn(x)

        run.__name__ = name
        return run


def retrieval(calls: Calls, *, branch: bool = False) -> Formation:
    """rewrite_query → analyzer_one → retriever_one, and rewrite_query → retriever_two;
    both retrievers → qa (a waiting edge). With ``branch``, retriever_two is reached
    through a condition on the query."""
    f = (
        Formation("retrieval")
        .add_function("rewrite_query", calls.node("rewrite_query", lambda q: f"query: {q}"))
        .add_function("analyzer_one", calls.node("analyzer_one", lambda q: f"analyzed: {q}"))
        .add_function("retriever_one", calls.node("retriever_one", lambda q: ["doc1", "doc2"]))
        .add_function("retriever_two", calls.node("retriever_two", lambda q: (time.sleep(0.05), ["doc3", "doc4"])[1]))
        .add_function("qa", calls.node("qa", lambda d: ",".join(d["retriever_one"] + d["retriever_two"])))
        .connect("rewrite_query", "analyzer_one", "retriever_one", "qa")
        .connect("retriever_two", "qa")
    )
    if branch:
        return f.connect("rewrite_query", "retriever_two", when=lambda q: "what" in q)
    return f.connect("rewrite_query", "retriever_two")


def test_a_waiting_edge_runs_the_join_once_with_both_branches() -> None:
    """langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge."""
    calls = Calls()
    result = retrieval(calls).run("what is weather in sf")
    assert result.output == "doc1,doc2,doc3,doc4"
    assert calls.count("qa") == 1
    assert calls.seen["analyzer_one"] == ["query: what is weather in sf"]


def test_a_waiting_edge_reached_through_a_branch_waits_for_it_too() -> None:
    """langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_via_branch."""
    calls = Calls()
    assert retrieval(calls, branch=True).run("what is weather in sf").output == "doc1,doc2,doc3,doc4"
    assert calls.count("qa") == 1


def test_a_waiting_edge_whose_branch_is_not_taken_fires_with_the_branch_that_ran() -> None:
    """langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_via_branch,
    the branch not taken. LangGraph would wait for ever on the untaken branch (the join
    never runs); DESIGN fires a join when each predecessor delivered *or was skipped*."""
    calls = Calls()
    f = retrieval(calls, branch=True)
    f.graph.nodes["qa"]["fn"] = calls.node("qa", lambda d: sorted(d))
    result = f.run("tell me the weather")
    assert result.output == ["retriever_one"]
    assert result.nodes["retriever_two"].status == "skipped"


def test_a_branch_to_several_destinations_fans_out_and_the_join_waits_for_all() -> None:
    """langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple_cond_edge:
    a branch returning two destinations runs both; qa waits for both."""
    calls = Calls()
    f = (
        Formation("fan")
        .add_function("rewrite_query", calls.node("rewrite_query", str.upper))
        .add_function("retriever_one", calls.node("retriever_one", lambda q: ["doc1"]))
        .add_function("retriever_two", calls.node("retriever_two", lambda q: ["doc2"]))
        .add_function("qa", calls.node("qa", lambda d: d["retriever_one"] + d["retriever_two"]))
        .connect("rewrite_query", "retriever_one", when=lambda q: q.startswith("WHAT"))
        .connect("rewrite_query", "retriever_two", when=lambda q: q.startswith("WHAT"))
        .connect("retriever_one", "qa").connect("retriever_two", "qa")
    )
    assert f.run("what").output == ["doc1", "doc2"]
    assert calls.count("qa") == 1


def agent_loop(calls: Calls, steps: int) -> Formation:
    """agent → tools while the agent asks for a tool (``steps`` times), tools → agent;
    otherwise agent → finish."""

    def agent(history: Any) -> list[str]:
        history = [] if isinstance(history, str) else history
        return [*history, "tool_call" if len(history) < 2 * steps else "answer"]

    def tools(history: list[str]) -> list[str]:
        return [*history, "tool_result"]

    # LangGraph's START is explicit here: a cycle no node enters from outside is refused
    # (which of its nodes comes first would be a guess), with the fix in the error.
    return (
        Formation("agent_loop")
        .add_function("start", lambda x: x)
        .add_function("agent", calls.node("agent", agent))
        .add_function("tools", calls.node("tools", tools))
        .add_function("finish", calls.node("finish", lambda h: h[-1]))
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda h: h[-1] == "tool_call")
        .connect("agent", "finish", otherwise=True)
        .connect("tools", "agent")
    )


def test_a_conditional_loop_runs_until_the_condition_says_end() -> None:
    """langgraph test_pregel.py::test_conditional_graph: agent and tools alternate until the
    agent answers."""
    calls = Calls()
    result = agent_loop(calls, steps=2).run("what is weather in sf")
    assert result.output == "answer"
    assert calls.order == ["agent", "tools", "agent", "tools", "agent", "finish"]
    assert (result.nodes["agent"].visits, result.nodes["tools"].visits) == (3, 2)


def test_a_conditional_entry_point_picks_the_first_node() -> None:
    """langgraph test_pregel.py::test_conditional_entrypoint_graph: the branch from START
    decides which node runs first."""
    calls = Calls()
    f = (
        Formation("entry")
        .add_function("start", lambda x: x)
        .add_function("left", calls.node("left", lambda x: f"{x}->left"))
        .add_function("right", calls.node("right", lambda x: f"{x}->right"))
        .connect("start", "left", when=lambda x: x.startswith("go-left"))
        .connect("start", "right", otherwise=True)
    )
    assert f.run("what is weather in sf").outputs == {"right": "what is weather in sf->right"}
    assert f.run("go-left").outputs == {"left": "go-left->left"}
    assert calls.order == ["right", "left"]


def test_a_route_that_matches_nothing_fails_the_run_with_no_route_error() -> None:
    """langgraph test_pregel.py::test_conditional_graph with a path map the branch's answer
    is not in (LangGraph raises on the unknown destination); DESIGN: NoRouteError naming
    the node and a preview of the output."""
    f = (
        Formation("router")
        .add_function("route", lambda x: x)
        .add_function("a", lambda x: x).add_function("b", lambda x: x)
        .connect("route", "a", when=lambda x: x == "a").connect("route", "b", when=lambda x: x == "b")
    )
    with pytest.raises(NoRouteError) as info:
        f.run("c")
    assert info.value.node == "route"
    assert "'c'" in str(info.value)


def test_the_recursion_limit_stops_an_endless_loop_naming_the_node() -> None:
    """langgraph test_pregel.py::test_recursion_limit (GraphRecursionError); DESIGN bounds a
    cycle by the node's max_visits instead of a global step count."""
    calls = Calls()
    f = (
        Formation("endless")
        .add_function("start", lambda x: x)
        .add_function("ping", calls.node("ping", lambda x: x + 1), max_visits=4)
        .add_function("pong", lambda x: x)
        .add_function("end", lambda x: x)
        .connect("start", "ping", "pong")
        .connect("pong", "ping", when=lambda x: x > -1)
        .connect("pong", "end", otherwise=True)
    )
    with pytest.raises(FormationRuntimeError, match=r"max_visits=4") as info:
        f.run(0)
    assert info.value.node == "ping"
    assert calls.count("ping") == 4


def test_send_fans_out_one_visit_per_item_and_keeps_the_order() -> None:
    """langgraph test_pregel.py::test_send_sequences (Send packets to one node); our map node
    runs one call per item and outputs them in item order."""
    calls = Calls()
    f = (
        Formation("send")
        .add_function("plan", lambda x: [f"{x}|{i}" for i in range(3)])
        .add_map("work", calls.node("work", lambda s: f"done {s}"))
        .add_function("collect", lambda xs: xs)
        .connect("plan", "work", "collect")
    )
    assert f.run("0").output == ["done 0|0", "done 0|1", "done 0|2"]
    assert sorted(calls.seen["work"]) == ["0|0", "0|1", "0|2"]


def test_send_with_max_concurrency_runs_at_most_that_many_items_at_once() -> None:
    """langgraph test_pregel.py::test_max_concurrency (100 Sends, max_concurrency=10)."""
    lock, running, peak = threading.Lock(), [0], [0]

    def work(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.005)
        with lock:
            running[0] -= 1
        return i

    f = Formation("many").add_function("plan", lambda n: list(range(n))).add_map("work", work, max_workers=10)
    assert f.connect("plan", "work").run(100).output == list(range(100))
    assert 1 < peak[0] <= 10


def test_a_dynamic_interrupt_suspends_and_resume_hands_the_node_the_answer(store: RunStore) -> None:
    """langgraph test_pregel.py::test_dynamic_interrupt: a node calls interrupt(); the run
    stops with the payload; resuming with an answer returns it from interrupt()."""
    calls = Calls()

    def tool_two(x: str) -> str:
        answer = interrupt(f"Just because... {x}")
        return f"{x} {answer}"

    f = (Formation("dyn").add_function("prepare", calls.node("prepare", lambda x: f"{x} prepared"))
         .add_function("tool_two", tool_two).connect("prepare", "tool_two"))
    first = f.run("a", store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "tool_two", "payload": "Just because... a prepared"})
    done = f.resume(first.run_id, store=store, answer="answer")
    assert (done.status, done.output) == ("succeeded", "a prepared answer")
    assert calls.count("prepare") == 1


def test_an_interrupt_in_a_loop_asks_again_until_the_answer_is_valid(store: RunStore) -> None:
    """langgraph test_pregel.py::test_interrupt_loop: a node asks for an age until it gets a
    valid one; each resume answers the next interrupt() of the same visit."""

    def ask_age(name: str) -> str:
        question = "How old are you?"
        while True:
            answer = interrupt(question)
            if isinstance(answer, int) and answer >= 0:
                return f"{name} is {answer}"
            question = f"'{answer}' is not a valid age. How old are you?"

    f = Formation("ages").add_function("ask_age", ask_age)
    result = f.run("Ann", store=store)
    assert result.interrupt == {"node": "ask_age", "payload": "How old are you?"}
    result = f.resume(result.run_id, store=store, answer="foo")
    assert result.interrupt == {"node": "ask_age", "payload": "'foo' is not a valid age. How old are you?"}
    result = f.resume(result.run_id, store=store, answer=-10)
    assert result.interrupt == {"node": "ask_age", "payload": "'-10' is not a valid age. How old are you?"}
    assert f.resume(result.run_id, store=store, answer=25).output == "Ann is 25"


def test_several_interrupts_in_one_node_each_take_their_own_answer(store: RunStore) -> None:
    """langgraph test_pregel.py::test_interrupt_multiple."""

    def node(x: str) -> str:
        first = interrupt({"value": 1})
        second = interrupt({"value": 2})
        return f"{x} {first} {second}"

    f = Formation("multi").add_function("node", node)
    r = f.run("x", store=store)
    assert r.interrupt == {"node": "node", "payload": {"value": 1}}
    r = f.resume(r.run_id, store=store, answer="a")
    assert r.interrupt == {"node": "node", "payload": {"value": 2}}
    assert f.resume(r.run_id, store=store, answer="b").output == "x a b"


def test_a_node_beside_an_interrupted_one_is_not_run_again_on_resume(store: RunStore) -> None:
    """langgraph test_pregel_async.py::test_node_not_cancelled_on_other_node_interrupted:
    a parallel node finishes although its sibling interrupts, and resume does not rerun it."""
    calls = Calls()

    def ask(x: str) -> str:
        return f"{x}:{interrupt('ok?')}"

    def slow(x: str) -> str:
        time.sleep(0.1)
        return f"{x}:slow"

    f = (Formation("siblings").add_function("start", lambda x: x).add_function("ask", ask)
         .add_function("slow", calls.node("slow", slow)).add_function("join", lambda d: d)
         .connect("start", "ask", "join").connect("start", "slow", "join"))
    first = f.run("x", store=store)
    assert first.status == "suspended"
    assert first.nodes["slow"].status == "succeeded"
    assert f.resume(first.run_id, store=store, answer="yes").output == {"ask": "x:yes", "slow": "x:slow"}
    assert calls.count("slow") == 1


def test_an_interrupt_in_one_send_does_not_rerun_the_other_sends_on_resume(store: RunStore) -> None:
    """langgraph test_pregel.py::test_send_dedupe_on_resume: of several Sends one
    interrupts; on resume only that one runs again."""
    calls = Calls()

    def work(i: int) -> str:
        calls.record("work", i)
        return f"{i}:{interrupt('which?')}" if i == 2 else str(i)

    f = Formation("dedupe").add_function("plan", lambda n: list(range(n))).add_map("work", work).connect("plan", "work")
    first = f.run(4, store=store)
    assert first.interrupt is not None and first.interrupt["payload"] == "which?"
    assert f.resume(first.run_id, store=store, answer="b").output == ["0", "1", "2:b", "3"]
    assert sorted(calls.seen["work"]) == [0, 1, 2, 2, 3]


def inner_approval(calls: Calls) -> Formation:
    """inner_1 → inner_2 (asks with interrupt())."""

    def inner_2(x: str) -> str:
        return f"{x}|{interrupt('inner?')}"

    return (Formation("inner").add_function("inner_1", calls.node("inner_1", lambda x: f"{x}|inner_1"))
            .add_function("inner_2", inner_2).connect("inner_1", "inner_2"))


def test_an_interrupt_inside_a_subgraph_suspends_the_parent_and_resume_finishes_both(store: RunStore) -> None:
    """langgraph test_pregel.py::test_nested_graph_interrupts: the outer node before the
    subgraph and the inner node before the interrupt are not run again on resume."""
    calls = Calls()
    f = (Formation("outer").add_function("outer_1", calls.node("outer_1", lambda x: f"{x}|outer_1"))
         .add_formation("inner", inner_approval(calls))
         .add_function("outer_2", calls.node("outer_2", lambda x: f"{x}|outer_2"))
         .connect("outer_1", "inner", "outer_2"))
    first = f.run("my value", store=store)
    assert first.status == "suspended"
    assert first.interrupt is not None and first.interrupt["payload"] == "inner?"
    assert "inner_2" in first.interrupt["node"]
    done = f.resume(first.run_id, store=store, answer="ok")
    assert done.output == "my value|outer_1|inner_1|ok|outer_2"
    assert (calls.count("outer_1"), calls.count("inner_1"), calls.count("outer_2")) == (1, 1, 1)


def test_an_interrupt_two_subgraphs_deep_suspends_the_root_and_resumes(store: RunStore) -> None:
    """langgraph test_pregel.py::test_doubly_nested_graph_interrupts."""
    calls = Calls()
    middle = (Formation("middle").add_function("pre", calls.node("pre", lambda x: f"{x}|pre"))
              .add_formation("inner", inner_approval(calls)).connect("pre", "inner"))
    root = (Formation("root").add_function("router", calls.node("router", lambda x: x))
            .add_formation("middle", middle).add_function("post", lambda x: f"{x}|post")
            .connect("router", "middle", "post"))
    first = root.run("v", store=store)
    assert first.status == "suspended"
    assert root.resume(first.run_id, store=store, answer="yes").output == "v|pre|inner_1|yes|post"
    assert (calls.count("router"), calls.count("pre"), calls.count("inner_1")) == (1, 1, 1)


def test_a_subgraph_keeps_its_own_node_names_apart_from_the_parents() -> None:
    """langgraph test_pregel.py::test_nested_graph_state: the subgraph's state is its own;
    here an inner node named like an outer node keeps its own trace under its path."""
    inner = Formation("inner").add_function("step", lambda x: x * 10)
    f = (Formation("outer").add_function("step", lambda x: x + 1).add_formation("sub", inner)
         .connect("step", "sub"))
    result = f.run(1)
    assert result.output == 20
    assert result.nodes["step"].output == 2
    assert result.nodes["sub/step"].output == 20


def test_streaming_a_subgraph_reports_its_nodes_by_path_before_the_parent_node_finishes() -> None:
    """langgraph test_pregel.py::test_stream_subgraphs_during_execution (stream with
    subgraphs=True yields the inner nodes' updates, namespaced, as they happen)."""
    inner = (Formation("inner").add_function("inner_1", lambda x: x + 1).add_function("inner_2", lambda x: x * 2)
             .connect("inner_1", "inner_2"))
    f = Formation("outer").add_function("outer_1", lambda x: x).add_formation("inner", inner).connect("outer_1", "inner")
    finished = [e.node for e in f.run_stream(1) if e.type == "node_finished"]
    assert finished == ["outer_1", "inner/inner_1", "inner/inner_2", "inner"]


def test_the_stream_of_a_chain_gives_each_node_in_order_between_run_start_and_end() -> None:
    """langgraph test_pregel.py::test_invoke_two_processes_in_out (stream: one update per
    node, in order)."""
    f = (Formation("chain").add_function("one", lambda x: x + 1).add_function("two", lambda x: x + 1)
         .connect("one", "two"))
    events = [(e.type.value, e.node) for e in f.run_stream(2)]
    assert events == [("run_started", None), ("node_started", "one"), ("node_finished", "one"),
                      ("node_started", "two"), ("node_finished", "two"), ("run_finished", None)]
    assert f.run(2).output == 4


def test_interrupt_before_a_node_stops_the_run_there_and_resume_runs_it(store: RunStore) -> None:
    """langgraph test_pregel.py::test_invoke_two_processes_in_out_interrupt
    (interrupt_before); ours: break_before."""
    calls = Calls()
    f = (Formation("chain").add_function("one", calls.node("one", lambda x: x + 1))
         .add_function("two", calls.node("two", lambda x: x + 1)).connect("one", "two"))
    first = f.run(2, store=store, break_before=["two"])
    assert first.interrupt == {"node": "two", "payload": {"breakpoint": "before", "input": 3}}
    assert calls.order == ["one"]
    assert f.resume(first.run_id, store=store).output == 4
    assert calls.order == ["one", "two"]


def flaky(calls: Calls, name: str, fails: int, error: type[Exception] = ConnectionError) -> Any:
    """A node that raises ``error`` on its first ``fails`` calls, then returns its input."""

    def run(x: Any) -> Any:
        calls.record(name, x)
        if calls.count(name) <= fails:
            raise error(f"{name} failed")
        return x

    return run


def test_a_failed_run_resumes_without_rerunning_the_node_that_succeeded(store: RunStore) -> None:
    """langgraph test_pregel.py::test_pending_writes_resume: of two parallel nodes one
    succeeds, the other fails after its retries; resume reruns only the failed one."""
    calls = Calls()
    f = (Formation("pending").add_function("start", lambda x: x)
         .add_function("one", calls.node("one", lambda x: x + 2))
         .add_function("two", flaky(calls, "two", fails=2), retries=1, backoff=0)
         .add_function("sum", lambda d: d["one"] + d["two"])
         .connect("start", "one", "sum").connect("start", "two", "sum"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store, run_id="pending-1")
    assert (info.value.node, info.value.attempts) == ("two", 2)
    assert f.resume("pending-1", store=store).output == 4
    assert (calls.count("one"), calls.count("two")) == (1, 3)


def test_a_retry_policy_without_jitter_waits_exactly_the_initial_interval_doubled() -> None:
    """langgraph test_retry.py::test_graph_with_single_retry_policy: 3 attempts, waits
    [0.01, 0.02], the next node gets the value of the attempt that succeeded."""
    calls, events = Calls(), []
    f = (Formation("retry").add_function("failing_node", flaky(calls, "failing_node", fails=2, error=ValueError),
                                         retries=2, backoff=0.01, jitter=False, retry_on=ValueError)
         .add_function("other_node", lambda x: f"other_node after {x}").connect("failing_node", "other_node"))
    result = f.run("foo", on_event=events.append)
    assert result.output == "other_node after foo"
    assert calls.count("failing_node") == 3 and result.nodes["failing_node"].attempts == 3
    assert [e.data["delay_s"] for e in events if e.type == "node_retry"] == [0.01, 0.02]


def test_a_node_that_keeps_failing_past_max_attempts_fails_the_run_with_its_error() -> None:
    """langgraph test_retry.py::test_graph_with_max_attempts_exceeded (max_attempts=2 is our
    retries=1)."""
    events: list[FormationEvent] = []

    def always_failing(x: Any) -> Any:
        raise ValueError("Always fails")

    f = Formation("fails").add_function("always_failing", always_failing, retries=1, backoff=0.01, jitter=False)
    with pytest.raises(FormationRuntimeError, match=r"Always fails") as info:
        f.run("", on_event=events.append)
    assert (info.value.node, info.value.attempts) == ("always_failing", 2)
    assert isinstance(info.value.__cause__, ValueError)
    assert [e.data["delay_s"] for e in events if e.type == "node_retry"] == [0.01]


@pytest.mark.parametrize(
    ("retry_on", "error", "attempts"),
    [
        (ValueError, ValueError, 3),  # test_should_retry_on_single_exception
        (ValueError, TypeError, 1),  # test_should_retry_on_single_exception
        ((ValueError, KeyError), KeyError, 3),  # test_should_retry_on_sequence_of_exceptions
        (ValueError, type("CustomError", (ValueError,), {}), 3),  # test_should_retry_on_subclass_of_exception
        ((), ValueError, 1),  # test_should_retry_on_empty_sequence
    ],
)
def test_retry_on_decides_which_errors_are_retried(
    retry_on: Any, error: type[Exception], attempts: int
) -> None:
    """langgraph test_retry.py::test_should_retry_on_* (single type, tuple, subclass, empty)."""

    def fails(x: Any) -> Any:
        raise error("boom")

    f = Formation("r").add_function("n", fails, retries=2, backoff=0, retry_on=retry_on)
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    assert info.value.attempts == attempts
    assert isinstance(info.value.__cause__, error)
