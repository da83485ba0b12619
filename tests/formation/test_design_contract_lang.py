"""DESIGN's formation contract, read bullet by bullet and checked through public names
only (the imports DESIGN lists): the builder and hand-built graphs, data flow,
supervision, runs, and the formation language (joins, routes, maps, nesting, errors)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import Any

import networkx as nx
import pytest

from wingman_actors import Formation
from wingman_actors.errors import (
    FormationRuntimeError,
    FormationSetupError,
    NoRouteError,
    WingmanError,
)
from wingman_actors.formation import NodeFailure


def _double(x: int) -> int:
    return 2 * x


def _inc(x: int) -> int:
    return x + 1


# -- Public API contract: Formation and FormationResult -----------------------------------


def test_the_builder_writes_exactly_the_attributes_design_names() -> None:
    f = (Formation("attrs").add_function("a", _double, retries=2, backoff=0.0, timeout=5.0, on_error="skip")
         .add_function("b", _inc).connect("a", "b", when=lambda x: x > 0))
    assert f.graph.nodes["a"] == {"kind": "function", "fn": _double, "retries": 2, "backoff": 0.0, "timeout": 5.0,
                                  "on_error": "skip"}
    assert f.graph.nodes["b"] == {"kind": "function", "fn": _inc}
    assert set(f.graph.edges["a", "b"]) == {"when"}
    f.connect("b", "a", on_error=True)
    assert f.graph.edges["b", "a"] == {"on_error": True}


def test_a_graph_built_by_hand_with_networkx_routes_as_the_builders_does() -> None:
    g = nx.DiGraph()
    g.add_node("classify", kind="function", fn=lambda x: x)
    g.add_node("ints", kind="function", fn=lambda x: f"int {x}")
    g.add_node("rest", kind="function", fn=lambda x: f"other {x}")
    g.add_node("flaky", kind="function", fn=_Flaky(1).call, retries=1, backoff=0.0)
    g.add_edge("classify", "ints", when=int)
    g.add_edge("classify", "rest", otherwise=True)
    g.add_edge("rest", "flaky")
    f = Formation("by_hand", g)
    f.validate()
    assert f.run(3).outputs == {"ints": "int 3"}
    result = f.run("x")
    assert result.outputs == {"flaky": "other x"}
    assert result.nodes["flaky"].attempts == 2


def test_a_hand_built_graph_with_two_otherwise_edges_on_one_node_is_refused_naming_it() -> None:
    g = nx.DiGraph()
    for n in ("a", "b", "c", "d"):
        g.add_node(n, kind="function", fn=lambda x: x)
    g.add_edge("a", "b", when=lambda x: x > 0)
    g.add_edge("a", "c", otherwise=True)
    g.add_edge("a", "d", otherwise=True)
    with pytest.raises(FormationSetupError, match=r"'a'.*otherwise|otherwise.*'a'") as caught:
        Formation("two_otherwise", g).validate()
    assert isinstance(caught.value, ValueError)


def test_connecting_a_second_otherwise_edge_from_one_node_is_refused_naming_the_node() -> None:
    f = (Formation("twice").add_function("a", lambda x: x).add_function("b", lambda x: x)
         .add_function("c", lambda x: x).add_function("d", lambda x: x)
         .connect("a", "b", when=lambda x: x > 0).connect("a", "c", otherwise=True))
    with pytest.raises(FormationSetupError, match=r"'a' has an otherwise edge already"):
        f.connect("a", "d", otherwise=True)
    assert not f.graph.has_edge("a", "d")


def test_a_result_carries_output_outputs_nodes_usage_and_duration() -> None:
    f = Formation("result").add_function("a", _double).add_function("b", _inc).connect("a", "b")
    result = f.run(4)
    assert result.output == 9
    assert result.outputs == {"b": 9}
    trace = result.nodes["a"]
    assert (trace.status, trace.attempts, trace.error) == ("succeeded", 1, None)
    assert trace.started_at is not None and trace.finished_at is not None and trace.duration_s >= 0
    assert trace.usage.input_tokens == 0 and result.usage.output_tokens == 0
    assert result.duration_s > 0


def test_a_run_with_several_sinks_gives_outputs_by_sink_name() -> None:
    f = Formation("two_sinks").add_function("a", _double).add_function("b", _inc).add_function("c", str)
    f.connect("a", "b").connect("a", "c")
    assert f.run(2).outputs == {"b": 5, "c": "4"}


def test_a_started_formation_submits_futures_with_a_run_id() -> None:
    f = Formation("pipelined").add_function("a", _double)
    with f.start() as running:
        futures = [running.submit(i) for i in range(5)]
        assert all(isinstance(fut, concurrent.futures.Future) for fut in futures)
        assert len({fut.run_id for fut in futures}) == 5
        assert [fut.result(5).output for fut in futures] == [0, 2, 4, 6, 8]


def test_run_stream_yields_the_run_events_in_order() -> None:
    f = Formation("streamed").add_function("a", _double).add_function("b", _inc).connect("a", "b")
    kinds = [(e.type, e.node) for e in f.run_stream(1)]
    assert kinds[0][0] == "run_started" and kinds[-1][0] == "run_finished"
    assert ("node_finished", "a") in kinds and ("node_finished", "b") in kinds
    assert kinds.index(("node_finished", "a")) < kinds.index(("node_started", "b"))


# -- Data flow ------------------------------------------------------------------------------


def test_a_fan_in_node_receives_a_dict_keyed_by_predecessor_name() -> None:
    f = (Formation("fan_in").add_function("src", lambda x: x).add_function("a", _double)
         .add_function("b", _inc).add_function("join", lambda d: sorted(d.items()))
         .connect("src", "a", "join").connect("src", "b", "join"))
    assert f.run(3).output == [("a", 6), ("b", 4)]


def test_a_fan_in_function_with_parameters_named_after_its_predecessors_gets_keyword_arguments() -> None:
    def join(a: int, b: int) -> str:
        return f"{a}-{b}"

    f = (Formation("kwargs").add_function("src", lambda x: x).add_function("a", _double)
         .add_function("b", _inc).add_function("join", join)
         .connect("src", "a", "join").connect("src", "b", "join"))
    assert f.run(3).output == "6-4"


def test_a_node_whose_only_incoming_edge_is_a_self_loop_is_a_source() -> None:
    f = Formation("self_loop").add_function("count", _inc).add_function("done", lambda x: x)
    f.connect("count", "count", when=lambda x: x < 5).connect("count", "done", otherwise=True)
    result = f.run(0)
    assert result.output == 5
    assert result.nodes["count"].visits == 5


def test_a_node_none_of_whose_incoming_edges_fire_is_skipped_with_what_depends_only_on_it() -> None:
    f = (Formation("skips").add_function("a", lambda x: x).add_function("big", _double)
         .add_function("after_big", _inc).add_function("small", str)
         .connect("a", "big", when=lambda x: x > 10).connect("big", "after_big")
         .connect("a", "small", otherwise=True))
    result = f.run(1)
    assert result.outputs == {"small": "1"}
    assert result.nodes["big"].status == "skipped" and result.nodes["after_big"].status == "skipped"


def test_a_cycle_without_a_conditional_edge_is_a_setup_error() -> None:
    f = Formation("loop").add_function("a", _inc).add_function("b", _inc).connect("a", "b").connect("b", "a")
    with pytest.raises(FormationSetupError):
        f.validate()


def test_a_loop_that_never_ends_fails_the_run_at_its_visit_limit() -> None:
    f = Formation("endless").add_function("a", _inc, max_visits=4).add_function("b", lambda x: x)
    f.connect("a", "a", when=lambda x: True).connect("a", "b", otherwise=True)
    with pytest.raises(FormationRuntimeError, match=r"max_visits=4") as caught:
        f.run(0, timeout=10)
    assert caught.value.node == "a"


def test_a_node_whose_outgoing_edges_are_all_back_edges_is_not_a_sink() -> None:
    f = (Formation("back_only").add_function("start", lambda x: x).add_function("head", _inc)
         .add_function("side", lambda x: x).add_function("out", lambda x: x)
         .connect("start", "head").connect("head", "side", when=lambda x: x < 3)
         .connect("side", "head", when=lambda x: True).connect("head", "out", otherwise=True))
    result = f.run(0)
    assert result.outputs == {"out": 3}
    assert result.output == 3
    assert result.nodes["side"].outputs == [1, 2]


# -- Routes ----------------------------------------------------------------------------------


def test_when_may_be_a_tuple_of_types() -> None:
    f = (Formation("tuple_when").add_function("a", lambda x: x).add_function("num", lambda x: f"num {x}")
         .add_function("other", lambda x: f"other {x}")
         .connect("a", "num", when=(int, float)).connect("a", "other", otherwise=True))
    assert f.run(2.5).outputs == {"num": "num 2.5"}
    assert f.run(2).outputs == {"num": "num 2"}
    assert f.run("s").outputs == {"other": "other s"}


def test_when_a_type_narrows_the_upstream_output_type_along_the_edge() -> None:
    def either(x: int) -> str | int:
        return "s" if x else 0

    def shout(s: str) -> str:
        return s.upper()

    def count(n: int) -> int:
        return n

    f = (Formation("narrow").add_function("a", either).add_function("shout", shout).add_function("count", count)
         .connect("a", "shout", when=str).connect("a", "count", when=int))
    f.validate()
    assert f.run(1).outputs == {"shout": "S"}


def test_no_route_error_is_a_runtime_error_naming_the_node_with_a_preview_of_the_output() -> None:
    f = (Formation("no_route").add_function("a", lambda x: {"value": x}).add_function("b", lambda x: x)
         .connect("a", "b", when=lambda d: d["value"] > 100))
    with pytest.raises(NoRouteError) as caught:
        f.run(7)
    err = caught.value
    assert isinstance(err, FormationRuntimeError) and isinstance(err, WingmanError)
    assert err.node == "a"
    assert "{'value': 7}" in err.preview and "{'value': 7}" in str(err)
    assert err.run_id


def test_the_otherwise_edge_is_taken_when_no_condition_fires() -> None:
    f = (Formation("otherwise").add_function("a", lambda x: x).add_function("pos", lambda x: "pos")
         .add_function("neg", lambda x: "neg").add_function("else", lambda x: "zero")
         .connect("a", "pos", when=lambda x: x > 0).connect("a", "neg", when=lambda x: x < 0)
         .connect("a", "else", otherwise=True))
    assert f.run(0).outputs == {"else": "zero"}
    assert f.run(-1).outputs == {"neg": "neg"}


# -- Supervision and retries -----------------------------------------------------------------


class _Flaky:
    """Fails its first ``n`` calls (thread-safe), then echoes its input."""

    def __init__(self, n: int, error: type[BaseException] = RuntimeError) -> None:
        self.n = n
        self.error = error
        self.calls = 0
        self.lock = threading.Lock()

    def call(self, x: Any) -> Any:
        with self.lock:
            self.calls += 1
            if self.calls <= self.n:
                raise self.error(f"flaky call {self.calls}")
        return x


def test_a_node_that_fails_after_its_retries_fails_the_run_naming_node_attempts_and_cause_with_partial_outputs() -> None:
    flaky = _Flaky(10, ValueError)
    f = (Formation("fails").add_function("first", _double).add_function("flaky", flaky.call, retries=2, backoff=0.0)
         .connect("first", "flaky"))
    with pytest.raises(FormationRuntimeError, match=r"'flaky'.*3 attempt") as caught:
        f.run(1)
    err = caught.value
    assert (err.node, err.attempts) == ("flaky", 3)
    assert isinstance(err.__cause__, ValueError)
    assert err.outputs == {"first": 2}
    assert flaky.calls == 3


def test_on_error_skip_skips_the_node_and_its_dependents_and_the_run_succeeds() -> None:
    f = (Formation("skip").add_function("a", lambda x: x).add_function("bad", _Flaky(10).call, on_error="skip")
         .add_function("after", _inc).add_function("good", _double)
         .connect("a", "bad", "after").connect("a", "good"))
    result = f.run(1)
    assert result.outputs == {"good": 2}
    assert result.nodes["bad"].status == "skipped" and result.nodes["after"].status == "skipped"
    assert "flaky call" in (result.nodes["bad"].error or "")


def test_a_failing_run_leaves_the_other_runs_in_flight_running() -> None:
    def maybe(x: int) -> int:
        if x == 3:
            raise RuntimeError("three")
        time.sleep(0.02)
        return x

    f = Formation("others").add_function("a", maybe, concurrency=2)
    with f.start() as running:
        futures = [running.submit(i) for i in range(6)]
        for i, fut in enumerate(futures):
            if i == 3:
                with pytest.raises(FormationRuntimeError, match=r"three"):
                    fut.result(5)
            else:
                assert fut.result(5).output == i


def test_retry_on_default_does_not_retry_a_payload_error() -> None:
    from wingman_actors.errors import PayloadError  # (DESIGN names it in the retry policy)

    calls: list[int] = []

    def refuse(x: int) -> int:
        calls.append(x)
        raise PayloadError("this input never fits")

    f = Formation("payload").add_function("a", refuse, retries=3, backoff=0.0)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1)
    assert caught.value.attempts == 1 and calls == [1]


def test_retry_on_retries_only_the_named_errors() -> None:
    flaky = _Flaky(1, KeyError)
    f = Formation("retry_on").add_function("a", flaky.call, retries=3, backoff=0.0, retry_on=(ValueError, OSError))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1)
    assert caught.value.attempts == 1 and flaky.calls == 1
    flaky = _Flaky(2, OSError)
    f = Formation("retry_on2").add_function("a", flaky.call, retries=3, backoff=0.0, retry_on=(ValueError, OSError))
    assert f.run(5).nodes["a"].attempts == 3


def test_jitter_false_waits_exactly_backoff_doubling_capped_by_max_backoff() -> None:
    f = Formation("backoff").add_function("a", _Flaky(4).call, retries=4, backoff=0.01, max_backoff=0.03, jitter=False)
    delays = [e.data["delay_s"] for e in f.run_stream(1) if e.type == "node_retry"]
    assert delays == [0.01, 0.02, 0.03, 0.03]


def test_a_retried_node_waits_its_backoff_before_the_next_attempt() -> None:
    starts: list[float] = []

    def fail_twice(x: int) -> int:
        starts.append(time.monotonic())
        if len(starts) < 3:
            raise RuntimeError("again")
        return x

    f = Formation("waits").add_function("a", fail_twice, retries=2, backoff=0.05, jitter=False)
    assert f.run(1).output == 1
    assert starts[1] - starts[0] >= 0.045 and starts[2] - starts[1] >= 0.095


# -- Runs: cancellation and time limits ------------------------------------------------------


def test_cancelling_a_run_in_flight_cancels_only_that_run_and_emits_run_cancelled() -> None:
    gate = threading.Event()
    started = threading.Event()

    def stuck(x: int) -> int:
        if x == 0:
            started.set()
            gate.wait(5)
        return x

    f = Formation("cancel").add_function("a", stuck, concurrency=2)
    events: list[Any] = []
    try:
        with f.start(on_event=events.append) as running:
            first, second = running.submit(0), running.submit(1)
            assert started.wait(5)
            assert first.cancel() is True
            with pytest.raises(concurrent.futures.CancelledError):
                first.result(1)
            assert second.result(5).output == 1
            assert running.cancel(second.run_id) is False
            assert second.cancel() is False
    finally:
        gate.set()
    assert any(e.type == "run_cancelled" and e.run_id == first.run_id for e in events)


def test_a_node_timeout_fails_run_within_its_limit_while_the_function_stays_stuck() -> None:
    release = threading.Event()
    f = Formation("stuck").add_function("a", lambda x: release.wait(10), timeout=0.3)
    t0 = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out"):
            f.run(1)
        elapsed = time.monotonic() - t0
        # Not before the limit, and long before the function's 10 s: run() includes starting
        # and stopping the formation, which a loaded CI machine has stretched past 0.1 s.
        assert 0.3 <= elapsed < 0.3 + 0.7
    finally:
        release.set()


def test_every_declaration_error_of_a_builder_call_is_a_setup_error_and_a_value_error() -> None:
    f = Formation("decl").add_function("a", _double)
    with pytest.raises(FormationSetupError, match=r"'a'") as caught:
        f.add_function("a", _inc)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(FormationSetupError, match=r"retries"):
        f.add_function("b", _inc, retries=-1)
    with pytest.raises(FormationSetupError, match=r"'zz'"):
        f.connect("a", "zz")


# -- Joins -----------------------------------------------------------------------------------


def test_join_any_passes_the_first_value_as_a_keyword_argument() -> None:
    slow_gate = threading.Event()

    def slow(x: int) -> str:
        slow_gate.wait(2)
        return "slow"

    def first(fast: str | None = None, slow: str | None = None) -> str:
        return f"fast={fast} slow={slow}"

    f = (Formation("any_kw").add_function("src", lambda x: x).add_function("fast", lambda x: "fast")
         .add_function("slow", slow).add_function("first", first, join="any")
         .connect("src", "fast", "first").connect("src", "slow", "first"))
    try:
        result = f.run(1)
    finally:
        slow_gate.set()
    assert result.output == "fast=fast slow=None"
    assert result.nodes["slow"].status == "cancelled"


def test_a_predecessor_delivering_several_times_before_the_join_fires_is_paired_oldest_first() -> None:
    # ``quick`` loops back to ``fork`` and delivers 1, 2, 3 to the join while ``lag`` still
    # works on its first value: each visit of the join pairs the values of one iteration.
    joined: list[tuple[int, int]] = []

    def lag(x: int) -> int:
        time.sleep(0.1)
        return x

    def join(quick: int, lag: int) -> int:
        joined.append((quick, lag))
        return quick

    f = (Formation("queued").add_function("src", lambda x: x).add_function("fork", lambda x: x)
         .add_function("quick", _inc).add_function("lag", lag).add_function("join", join)
         .connect("src", "fork").connect("fork", "quick", "join").connect("fork", "lag", "join")
         .connect("quick", "fork", when=lambda x: x < 3))
    result = f.run(0)
    assert joined == [(1, 0), (2, 1), (3, 2)]
    assert result.nodes["join"].outputs == [1, 2, 3]


# -- Payloads ---------------------------------------------------------------------------------


def test_a_receivers_in_place_mutation_never_reaches_another_receiver_or_the_result() -> None:
    def mutate(d: dict[str, list[int]]) -> int:
        d["xs"].append(99)
        return len(d["xs"])

    def read(d: dict[str, list[int]]) -> int:
        time.sleep(0.05)
        return len(d["xs"])

    f = (Formation("isolated").add_function("make", lambda x: {"xs": [1, 2]})
         .add_function("mutate", mutate).add_function("read", read)
         .connect("make", "mutate").connect("make", "read"))
    result = f.run(0)
    assert result.outputs == {"mutate": 3, "read": 2}
    assert result.nodes["make"].output == {"xs": [1, 2]}


# -- Error edges -------------------------------------------------------------------------------


def test_an_error_edge_handler_gets_a_node_failure_with_node_error_input_attempts_and_run_id() -> None:
    got: list[NodeFailure] = []

    def handler(failure: NodeFailure) -> str:
        got.append(failure)
        return "handled"

    f = (Formation("error_edge").add_function("a", _double).add_function("b", _Flaky(10, KeyError).call,
                                                                          retries=1, backoff=0.0)
         .add_function("handler", handler).connect("a", "b").connect("b", "handler", on_error=True))
    result = f.run(2)
    assert result.outputs == {"handler": "handled"}
    (failure,) = got
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("b", 4, 2, result.run_id)
    assert isinstance(failure.error, KeyError)
    assert result.nodes["b"].status == "failed"


def test_a_timeout_goes_along_the_error_edge_too() -> None:
    release = threading.Event()
    got: list[NodeFailure] = []
    f = (Formation("timeout_edge").add_function("slow", lambda x: release.wait(5), timeout=0.2)
         .add_function("handler", lambda failure: got.append(failure) or "late")
         .connect("slow", "handler", on_error=True))
    try:
        result = f.run(1)
    finally:
        release.set()
    assert result.outputs["handler"] == "late"  # (a node with only error edges out is a sink too)
    assert isinstance(got[0].error, WingmanError) and got[0].node == "slow"


# -- Map nodes ---------------------------------------------------------------------------------


def test_a_map_of_an_empty_list_outputs_an_empty_list() -> None:
    calls: list[int] = []
    f = Formation("empty_map").add_map("m", lambda x: calls.append(x) or x)
    assert f.run([]).output == []
    assert calls == []


def test_a_map_over_a_formation_of_an_empty_list_outputs_an_empty_list() -> None:
    inner = Formation("inner").add_function("double", _double)
    assert Formation("empty_sub_map").add_map("m", formation=inner).run([]).output == []


def test_a_map_retry_reruns_only_the_items_that_failed() -> None:
    calls: dict[int, int] = {}
    lock = threading.Lock()

    def item(x: int) -> int:
        with lock:
            calls[x] = calls.get(x, 0) + 1
            n = calls[x]
        if x % 2 and n == 1:
            raise RuntimeError(f"odd item {x} first try")
        return 10 * x

    f = Formation("map_retry").add_map("m", item, max_workers=3, retries=1, backoff=0.0)
    assert f.run([0, 1, 2, 3, 4]).output == [0, 10, 20, 30, 40]
    assert calls == {0: 1, 1: 2, 2: 1, 3: 2, 4: 1}


def test_a_map_awaits_an_async_function_and_keeps_item_order() -> None:
    async def late(x: int) -> int:
        await asyncio.sleep(0.01 * (3 - x))
        return x * x

    assert Formation("async_map").add_map("m", late, max_workers=3).run([0, 1, 2]).output == [0, 1, 4]


# -- Nested formations -------------------------------------------------------------------------


def test_a_nested_formation_with_several_sinks_outputs_the_dict_of_its_sinks() -> None:
    inner = (Formation("inner").add_function("src", lambda x: x).add_function("a", _double)
             .add_function("b", _inc).connect("src", "a").connect("src", "b"))
    outer = (Formation("outer").add_formation("sub", inner).add_function("after", lambda d: sorted(d.items()))
             .connect("sub", "after"))
    assert outer.run(3).output == [("a", 6), ("b", 4)]


def test_inner_events_reach_the_outer_listeners_named_by_their_path() -> None:
    inner = Formation("inner").add_function("double", _double)
    outer = Formation("outer").add_function("first", _inc).add_formation("sub", inner).connect("first", "sub")
    finished = [e.node for e in outer.run_stream(1) if e.type == "node_finished"]
    assert "sub/double" in finished and "first" in finished


def test_retries_on_a_nested_formation_rerun_the_inner_run_as_a_whole() -> None:
    source_calls: list[int] = []
    flaky = _Flaky(1)

    def src(x: int) -> int:
        source_calls.append(x)
        return x

    inner = (Formation("inner").add_function("src", src).add_function("flaky", flaky.call)
             .connect("src", "flaky"))
    outer = Formation("outer").add_formation("sub", inner, retries=1, backoff=0.0)
    result = outer.run(7)
    assert result.output == 7
    assert source_calls == [7, 7]  # the whole inner run again, not only its failed node
    assert result.nodes["sub"].attempts == 2


def test_a_timeout_on_a_nested_formation_bounds_the_inner_run_as_a_whole() -> None:
    release = threading.Event()

    def step(x: int) -> int:
        release.wait(0.15)
        return x

    inner = (Formation("inner").add_function("one", step).add_function("two", step).add_function("three", step)
             .connect("one", "two", "three"))
    outer = Formation("outer").add_formation("sub", inner, timeout=0.3)
    t0 = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError) as caught:
            outer.run(1)
    finally:
        release.set()
    assert caught.value.node == "sub"
    assert time.monotonic() - t0 < 1.0


def test_on_error_skip_on_a_nested_formation_skips_it_when_its_inner_run_fails() -> None:
    inner = Formation("inner").add_function("bad", _Flaky(10).call)
    outer = (Formation("outer").add_function("a", lambda x: x).add_formation("sub", inner, on_error="skip")
             .add_function("other", _inc).connect("a", "sub").connect("a", "other"))
    result = outer.run(1)
    assert result.outputs == {"other": 2}
    assert result.nodes["sub"].status == "skipped"


def test_to_mermaid_draws_a_nested_formation_as_a_subgraph() -> None:
    inner = Formation("inner").add_function("double", _double)
    text = Formation("outer").add_formation("sub", inner).to_mermaid()
    assert "subgraph" in text and "double" in text


def test_a_hand_built_node_with_attributes_but_no_kind_is_told_to_set_kind() -> None:
    g = nx.DiGraph()
    g.add_node("a", fn=_double, retries=1)
    with pytest.raises(FormationSetupError, match=r"node 'a' has no kind.*kind='function'") as caught:
        Formation("no_kind", g).validate()
    assert "undeclared" not in str(caught.value)
