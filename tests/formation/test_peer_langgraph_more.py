"""Still more behaviours ported from LangGraph's test suite (langchain-ai/langgraph,
``libs/langgraph/tests``): joins in loops whose branches are uneven or skipped, branches
to several nodes, Send inside loops and subgraphs, interrupts answered one at a time,
breakpoints in loops. (Failures, retries and limits: ``test_peer_langgraph_errors.py``;
the async side: ``test_peer_langgraph_async.py``; earlier ports:
``test_peer_langgraph.py`` and ``test_peer_langgraph_resume.py``.)

LangGraph graphs share one state dict updated through reducers; ours pass each node's
output along its edges, so "the state" becomes what the nodes received and gave."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.store import RunStore


class Log:
    """What each node received, by node, in call order (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, list[Any]] = {}

    def add(self, node: str, value: Any) -> int:
        with self.lock:
            self.seen.setdefault(node, []).append(value)
            return len(self.seen[node])

    def count(self, node: str) -> int:
        with self.lock:
            return len(self.seen.get(node, []))


def identity(x: Any) -> Any:
    return x


# -- joins and branches in loops ------------------------------------------------------------


def test_a_join_in_a_loop_with_a_long_and_a_short_branch_pairs_the_values_of_each_round() -> None:
    # langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge, inside a cycle
    log = Log()

    def short(n: int) -> str:
        return f"s{n}"

    def long_1(n: int) -> int:
        time.sleep(0.02)
        return n

    def long_2(n: int) -> str:
        time.sleep(0.02)
        return f"l{n}"

    def meet(short: str, long_2: str) -> int:
        log.add("meet", (short, long_2))
        return int(short[1:]) + 1

    f = (Formation("uneven").add_function("entry", identity).add_function("fork", identity)
         .add_function("short", short).add_function("long_1", long_1).add_function("long_2", long_2)
         .add_function("meet", meet).add_function("done", identity)
         .connect("entry", "fork").connect("fork", "short", "meet").connect("fork", "long_1", "long_2", "meet")
         .connect("meet", "fork", when=lambda n: n < 4).connect("meet", "done", otherwise=True))
    result = f.run(0)
    assert result.output == 4
    assert log.seen["meet"] == [("s0", "l0"), ("s1", "l1"), ("s2", "l2"), ("s3", "l3")]


def test_a_join_in_a_loop_fires_with_one_branch_when_the_other_is_skipped_that_round() -> None:
    # langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_via_branch, in a cycle
    log = Log()

    def meet(d: dict[str, int]) -> int:
        log.add("meet", dict(d))
        return max(d.values()) + 1

    f = (Formation("skip_round").add_function("entry", identity).add_function("fork", identity)
         .add_function("always", identity).add_function("even_only", lambda n: n * 100)
         .add_function("meet", meet).add_function("done", identity)
         .connect("entry", "fork").connect("fork", "always", "meet")
         .connect("fork", "even_only", when=lambda n: n % 2 == 0).connect("even_only", "meet")
         .connect("meet", "fork", when=lambda n: n < 3).connect("meet", "done", otherwise=True))
    result = f.run(0)
    assert log.seen["meet"] == [{"always": 0, "even_only": 0}, {"always": 1}, {"always": 2, "even_only": 200}]
    assert result.output == 201
    assert result.nodes["even_only"].outputs == [0, 200]


def test_a_branch_to_several_nodes_in_a_loop_runs_each_of_them_every_round_and_joins_them() -> None:
    # langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple_cond_edge, looped
    log = Log()

    def grade(d: dict[str, str]) -> int:
        log.add("grade", sorted(d))
        return len(log.seen["grade"])

    f = (Formation("multi_branch").add_function("entry", identity).add_function("route", identity)
         .add_function("web", lambda n: f"web{n}").add_function("docs", lambda n: f"docs{n}")
         .add_function("never", lambda n: f"never{n}")
         .add_function("grade", grade).add_function("done", identity)
         .connect("entry", "route")
         .connect("route", "web", when=lambda n: n >= 0).connect("route", "docs", when=lambda n: n >= 0)
         .connect("route", "never", when=lambda n: n < 0)
         .connect("web", "grade").connect("docs", "grade").connect("never", "grade")
         .connect("grade", "route", when=lambda n: n < 3).connect("grade", "done", otherwise=True))
    result = f.run(0)
    assert result.output == 3
    assert log.seen["grade"] == [["docs", "web"]] * 3
    assert (result.nodes["web"].visits, result.nodes["docs"].visits, result.nodes["never"].visits) == (3, 3, 0)


def test_a_conditional_entry_to_several_nodes_gives_the_output_of_every_sink_it_reached() -> None:
    # langgraph test_pregel.py::test_conditional_entrypoint_to_multiple_state_graph
    f = (Formation("entry_many").add_function("start", identity)
         .add_function("get_weather", lambda city: f"sunny in {city}")
         .add_function("get_news", lambda city: f"news of {city}")
         .add_function("get_traffic", lambda city: f"jams in {city}")
         .connect("start", "get_weather", when=lambda c: c != "")
         .connect("start", "get_news", when=lambda c: c.startswith("s"))
         .connect("start", "get_traffic", when=lambda c: c.startswith("x")))
    result = f.run("sf")
    assert result.outputs == {"get_weather": "sunny in sf", "get_news": "news of sf"}
    assert result.nodes["get_traffic"].status == "skipped"


def test_send_inside_a_loop_maps_each_rounds_list_and_the_reducer_sees_every_round() -> None:
    # langgraph test_pregel.py::test_send_sequences (Send packets issued again in later steps)
    log = Log()
    f = (Formation("send_loop").add_function("entry", identity)
         .add_function("plan", lambda n: list(range(n)))
         .add_map("work", lambda i: i * 10)
         .add_function("reduce", lambda xs: (log.add("reduce", xs), len(xs) + 1)[1])
         .add_function("done", identity)
         .connect("entry", "plan", "work", "reduce")
         .connect("reduce", "plan", when=lambda n: n < 4).connect("reduce", "done", otherwise=True))
    result = f.run(1)
    assert result.output == 4
    assert log.seen["reduce"] == [[0], [0, 10], [0, 10, 20]]
    assert result.nodes["work"].outputs == [[0], [0, 10], [0, 10, 20]]


def test_two_sources_both_receive_the_input_and_meet_at_a_join() -> None:
    # langgraph test_pregel.py::test_in_one_fan_out_out_one_graph_state (START to two nodes)
    f = (Formation("two_sources").add_function("upper", str.upper).add_function("lower", str.lower)
         .add_function("both", lambda upper, lower: f"{upper}|{lower}")
         .connect("upper", "both").connect("lower", "both"))
    assert f.run("MiXed").output == "MIXED|mixed"


# -- interrupts, breakpoints and resume ----------------------------------------------------


def test_two_parallel_interrupts_are_answered_one_after_the_other_and_the_join_gets_both(store: RunStore) -> None:
    # langgraph test_pregel.py::test_interrupt_multiple / parallel nodes that each call interrupt()
    log = Log()

    def ask(name: str) -> Any:
        def run(x: str) -> str:
            log.add(name, x)
            return f"{name}={interrupt(f'{name}?')}"

        run.__name__ = name
        return run

    f = (Formation("two_asks").add_function("start", identity).add_function("ask_a", ask("a"))
         .add_function("ask_b", ask("b")).add_function("join", lambda ask_a, ask_b: f"{ask_a},{ask_b}")
         .connect("start", "ask_a", "join").connect("start", "ask_b", "join"))
    first = f.run("x", store=store)
    assert first.status == "suspended" and first.interrupt is not None
    asked_first = first.interrupt["node"]
    second = f.resume(first.run_id, store=store, answer=1)
    assert second.status == "suspended" and second.interrupt is not None
    assert {asked_first, second.interrupt["node"]} == {"ask_a", "ask_b"}
    done = f.resume(second.run_id, store=store, answer=2)
    one, two = ("a", "b") if asked_first == "ask_a" else ("b", "a")
    assert done.output == ",".join(sorted([f"{one}=1", f"{two}=2"]))


def test_a_breakpoint_before_a_node_in_a_loop_stops_the_run_at_each_of_its_visits(store: RunStore) -> None:
    # langgraph test_pregel.py::test_conditional_graph (interrupt_before=["tools"], resumed each round)
    def agent(x: Any) -> list[str]:
        history = [] if isinstance(x, str) else x
        return [*history, "call" if len(history) < 4 else "answer"]

    f = (Formation("agent").add_function("start", identity).add_function("agent", agent)
         .add_function("tools", lambda h: [*h, "result"]).add_function("finish", lambda h: h[-1])
         .connect("start", "agent").connect("agent", "tools", when=lambda h: h[-1] == "call")
         .connect("agent", "finish", otherwise=True).connect("tools", "agent"))
    r = f.run("go", store=store, break_before=["tools"])
    assert r.interrupt == {"node": "tools", "payload": {"breakpoint": "before", "input": ["call"]}}
    r = f.resume(r.run_id, store=store)
    assert r.interrupt == {"node": "tools", "payload": {"breakpoint": "before", "input": ["call", "result", "call"]}}
    r = f.resume(r.run_id, store=store)
    assert (r.status, r.output) == ("succeeded", "answer")
    assert r.nodes["tools"].visits == 2


def test_an_interrupt_in_one_item_of_a_map_over_a_subgraph_reruns_only_that_item(store: RunStore) -> None:
    # langgraph test_pregel.py::test_send_to_nested_graphs (the subgraph per Send interrupts; resume)
    log = Log()

    def generate(subject: str) -> str:
        log.add("generate", subject)
        return f"joke about {subject}"

    def review(joke: str) -> str:
        return f"{joke} ({interrupt(joke)})" if "dogs" in joke else joke

    inner = Formation("joke").add_function("generate", generate).add_function("review", review)
    f = Formation("jokes").add_map("jokes", formation=inner.connect("generate", "review"))
    first = f.run(["cats", "dogs", "owls"], store=store)
    assert first.status == "suspended"
    assert first.interrupt is not None and first.interrupt["payload"] == "joke about dogs"
    done = f.resume(first.run_id, store=store, answer="approved")
    assert done.output == ["joke about cats", "joke about dogs (approved)", "joke about owls"]
    assert sorted(log.seen["generate"]) == ["cats", "dogs", "owls"]


def test_a_map_item_that_failed_is_the_only_one_run_again_when_the_failed_run_resumes(store: RunStore) -> None:
    # langgraph test_pregel.py::test_pending_writes_resume, with Send: writes of finished tasks are kept
    log = Log()
    broken = [True]

    def work(i: int) -> int:
        log.add("work", i)
        if i == 2 and broken[0]:
            raise ConnectionError("item 2 is down")
        return i * i

    f = Formation("map_fail").add_map("work", work).add_function("total", sum).connect("work", "total")
    with pytest.raises(FormationRuntimeError) as info:
        f.run([0, 1, 2, 3], store=store, run_id="map-fail-1")
    assert info.value.node == "work"
    assert isinstance(info.value.__cause__, MapItemsError) and set(info.value.__cause__.errors) == {2}
    broken[0] = False
    assert f.resume("map-fail-1", store=store).output == 14
    assert sorted(log.seen["work"]) == [0, 1, 2, 2, 3]
