"""Behaviours ported from LangGraph's test suite (langchain-ai/langgraph,
``libs/langgraph/tests``) about failures: visit limits inside subgraphs, retry waits,
the stream of a retried or failing run, error handlers that send the run round a loop,
and per-visit timeouts. (Split from ``test_peer_langgraph_more.py``.)"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent


def identity(x: Any) -> Any:
    return x


# -- visit limits, retries and errors ------------------------------------------------------


def inner_loop(limit: int) -> Formation:
    """tick counts up from the input to input + 3, looping on itself."""
    return (Formation("inner_loop").add_function("tick", lambda n: n + 1, max_visits=limit)
            .add_function("out", identity)
            .connect("tick", "tick", when=lambda n: n % 4 != 0).connect("tick", "out", otherwise=True))


def test_the_visit_limit_of_a_node_in_a_subgraph_counts_per_inner_run_not_per_outer_run() -> None:
    # langgraph test_pregel.py::test_recursion_limit, the limit applying to each subgraph invocation
    f = (Formation("outer").add_function("entry", identity).add_formation("sub", inner_loop(limit=4))
         .add_function("done", identity)
         .connect("entry", "sub").connect("sub", "sub", when=lambda n: n < 12).connect("sub", "done", otherwise=True))
    result = f.run(0)
    assert result.output == 12
    assert result.nodes["sub"].outputs == [4, 8, 12]
    assert result.nodes["sub/tick"].visits == 12


def test_a_loop_in_a_subgraph_that_passes_its_visit_limit_fails_the_outer_run_naming_the_inner_node() -> None:
    # langgraph test_pregel.py::test_recursion_limit (GraphRecursionError raised from a subgraph)
    f = Formation("outer").add_function("entry", identity).add_formation("sub", inner_loop(limit=2))
    with pytest.raises(FormationRuntimeError, match=r"max_visits=2") as info:
        f.connect("entry", "sub").run(0)
    assert info.value.node == "sub"
    assert "tick" in str(info.value)


def test_an_inner_nodes_own_retries_spare_the_subgraph_node_a_retry_of_the_whole() -> None:
    # langgraph test_retry.py::test_graph_with_multiple_retry_policies (each node its own policy)
    log = Counter()

    def flaky(x: int) -> int:
        if log.hit("flaky") < 3:
            raise ConnectionError("try again")
        return x + 1

    inner = (Formation("inner").add_function("first", lambda x: (log.hit("first"), x)[1])
             .add_function("flaky", flaky, retries=2, backoff=0).connect("first", "flaky"))
    f = Formation("outer").add_formation("sub", inner, retries=3, backoff=0)
    result = f.run(1)
    assert result.output == 2
    assert result.nodes["sub"].attempts == 1 and result.nodes["sub/flaky"].attempts == 3
    assert log.count("first") == 1


def test_retry_waits_without_jitter_double_until_max_backoff_caps_them() -> None:
    # langgraph test_retry.py::test_graph_with_single_retry_policy (backoff_factor, max_interval)
    log = Counter()
    events: list[FormationEvent] = []

    def failing(x: str) -> str:
        if log.hit("failing") < 5:
            raise ValueError("not yet")
        return x

    f = Formation("capped").add_function("failing", failing, retries=4, backoff=0.01, max_backoff=0.03, jitter=False)
    assert f.run("ok", on_event=events.append).output == "ok"
    assert [e.data["delay_s"] for e in events if e.type == "node_retry"] == [0.01, 0.02, 0.03, 0.03]


def test_retry_waits_with_jitter_stay_within_the_doubled_interval() -> None:
    # langgraph test_retry.py::test_graph_with_jitter_retry_policy (DESIGN's jitter: a share of the wait)
    log = Counter()
    events: list[FormationEvent] = []

    def failing(x: str) -> str:
        if log.hit("failing") < 4:
            raise ValueError("not yet")
        return x

    f = Formation("jitter").add_function("failing", failing, retries=3, backoff=0.01, jitter=True)
    assert f.run("ok", on_event=events.append).output == "ok"
    delays = [e.data["delay_s"] for e in events if e.type == "node_retry"]
    assert len(delays) == 3
    assert all(0 < d <= 0.01 * 2**i for i, d in enumerate(delays))


def test_the_stream_of_a_retried_node_starts_each_attempt_and_reports_each_retry_before_it_finishes() -> None:
    # langgraph test_retry.py::test_graph_with_single_retry_policy, streamed (stream_mode="debug")
    log = Counter()

    def flaky(x: int) -> int:
        if log.hit("flaky") < 3:
            raise ConnectionError("down")
        return x

    f = (Formation("stream_retry").add_function("flaky", flaky, retries=2, backoff=0)
         .add_function("after", identity).connect("flaky", "after"))
    kinds = [(e.type.value, e.node, e.data.get("attempt")) for e in f.run_stream(1)]
    assert kinds == [("run_started", None, None), ("node_started", "flaky", 1), ("node_retry", "flaky", 1),
                     ("node_started", "flaky", 2), ("node_retry", "flaky", 2), ("node_started", "flaky", 3),
                     ("node_finished", "flaky", 3), ("node_started", "after", 1), ("node_finished", "after", 1),
                     ("run_finished", None, None)]


def test_the_stream_of_a_failing_run_ends_with_run_failed_naming_the_node() -> None:
    # langgraph test_pregel.py::test_invoke_two_processes_in_out (a node raising while streamed)
    def boom(x: int) -> int:
        raise KeyError("missing")

    f = Formation("stream_fail").add_function("one", identity).add_function("boom", boom).connect("one", "boom")
    events = list(f.run_stream(1))
    assert [e.type.value for e in events][-2:] == ["node_failed", "run_failed"]
    assert events[-2].node == "boom"
    assert "boom" in str(events[-1].data)


def fetch_until_two(n: int) -> int:
    if n < 2:
        raise TimeoutError(f"attempt {n} timed out")
    return n


def handle_fetch(failure: NodeFailure) -> int:
    return int(failure.input) + 1


def test_an_error_handler_in_a_loop_sends_the_run_round_again_until_it_succeeds() -> None:
    # langgraph test_error_handler_parallel.py (a failing node handed to its handler), in a cycle
    f = (Formation("retry_loop").add_function("entry", identity).add_function("fetch", fetch_until_two)
         .add_function("handler", handle_fetch).add_function("done", identity).add_function("give_up", identity)
         .connect("entry", "fetch", "done").connect("fetch", "handler", on_error=True)
         .connect("handler", "fetch", when=lambda n: n < 10).connect("handler", "give_up", otherwise=True))
    events: list[FormationEvent] = []
    result = f.run(0, on_event=events.append)
    assert result.outputs == {"done": 2}
    assert result.nodes["handler"].outputs == [1, 2]
    assert result.nodes["fetch"].visits == 3 and result.nodes["fetch"].status == "succeeded"
    # the failed visits went round: done waits for the visit that leaves the loop, never skipped
    assert [e.node for e in events if e.type == "node_skipped"] == ["handler", "give_up"]


@pytest.mark.parametrize(("start", "always_fails", "expected"),
                         [(0, False, "fetched 2"), (20, False, "fetched 20"), (0, True, "gave up at 10")])
def test_a_join_after_an_error_handler_loop_gets_the_value_that_leaves_it(
    start: int, always_fails: bool, expected: str
) -> None:
    # langgraph test_error_handler_parallel.py, the handler's loop and the node's success meeting after it
    def report(fetch: int | None = None, handler: int | None = None) -> str:
        return f"fetched {fetch}" if handler is None else f"gave up at {handler}"

    f = (Formation("retry_loop").add_function("entry", identity)
         .add_function("fetch", (lambda n: fetch_until_two(-1)) if always_fails else fetch_until_two)
         .add_function("handler", handle_fetch).add_function("report", report)
         .connect("entry", "fetch", "report").connect("fetch", "handler", on_error=True)
         .connect("handler", "fetch", when=lambda n: n < 10).connect("handler", "report", otherwise=True))
    result = f.run(start)
    assert result.outputs == {"report": expected}
    assert result.nodes["report"].visits == 1


def test_pipelined_runs_through_an_error_handler_loop_each_get_the_value_that_leaves_their_loop() -> None:
    # langgraph test_pregel.py::test_batch_two_processes_in_out, through test_error_handler_parallel.py's shape
    def fetch(n: int) -> int:
        if n % 3:
            raise TimeoutError(f"attempt {n} timed out")
        return n

    def report(fetch: int | None = None, handler: int | None = None) -> str:
        return f"fetched {fetch}" if handler is None else f"gave up at {handler}"

    def expected(n: int) -> str:
        while n % 3:
            n += 1
            if n >= 10:
                return f"gave up at {n}"
        return f"fetched {n}"

    f = (Formation("retry_loop").add_function("entry", identity).add_function("fetch", fetch, concurrency=2)
         .add_function("handler", handle_fetch).add_function("report", report)
         .add_function("side", lambda n: n).add_function("final", lambda report, side: f"{side}: {report}")
         .connect("entry", "fetch", "report", "final").connect("entry", "side", "final")
         .connect("fetch", "handler", on_error=True)
         .connect("handler", "fetch", when=lambda n: n < 10).connect("handler", "report", otherwise=True))
    with f.start() as running:
        futures = [running.submit(n) for n in range(30)]
        assert [future.result(30).outputs["final"] for future in futures] == [f"{n}: {expected(n)}" for n in range(30)]


def test_a_node_timeout_in_a_loop_bounds_each_visit_not_the_sum_of_them() -> None:
    # langgraph test_pregel.py::test_step_timeout (a per-step limit), applied per visit of a looping node
    def step(n: int) -> int:
        time.sleep(0.15)
        return n + 1

    f = (Formation("loop_timeout").add_function("entry", identity).add_function("step", step, timeout=1.0)
         .add_function("done", identity)
         .connect("entry", "step").connect("step", "step", when=lambda n: n < 8).connect("step", "done", otherwise=True))
    result = f.run(0)
    assert result.output == 8 and result.nodes["step"].visits == 8


def odd_fails(n: int) -> str:
    if n % 2:
        raise ValueError(f"odd {n}")
    return f"a{n}"


def test_a_join_in_a_loop_gets_the_node_or_its_handler_each_round_whichever_ran() -> None:
    # langgraph test_error_handler_parallel.py (the handler's write beside a parallel sibling's), each step of a cycle
    def meet(a: str | None = None, b: str | None = None, handler: str | None = None) -> tuple[Any, ...]:
        return (a, b, handler)

    f = (Formation("handled_rounds").add_function("entry", identity).add_function("fork", identity)
         .add_function("a", odd_fails).add_function("b", lambda n: f"b{n}")
         .add_function("handler", lambda failure: f"h{failure.input}").add_function("meet", meet)
         .add_function("next", lambda t: int(t[1][1:]) + 1).add_function("done", identity)
         .connect("entry", "fork").connect("fork", "a", "meet").connect("fork", "b", "meet")
         .connect("a", "handler", on_error=True).connect("handler", "meet").connect("meet", "next")
         .connect("next", "fork", when=lambda n: n < 4).connect("next", "done", otherwise=True))
    rounds = [("a0", "b0", None), (None, "b1", "h1"), ("a2", "b2", None), (None, "b3", "h3")]
    with f.start() as running:
        futures = [running.submit(n) for n in range(4)]
        assert [future.result(30).nodes["meet"].outputs for future in futures] == [rounds[n:] for n in range(4)]


def test_the_late_result_of_a_timed_out_attempt_never_reaches_a_later_round_of_the_loop() -> None:
    # langgraph test_pregel_async.py::test_step_timeout_on_stream_hang (a timed-out task's write is discarded), in a cycle
    def slow_first(n: int) -> str:
        if n == 0:
            time.sleep(0.4)  # returns while round 1 waits for "b"
        return f"s{n}"

    def b(n: int) -> str:
        if n == 1:
            time.sleep(0.8)
        return f"b{n}"

    def meet(slow: str | None = None, b: str | None = None, handler: str | None = None) -> tuple[Any, ...]:
        return (slow, b, handler)

    f = (Formation("late").add_function("entry", identity).add_function("fork", identity)
         .add_function("slow", slow_first, timeout=0.1).add_function("b", b)
         .add_function("handler", lambda failure: f"h{failure.input}").add_function("meet", meet)
         .add_function("next", lambda t: int(t[1][1:]) + 1).add_function("done", identity)
         .connect("entry", "fork").connect("fork", "slow", "meet").connect("fork", "b", "meet")
         .connect("slow", "handler", on_error=True).connect("handler", "meet").connect("meet", "next")
         .connect("next", "fork", when=lambda n: n < 3).connect("next", "done", otherwise=True))
    result = f.run(0)
    assert result.nodes["meet"].outputs == [(None, "b0", "h0"), ("s1", "b1", None), ("s2", "b2", None)]
    assert result.nodes["slow"].outputs == ["s1", "s2"]


async def prep_then_hang(x: int) -> int:
    await asyncio.sleep(30)
    return x


def cut_inner() -> Formation:
    """prep → hang (an async node that never ends in time)."""
    return Formation("inner").add_function("prep", identity).add_function("hang", prep_then_hang).connect("prep", "hang")


def test_a_subgraph_cut_by_the_runs_timeout_keeps_the_traces_of_its_inner_nodes_in_the_error() -> None:
    # langgraph test_pregel.py::test_nested_graph_state (the subgraph's state is there after the parent stops)
    f = Formation("outer").add_function("start", identity).add_formation("sub", cut_inner()).connect("start", "sub")
    # 1 s, not less: a machine under load took over 0.3 s to start the inner run's prep
    with pytest.raises(FormationRuntimeError, match=r"timed out") as info:
        f.run(1, timeout=1.0)
    statuses = {name: trace.status.value for name, trace in info.value.nodes.items()}
    assert statuses == {"start": "succeeded", "sub": "cancelled", "sub/prep": "succeeded", "sub/hang": "cancelled"}
    assert info.value.nodes["sub/prep"].output == 1


def test_a_subgraph_that_lost_a_first_value_join_keeps_the_traces_of_its_inner_nodes() -> None:
    # langgraph test_pregel.py::test_nested_graph_state, the subgraph a branch the join went on without
    async def fast(x: int) -> str:
        await asyncio.sleep(0.1)
        return "fast"

    f = (Formation("race").add_function("start", identity).add_formation("sub", cut_inner())
         .add_function("fast", fast).add_function("first", identity, join="any")
         .connect("start", "sub", "first").connect("start", "fast", "first"))
    result = f.run(1)
    assert result.output == {"fast": "fast"}
    statuses = {name: result.nodes[name].status.value for name in ("sub", "sub/prep", "sub/hang")}
    assert statuses == {"sub": "cancelled", "sub/prep": "succeeded", "sub/hang": "cancelled"}


def test_a_map_over_a_subgraph_cut_by_the_runs_timeout_keeps_the_traces_of_its_inner_nodes() -> None:
    # langgraph test_pregel.py::test_send_to_nested_graphs, the run's time limit reached inside the Sends
    f = Formation("outer").add_map("each", formation=cut_inner())
    # 1 s, not less: with CPU hogs beside it, half the runs cut at 0.3 s had not started an item's prep yet
    with pytest.raises(FormationRuntimeError, match=r"timed out") as info:
        f.run([1, 2], timeout=1.0)
    statuses = {name: trace.status.value for name, trace in info.value.nodes.items()}
    assert statuses == {"each": "cancelled", "each/prep": "succeeded", "each/hang": "cancelled"}
    # the items whose prep ran before the cut (both, unless the machine is slow), each its own, in item order
    kept = info.value.nodes["each/prep"].outputs
    assert kept in ([1], [2], [1, 2]) and info.value.nodes["each/prep"].visits == len(kept)
