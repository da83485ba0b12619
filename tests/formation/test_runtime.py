"""Running formations: data flow, fan-in, conditionals, loops, supervision, pipelining."""

from __future__ import annotations

import threading
import time
from typing import Any

import networkx as nx
import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Formation
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


def inc(x: int) -> int:
    return x + 1


def double(x: int) -> int:
    return x * 2


def chain() -> Formation:
    return Formation("chain").add_function("a", inc).add_function("b", double).add_function("c", inc).connect(
        "a", "b", "c"
    )


def test_a_linear_chain_passes_each_output_to_the_next_node() -> None:
    result = chain().run(1)
    assert result.output == 5
    assert result.outputs == {"c": 5}
    assert [result.nodes[n].status for n in "abc"] == [NodeStatus.SUCCEEDED] * 3
    assert all(result.nodes[n].attempts == 1 for n in "abc")
    assert result.duration_s > 0


def test_a_hand_built_networkx_graph_runs_the_same() -> None:
    g = nx.DiGraph()
    g.add_node("a", kind="function", fn=inc)
    g.add_node("b", kind="function", fn=double)
    g.add_edge("a", "b")
    assert Formation("raw", graph=g).run(4).output == 10


def test_fan_in_by_keyword_arguments_named_after_predecessors() -> None:
    def total(left: int, right: int) -> int:
        return left * 10 + right

    f = (
        Formation("fan")
        .add_function("src", lambda x: x)
        .add_function("left", inc)
        .add_function("right", double)
        .add_function("total", total)
        .connect("src", "left", "total")
        .connect("src", "right", "total")
    )
    assert f.run(3).output == 46


def test_fan_in_with_one_parameter_receives_a_dict_keyed_by_predecessor() -> None:
    def join(parts: dict[str, int]) -> list[tuple[str, int]]:
        return sorted(parts.items())

    f = (
        Formation("fan")
        .add_function("src", lambda x: x)
        .add_function("p", inc)
        .add_function("q", double)
        .add_function("join", join)
        .connect("src", "p", "join")
        .connect("src", "q", "join")
    )
    assert f.run(5).output == [("p", 6), ("q", 10)]


def test_fan_in_joins_per_run_when_many_runs_are_in_flight() -> None:
    def total(p: int, q: int) -> int:
        return p + q

    f = (
        Formation("fan")
        .add_function("src", lambda x: x)
        .add_function("p", inc, concurrency=4)
        .add_function("q", double, concurrency=4)
        .add_function("total", total)
        .connect("src", "p", "total")
        .connect("src", "q", "total")
    )
    with f.start() as running:
        futures = [running.submit(i) for i in range(200)]
        assert [fut.result(10).output for fut in futures] == [(i + 1) + 2 * i for i in range(200)]


def routing() -> Formation:
    def is_big(x: int) -> bool:
        return x >= 10

    def is_small(x: int) -> bool:
        return x < 10

    return (
        Formation("route")
        .add_function("classify", lambda x: x)
        .add_function("big", lambda x: f"big {x}")
        .add_function("small", lambda x: f"small {x}")
        .add_function("after_small", lambda s: s + "!")
        .connect("classify", "big", when=is_big)
        .connect("classify", "small", when=is_small)
        .connect("small", "after_small")
    )


def test_conditional_edges_route_and_skip_the_untaken_branch_and_its_dependents() -> None:
    result = routing().run(42)
    assert result.outputs == {"big": "big 42"}
    assert result.nodes["small"].status is NodeStatus.SKIPPED
    assert result.nodes["after_small"].status is NodeStatus.SKIPPED
    other = routing().run(3)
    assert other.outputs == {"after_small": "small 3!"}
    assert other.nodes["big"].status is NodeStatus.SKIPPED


def test_a_fan_in_after_a_conditional_receives_only_what_fired() -> None:
    f = (
        Formation("partial")
        .add_function("src", lambda x: x)
        .add_function("yes", inc)
        .add_function("no", double)
        .add_function("join", lambda parts: parts)
        .connect("src", "yes", when=lambda x: True)
        .connect("src", "no", when=lambda x: False)
        .connect("yes", "join")
        .connect("no", "join")
    )
    assert f.run(1).output == {"yes": 2}


def test_a_bounded_cycle_loops_through_its_conditional_back_edge() -> None:
    def keep_going(n: int) -> bool:
        return n < 5

    def done(n: int) -> bool:
        return n >= 5

    f = (
        Formation("loop", )
        .add_function("start", lambda x: x)
        .add_function("step", inc)
        .add_function("end", lambda n: f"reached {n}")
        .connect("start", "step")
        .connect("step", "step", when=keep_going)
        .connect("step", "end", when=done)
    )
    result = f.run(0)
    assert result.output == "reached 5"
    assert result.nodes["step"].visits == 5


def test_a_loop_that_never_ends_fails_at_the_visit_limit() -> None:
    f = (
        Formation("forever")
        .add_function("start", lambda x: x)
        .add_function("spin", inc, max_visits=4)
        .add_function("end", lambda n: n)
        .connect("start", "spin")
        .connect("spin", "spin", when=lambda n: True)
        .connect("spin", "end", when=lambda n: False)
    )
    with pytest.raises(FormationRuntimeError, match="visited more than max_visits=4") as info:
        f.run(0)
    assert info.value.node == "spin"


class Flaky:
    """Fails the first `failures` calls, each on a different actor thread."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def __call__(self, x: int) -> int:
        with self.lock:
            self.calls += 1
            self.threads.append(threading.current_thread())
            if self.calls <= self.failures:
                raise RuntimeError(f"flake {self.calls}")
        return x + 100


def test_a_failing_node_is_retried_on_a_fresh_actor_and_succeeds() -> None:
    flaky = Flaky(failures=2)
    f = Formation("retry").add_function("flaky", flaky, retries=2, backoff=0.001)
    result = f.run(1)
    assert result.output == 101
    assert result.nodes["flaky"].attempts == 3
    assert len({id(t) for t in flaky.threads}) == 3  # a fresh actor (thread) per attempt


def test_retries_spent_with_on_error_fail_fails_the_run_with_node_attempts_and_cause() -> None:
    flaky = Flaky(failures=10)
    f = (
        Formation("fail")
        .add_function("first", inc)
        .add_function("flaky", flaky, retries=2, backoff=0.001)
        .connect("first", "flaky")
    )
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    err = info.value
    assert (err.node, err.attempts) == ("flaky", 3)
    assert err.run_id
    assert isinstance(err.__cause__, RuntimeError) and "flake 3" in str(err.__cause__)
    assert err.outputs == {"first": 2}
    assert "node 'flaky' failed after 3 attempt(s)" in str(err)


def test_on_error_skip_skips_the_node_and_what_depends_only_on_it() -> None:
    def broken(x: int) -> int:
        raise ValueError("nope")

    f = (
        Formation("skip")
        .add_function("src", lambda x: x)
        .add_function("broken", broken, on_error="skip")
        .add_function("after", inc)
        .add_function("fine", double)
        .connect("src", "broken", "after")
        .connect("src", "fine")
    )
    result = f.run(4)
    assert result.outputs == {"fine": 8}
    assert result.nodes["broken"].status is NodeStatus.SKIPPED
    assert "ValueError: nope" in (result.nodes["broken"].error or "")
    assert result.nodes["after"].status is NodeStatus.SKIPPED


def test_a_payload_that_does_not_fit_the_parameter_fails_naming_the_edge_without_retries() -> None:
    def text(x: int):  # no return annotation: the static check cannot see the mismatch
        return f"#{x}"

    def needs_int(n: int) -> int:
        return n

    f = (
        Formation("types")
        .add_function("text", text)
        .add_function("needs_int", needs_int, retries=3)
        .connect("text", "needs_int")
    )
    with pytest.raises(FormationRuntimeError, match="edge 'text' → 'needs_int'") as info:
        f.run(1)
    assert info.value.attempts == 1


def test_an_attempt_that_runs_past_its_timeout_is_retried_then_fails() -> None:
    def slow(x: int) -> int:
        time.sleep(0.4)
        return x

    f = Formation("slow").add_function("slow", slow, timeout=0.05, retries=1, backoff=0.001)
    t0 = time.monotonic()
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    assert time.monotonic() - t0 < 3
    assert info.value.attempts == 2
    assert "timed out after 0.05s" in str(info.value)


def test_a_whole_run_timeout_fails_the_run() -> None:
    def slow(x: int) -> int:
        time.sleep(0.3)
        return x

    f = Formation("slow").add_function("slow", slow)
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0\.05s"):
        f.run(1, timeout=0.05)


def test_a_failing_run_leaves_other_runs_in_flight_unaffected() -> None:
    def picky(x: int) -> int:
        if x == 13:
            raise ValueError("unlucky")
        return x

    f = Formation("picky").add_function("picky", picky).add_function("b", inc).connect("picky", "b")
    with f.start() as running:
        futures = [running.submit(i) for i in range(30)]
        for i, fut in enumerate(futures):
            if i == 13:
                with pytest.raises(FormationRuntimeError, match="unlucky"):
                    fut.result(5)
            else:
                assert fut.result(5).output == i + 1


def test_pipelining_a_thousand_inputs_gives_every_result_correctly() -> None:
    with chain().start() as running:
        futures = [running.submit(i) for i in range(1000)]
        assert [fut.result(30).output for fut in futures] == [(i + 1) * 2 + 1 for i in range(1000)]


def test_stop_fails_unfinished_runs_and_leaves_no_future_pending() -> None:
    gate = threading.Event()

    def wait(x: int) -> int:
        gate.wait(5)
        return x

    running = Formation("stuck").add_function("wait", wait).start()
    futures = [running.submit(i) for i in range(3)]
    gate.set()
    running.stop()
    for fut in futures:
        assert fut.done()
        if fut.exception() is not None:
            assert isinstance(fut.exception(), FormationRuntimeError)


def test_submit_after_stop_is_refused() -> None:
    running = chain().start()
    running.stop()
    with pytest.raises(RuntimeError, match="not running"):
        running.submit(1)


def test_concurrency_puts_several_replicas_behind_one_node() -> None:
    barrier = threading.Barrier(4, timeout=5)

    def meet(x: int) -> int:
        barrier.wait()  # only passes if four runs are inside this node at once
        return x

    f = Formation("wide").add_function("meet", meet, concurrency=4)
    with f.start() as running:
        futures = [running.submit(i) for i in range(8)]
        assert sorted(fut.result(10).output for fut in futures) == list(range(8))


def test_run_stream_reports_the_life_of_a_run() -> None:
    flaky = Flaky(failures=1)
    f = (
        Formation("events")
        .add_function("flaky", flaky, retries=1, backoff=0.001)
        .add_function("small", inc)
        .add_function("big", inc)
        .connect("flaky", "small", when=lambda x: x < 0)
        .connect("flaky", "big", otherwise=True)
    )
    events = list(f.run_stream(1))
    types = [(e.type.value, e.node) for e in events]
    assert types[0] == ("run_started", None)
    assert ("node_retry", "flaky") in types
    assert ("node_finished", "flaky") in types
    assert ("node_skipped", "small") in types
    assert types[-1] == ("run_finished", None)
    finished = next(e for e in events if e.type == "node_finished")
    assert finished.data["attempt"] == 2 and finished.data["duration_s"] >= 0


def test_run_stream_ends_with_run_failed_when_the_run_fails() -> None:
    def broken(x: int) -> int:
        raise ValueError("nope")

    events = list(Formation("bad").add_function("broken", broken).run_stream(1))
    assert [e.type.value for e in events][-2:] == ["node_failed", "run_failed"]
    assert "nope" in events[-1].data["error"]


def test_on_event_receives_agent_text_deltas_tagged_with_the_node() -> None:
    seen: list[FormationEvent] = []
    agent = Agent("writer", provider=ScriptedProvider(["a streamed answer of some length"]))
    result = Formation("stream").add_agent("writer", agent).run("topic", on_event=seen.append)
    deltas = [e for e in seen if e.type == "agent_text"]
    assert deltas and all(e.node == "writer" for e in deltas)
    assert "".join(e.data["text"] for e in deltas) == result.output


class Outline(BaseModel):
    title: str
    sections: list[str]


def test_agent_output_schema_objects_flow_into_typed_functions() -> None:
    def sections(outline: Outline) -> list[str]:
        return outline.sections

    provider = ScriptedProvider(['{"title": "Owls", "sections": ["Diet", "Flight"]}'])
    f = (
        Formation("typed")
        .add_agent("outline", Agent("outline", provider=provider, output_schema=Outline))
        .add_function("sections", sections)
        .connect("outline", "sections")
    )
    result = f.run("Write about owls")
    assert result.output == ["Diet", "Flight"]
    assert result.nodes["outline"].usage.output_tokens > 0
    assert result.usage == result.nodes["outline"].usage


def test_agent_prompt_template_renders_the_input() -> None:
    provider = ScriptedProvider(["ok"])
    Formation("p").add_agent("a", Agent("a", provider=provider), prompt="Summarise: {input}").run("the text")
    assert provider.requests[0].messages[-1].text == "Summarise: the text"


def test_agent_failure_after_retries_fails_the_run_with_the_agent_error_as_cause() -> None:
    provider = ScriptedProvider([AgentError("overloaded", kind=ErrorKind.AGENT, status=529)] * 2)
    f = Formation("a").add_agent("a", Agent("a", provider=provider), retries=1, backoff=0.001)
    with pytest.raises(FormationRuntimeError) as info:
        f.run("x")
    assert info.value.attempts == 2 and isinstance(info.value.__cause__, AgentError)


def test_invalid_agent_errors_are_not_retried() -> None:
    provider = ScriptedProvider([AgentError("bad key", kind=ErrorKind.INVALID, status=401), "never"])
    f = Formation("a").add_agent("a", Agent("a", provider=provider), retries=3, backoff=0.001)
    with pytest.raises(FormationRuntimeError):
        f.run("x")
    assert provider.calls == 1


def test_fleet_node_maps_items_in_order_and_retries_only_failed_items() -> None:
    failed_once: set[str] = set()
    lock = threading.Lock()

    def reply(request: Any) -> str:
        text = request.messages[-1].text
        with lock:
            if text == "b" and text not in failed_once:
                failed_once.add(text)
                raise AgentError("transient", kind=ErrorKind.NETWORK)
        return text.upper()

    provider = ScriptedProvider([reply], cycle=True)
    f = (
        Formation("fleet")
        .add_function("split", lambda s: s.split(","))
        .add_fleet("upper", Agent("upper", provider=provider), max_workers=2, retries=1, backoff=0.001)
        .connect("split", "upper")
    )
    result = f.run("a,b,c")
    assert result.output == ["A", "B", "C"]
    assert result.nodes["upper"].attempts == 2
    assert provider.calls == 4  # a, b (fails), c, then b again


def test_a_provider_override_replaces_every_agents_provider() -> None:
    override = ScriptedProvider(["from override"])
    f = Formation("o").add_agent("a", Agent("a", provider=ScriptedProvider(["original"])))
    with f.start(provider=override) as running:
        assert running.submit("x").result(5).output == "from override"


def test_runs_queued_behind_a_stuck_attempt_move_to_the_fresh_actor() -> None:
    release = threading.Event()

    def work(x: int) -> int:
        if x == 0:
            release.wait(5)
        return x

    f = Formation("stuck").add_function("work", work, timeout=0.2)
    with f.start() as running:
        try:
            futures = [running.submit(i) for i in range(5)]
            with pytest.raises(FormationRuntimeError, match="timed out"):
                futures[0].result(3)
            # still stuck in run 0, yet the others finish: they moved to a fresh actor
            assert [fut.result(3).output for fut in futures[1:]] == [1, 2, 3, 4]
        finally:
            release.set()


def test_a_late_reply_from_a_timed_out_attempt_is_ignored() -> None:
    lock = threading.Lock()
    calls: list[int] = []

    def slow_then_fast(x: int) -> str:
        with lock:
            n = len(calls)
            calls.append(n)
        if n == 0:
            time.sleep(0.3)
        return f"attempt {n + 1}"

    f = Formation("late").add_function("work", slow_then_fast, timeout=0.1, retries=1, backoff=0.001)
    result = f.run(1)
    assert result.output == "attempt 2"
    assert result.nodes["work"].attempts == 2


def test_agent_and_fleet_nodes_run_their_tools_in_the_formations_work_dir(tmp_path: Any) -> None:
    from wingman_actors import tool
    from wingman_actors.core import InferenceResponse
    from wingman_actors.tools import ToolContext

    @tool
    def where(ctx: ToolContext) -> str:
        """Where the tools work."""
        return str(ctx.work_dir)

    def reply(request: Any) -> Any:
        last = request.messages[-1]
        if last.tool_results_blocks:
            return last.tool_results_blocks[0].content or ""
        return InferenceResponse.of_tool_calls([("c1", "where", {})])

    agent = Agent("a", provider=ScriptedProvider([reply], cycle=True), tools=[where])
    f = (
        Formation("dirs")
        .add_agent("one", agent)
        .add_function("pair", lambda d: [d, d])
        .add_fleet("many", agent, max_workers=2)
        .connect("one", "pair", "many")
    )
    result = f.run("go", work_dir=tmp_path)
    assert result.outputs["many"] == [str(tmp_path), str(tmp_path)]
