"""Fan-in joins are per visit: values of one loop iteration never meet another's,
early values queue, and ``join="any"`` fires with the first value of a visit."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation._result import NodeStatus


class Calls:
    """Counts the calls of each node (thread-safe) and keeps what each received."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, list[Any]] = {}

    def record(self, node: str, value: Any) -> None:
        with self.lock:
            self.seen.setdefault(node, []).append(value)


def rag_loop(calls: Calls, *, slow_two: float = 0.0) -> Formation:
    """LangGraph's own test case: rewrite → analyzer → (retriever_one | retriever_two) →
    decider → rewrite, twice round the loop."""

    def rewrite(query: Any) -> str:
        calls.record("rewrite", query)
        return f"q{len(calls.seen['rewrite'])}"

    def analyzer(query: str) -> str:
        calls.record("analyzer", query)
        return query

    def retriever_one(query: str) -> str:
        calls.record("retriever_one", query)
        return f"one:{query}"

    def retriever_two(query: str) -> str:
        time.sleep(slow_two)
        calls.record("retriever_two", query)
        return f"two:{query}"

    def decider(retriever_one: str, retriever_two: str) -> str:
        calls.record("decider", (retriever_one, retriever_two))
        return retriever_one.split(":")[1]

    def finish(query: str) -> str:
        calls.record("finish", query)
        return query

    return (
        Formation("rag")
        .add_function("start", lambda query: query)  # LangGraph's START
        .add_function("rewrite", rewrite)
        .add_function("analyzer", analyzer)
        .add_function("retriever_one", retriever_one)
        .add_function("retriever_two", retriever_two)
        .add_function("decider", decider)
        .add_function("finish", finish)
        .connect("start", "rewrite", "analyzer")
        .connect("analyzer", "retriever_one", "decider")
        .connect("analyzer", "retriever_two", "decider")
        .connect("decider", "rewrite", when=lambda q: q == "q1")
        .connect("decider", "finish", otherwise=True)
    )


def test_a_join_inside_a_loop_pairs_the_values_of_one_iteration() -> None:
    calls = Calls()
    result = rag_loop(calls, slow_two=0.05).run("start")
    assert result.output == "q2"
    assert calls.seen["decider"] == [("one:q1", "two:q1"), ("one:q2", "two:q2")]
    assert len(calls.seen["finish"]) == 1
    assert result.nodes["decider"].visits == 2


def test_a_join_inside_a_loop_fires_once_per_iteration_with_branches_of_unequal_length() -> None:
    fast_seen: list[tuple[int, int]] = []

    def start(n: int) -> int:
        return n

    def fast(n: int) -> int:
        return n

    def slow_1(n: int) -> int:
        time.sleep(0.01)
        return n

    def slow_2(n: int) -> int:
        return n

    def slow_3(n: int) -> int:
        time.sleep(0.01)
        return n

    def meet(fast: int, slow_3: int) -> int:
        fast_seen.append((fast, slow_3))
        return fast + 1

    def done(n: int) -> int:
        return n

    f = (
        Formation("uneven")
        .add_function("entry", start)
        .add_function("start", start)
        .add_function("fast", fast)
        .add_function("slow_1", slow_1)
        .add_function("slow_2", slow_2)
        .add_function("slow_3", slow_3)
        .add_function("meet", meet)
        .add_function("done", done)
        .connect("entry", "start", "fast", "meet")
        .connect("start", "slow_1", "slow_2", "slow_3", "meet")
        .connect("meet", "start", when=lambda n: n < 5)
        .connect("meet", "done", otherwise=True)
    )
    result = f.run(0)
    assert result.output == 5
    assert fast_seen == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    assert result.nodes["meet"].visits == 5


def test_a_predecessor_that_delivers_twice_before_the_join_fires_queues_its_values() -> None:
    # 'often' loops on itself and delivers 1, 2, 3 to the join before 'late' delivers its
    # one value: the join pairs the oldest, instead of the last one overwriting the others.
    pairs: list[tuple[int, int]] = []

    def often(n: int) -> int:
        return n + 1

    def late(n: int) -> int:
        time.sleep(0.2)
        return n + 1

    def meet(often: int, late: int) -> int:
        pairs.append((often, late))
        return often + late

    f = (
        Formation("queue")
        .add_function("src", lambda n: n)
        .add_function("often", often)
        .add_function("late", late)
        .add_function("meet", meet)
        .connect("src", "often", "meet")
        .connect("src", "late", "meet")
        .connect("often", "often", when=lambda n: n < 3)
    )
    result = f.run(0)
    assert pairs == [(1, 1)]
    assert result.output == 2
    assert result.nodes["often"].visits == 3


def test_join_any_fires_with_the_first_value_and_drops_the_late_ones() -> None:
    received: list[dict[str, Any]] = []
    late_done = threading.Event()

    def fast(x: int) -> str:
        return f"fast:{x}"

    def slow(x: int) -> str:
        time.sleep(0.2)
        late_done.set()
        return f"slow:{x}"

    def first(values: dict[str, Any]) -> str:
        received.append(values)
        return next(iter(values.values()))

    f = (
        Formation("race")
        .add_function("start", lambda x: x)
        .add_function("fast", fast)
        .add_function("slow", slow)
        .add_function("first", first, join="any")
        .connect("start", "fast", "first")
        .connect("start", "slow", "first")
    )
    result = f.run(1)
    assert result.output == "fast:1"
    assert received == [{"fast": "fast:1"}]
    assert result.nodes["first"].visits == 1


def test_join_any_passes_one_keyword_argument() -> None:
    def pick(a: str | None = None, b: str | None = None) -> str:
        return f"a={a} b={b}"

    f = (
        Formation("kw")
        .add_function("start", lambda x: x)
        .add_function("a", lambda x: "A")
        .add_function("b", lambda x: time.sleep(0.1) or "B")
        .add_function("pick", pick, join="any")
        .connect("start", "a", "pick")
        .connect("start", "b", "pick")
    )
    assert f.run(0).output == "a=A b=None"


def test_join_any_skips_the_node_when_every_branch_was_skipped() -> None:
    f = (
        Formation("none")
        .add_function("start", lambda x: x)
        .add_function("a", lambda x: x)
        .add_function("b", lambda x: x)
        .add_function("merge", lambda values: values, join="any")
        .add_function("other", lambda x: x)
        .connect("start", "a", when=lambda x: x > 10)
        .connect("start", "b", when=lambda x: x > 20)
        .connect("start", "other", otherwise=True)
        .connect("a", "merge")
        .connect("b", "merge")
    )
    result = f.run(1)
    assert result.nodes["merge"].status is NodeStatus.SKIPPED
    assert result.outputs == {"other": 1}


def test_join_any_refuses_keyword_parameters_without_defaults() -> None:
    def pick(a: str, b: str) -> str:
        return a + b

    f = (
        Formation("kw")
        .add_function("start", lambda x: x)
        .add_function("a", lambda x: "A")
        .add_function("b", lambda x: "B")
        .add_function("pick", pick, join="any")
        .connect("start", "a", "pick")
        .connect("start", "b", "pick")
    )
    with pytest.raises(FormationSetupError, match=r"join='any'.*requires 'a', 'b'; give those parameters defaults"):
        f.validate()


def test_join_must_be_all_or_any() -> None:
    with pytest.raises(FormationSetupError, match="join must be 'all'"):
        Formation("f").add_function("a", lambda x: x, join="first")


def test_a_join_in_a_pipelined_formation_keeps_runs_apart() -> None:
    f = (
        Formation("many")
        .add_function("start", lambda x: x)
        .add_function("left", lambda x: x * 10)
        .add_function("right", lambda x: x * 100)
        .add_function("sum", lambda left, right: left + right)
        .connect("start", "left", "sum")
        .connect("start", "right", "sum")
    )
    with f.start() as running:
        futures = [running.submit(i) for i in range(50)]
        assert [fut.result(10).output for fut in futures] == [i * 110 for i in range(50)]


def test_join_any_cancels_the_rest_of_the_branches_that_feed_only_it() -> None:
    ran: list[str] = []
    gate = threading.Event()
    slow_2_done = threading.Event()  # skipped or run

    def slow_1(x: int) -> int:
        gate.wait(5)  # still running when 'fast' fires the join
        ran.append("slow_1")
        return x

    def slow_2(x: int) -> int:
        ran.append("slow_2")
        slow_2_done.set()
        return x

    def finish(values: dict[str, int]) -> dict[str, int]:
        gate.set()  # the run is still going while slow_1 finishes
        slow_2_done.wait(5)
        return values

    def watch(event: Any) -> None:
        if event.type == "node_skipped" and event.node == "slow_2":
            slow_2_done.set()

    f = (
        Formation("race")
        .add_function("start", lambda x: x)
        .add_function("fast", lambda x: x + 1)
        .add_function("slow_1", slow_1)
        .add_function("slow_2", slow_2)
        .add_function("first", lambda values: values, join="any")
        .add_function("finish", finish)
        .connect("start", "fast", "first", "finish")
        .connect("start", "slow_1", "slow_2", "first")
    )
    assert f.validate().nodes["first"].race == {"fast": frozenset({"slow_1", "slow_2"}), "slow_2": frozenset({"fast"})}
    with f.start(on_event=watch) as running:
        result = running.submit(1).result(10)
    assert result.output == {"fast": 2}
    assert ran in (["slow_1"], [])  # slow_1 finished if it had started, else it was dropped from its queue
    # DESIGN: the other branches are cancelled, the node a dropped value would have fed too
    assert result.nodes["slow_1"].status is NodeStatus.CANCELLED
    assert result.nodes["slow_2"].status is NodeStatus.CANCELLED


def test_join_any_keeps_a_branch_another_node_needs() -> None:
    f = (
        Formation("shared")
        .add_function("start", lambda x: x)
        .add_function("fast", lambda x: x)
        .add_function("slow", lambda x: time.sleep(0.1) or x)
        .add_function("first", lambda values: values, join="any")
        .add_function("audit", lambda x: f"audited {x}")
        .connect("start", "fast", "first")
        .connect("start", "slow", "first")
        .connect("slow", "audit")
    )
    assert f.validate().nodes["first"].race["fast"] == frozenset()
    assert f.run(3).outputs == {"first": {"fast": 3}, "audit": "audited 3"}


def test_join_any_inside_a_loop_runs_every_branch_again_on_the_next_visit() -> None:
    counts = {"fast": 0, "slow": 0}

    def fast(n: int) -> int:
        counts["fast"] += 1
        return n

    def slow(n: int) -> int:
        time.sleep(0.05)
        counts["slow"] += 1
        return n

    def step(n: int) -> int:
        return n + 1

    f = (
        Formation("loop")
        .add_function("entry", lambda n: n)
        .add_function("step", step)
        .add_function("fast", fast)
        .add_function("slow", slow)
        .add_function("first", lambda values: next(iter(values.values())), join="any")
        .add_function("done", lambda n: n)
        .connect("entry", "step", "fast", "first")
        .connect("step", "slow", "first")
        .connect("first", "step", when=lambda n: n < 3)
        .connect("first", "done", otherwise=True)
    )
    result = f.run(0)
    assert result.output == 3
    assert counts["fast"] == 3
    assert result.nodes["first"].visits == 3


def test_join_any_stops_an_agent_working_or_queued_in_a_cancelled_branch() -> None:
    from wingman_actors import Agent
    from wingman_actors.testing import ScriptedProvider

    skipped = threading.Event()

    def watch(event: Any) -> None:
        if event.type == "node_skipped" and event.node == "slow_agent":
            skipped.set()

    def finish(values: dict[str, Any]) -> dict[str, Any]:
        assert skipped.wait(5)  # the agent's 30 s model call was cut short while the run goes on
        return values

    agent = Agent("slow", provider=ScriptedProvider(["late"], latency_s=30))
    f = (
        Formation("race")
        .add_function("start", lambda x: x)
        .add_function("fast", lambda x: f"fast {x}")
        .add_agent("slow_agent", agent)
        .add_function("first", lambda values: values, join="any")
        .add_function("finish", finish)
        .connect("start", "fast", "first", "finish")
        .connect("start", "slow_agent", "first")
    )
    t0 = time.monotonic()
    with f.start(on_event=watch) as running:
        result = running.submit("go").result(10)
    assert time.monotonic() - t0 < 5
    assert result.output == {"fast": "fast go"}
    assert result.nodes["slow_agent"].status is NodeStatus.CANCELLED


def test_a_join_any_loser_that_finishes_while_the_run_goes_on_is_dropped_as_a_queued_one_not_succeeded() -> None:
    # DESIGN: the other branches that feed only the join are cancelled, their late values dropped
    slow_started, slow_may_end, after_may_end = threading.Event(), threading.Event(), threading.Event()

    def fast(x: int) -> str:
        slow_started.wait(10)
        return "fast"

    def slow(x: int) -> str:
        slow_started.set()
        slow_may_end.wait(10)
        return "slow"

    def first(values: dict[str, Any]) -> str:
        slow_may_end.set()  # the loser ends while the run goes on
        return next(iter(values))

    def after(x: str) -> str:
        after_may_end.wait(0.5)
        return x

    f = (
        Formation("race-on").add_function("start", lambda x: x).add_function("fast", fast)
        .add_function("slow", slow).add_function("first", first, join="any").add_function("after", after)
        .connect("start", "fast", "first").connect("start", "slow", "first").connect("first", "after")
    )
    skipped: list[tuple[str | None, str, bool]] = []
    result = f.run(1, on_event=lambda e: skipped.append((e.node, e.data["reason"], e.data.get("cancelled", False)))
                   if e.type == "node_skipped" else None)
    assert result.output == "fast" and result.nodes["first"].visits == 1
    slow_trace = result.nodes["slow"]
    assert (slow_trace.status, slow_trace.outputs) == ("cancelled", []), slow_trace  # as a branch dropped while queued
    assert skipped == [("slow", "cancelled: 'first' (join='any') fired without it", True)]


def test_join_any_losers_still_running_when_the_run_ends_read_cancelled_not_skipped() -> None:
    # DESIGN: "the other branches that feed only this node are cancelled"
    release = threading.Event()

    def slow(x: int) -> int:
        release.wait(10)
        return x

    f = (
        Formation("race-end").add_function("start", lambda x: x).add_function("fast", lambda x: x + 1)
        .add_function("slow", slow).add_function("slow_2", lambda x: x)
        .add_function("first", lambda values: values, join="any")
        .connect("start", "fast", "first").connect("start", "slow", "slow_2", "first")
    )
    try:
        with f.start() as running:
            result = running.submit(1).result(10)
            statuses = {name: result.nodes[name].status for name in ("fast", "slow", "slow_2", "first")}
            release.set()
    finally:
        release.set()
    assert result.output == {"fast": 2}
    assert statuses == {"fast": NodeStatus.SUCCEEDED, "slow": NodeStatus.CANCELLED,
                        "slow_2": NodeStatus.CANCELLED, "first": NodeStatus.SUCCEEDED}


def test_join_any_in_a_loop_does_not_wait_for_a_losing_branch_stuck_in_blocking_code() -> None:
    # DESIGN: the branches a join="any" fires without are cancelled, and an abandoned attempt never
    # delays the run. A loser stuck in plain blocking code is abandoned (its thread runs on until
    # the code returns, here when the test ends), so the next round fires with the fast branch.
    release, started = threading.Event(), threading.Condition()
    stuck: list[int] = []

    def slow(n: int) -> int:
        with started:
            stuck.append(n)
            started.notify_all()
        release.wait(5)
        return n

    def fast(n: int) -> int:  # wins each round, once that round's slow visit is stuck
        with started:
            assert started.wait_for(lambda: n in stuck, timeout=5)
        return n

    f = (
        Formation("loop")
        .add_function("entry", lambda n: n)
        .add_function("step", lambda n: n + 1)
        .add_function("fast", fast)
        .add_function("slow", slow)
        .add_function("first", lambda values: next(iter(values.values())), join="any")
        .add_function("done", lambda n: n)
        .connect("entry", "step", "fast", "first")
        .connect("step", "slow", "first")
        .connect("first", "step", when=lambda n: n < 3)
        .connect("first", "done", otherwise=True)
    )
    try:
        t0 = time.perf_counter()
        result = f.run(0, timeout=4)
        elapsed = time.perf_counter() - t0
    finally:
        release.set()
    assert (result.output, result.nodes["first"].visits) == (3, 3)
    assert stuck == [1, 2, 3]  # each round's slow visit got stuck, the next one ran on a fresh replica
    assert result.nodes["slow"].status == "cancelled"
    assert elapsed < 2.5  # (a round waiting for its stuck loser would wait the full 5 s)


def test_join_any_in_a_loop_matches_a_replicated_losers_values_to_their_own_iteration() -> None:
    # DESIGN: joins are per visit; values from one loop iteration never meet another's. The
    # loser has two replicas, so iteration 1's value of it arrives before iteration 0's
    # (still running when ``fast`` won iteration 0): each must count for its own iteration.
    seen: list[dict[str, str]] = []
    slow0_started, slow1_done, slow0_done = threading.Event(), threading.Event(), threading.Event()

    def slow(i: int) -> str:
        if i == 0:
            slow0_started.set()
            assert slow1_done.wait(5)
            time.sleep(0.2)  # iteration 1's value reaches the join first
            slow0_done.set()
        else:
            slow1_done.set()
        return f"slow{i}"

    def fast(i: int) -> str:
        if i == 0:
            assert slow0_started.wait(5)  # it wins iteration 0 while slow works on it
        else:
            assert slow0_done.wait(5)
            time.sleep(0.2)  # iteration 1's first value is slow's
        return f"fast{i}"

    def pick(d: dict[str, str]) -> int:
        seen.append(d)
        return int(next(iter(d.values()))[-1]) + 1

    f = (Formation("replicated_loser").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", slow, concurrency=2).add_function("fast", fast)
         .add_function("pick", pick, join="any").add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "slow", "pick").connect("fork", "fast", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0)
    assert seen == [{"fast": "fast0"}, {"slow": "slow1"}]
    assert result.output == 2


def test_join_any_in_a_loop_ignores_the_late_end_of_each_rounds_abandoned_loser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each round fires with fast while gate is still working: gate's attempt is abandoned
    # then (its round closes at once, a fresh replica takes the next round's visit), and
    # when the abandoned attempt returns its value is ignored: slow never runs, and pick
    # only ever sees fast. The pause after the join took round 0's last resolution checks
    # that closing a round does not lift the next round's cancellation.
    from wingman_actors.formation._join import ROUND_OVER
    from wingman_actors.formation._routing import Router

    calls = Calls()
    gate_started = [threading.Event(), threading.Event()]
    picked = [threading.Event(), threading.Event()]
    paused: list[bool] = []
    join = Router._join

    def slow_to_act(self: Router, run: Any, target: str, pred: str, value: Any, *rest: Any) -> Any:
        ready = join(self, run, target, pred, value, *rest)
        if any(v is ROUND_OVER for v in ready[0]) and not paused:
            paused.append(True)
            time.sleep(0.4)
        return ready

    monkeypatch.setattr(Router, "_join", slow_to_act)

    def gate(i: int) -> int:
        calls.record("gate", i)
        gate_started[i].set()
        assert picked[i].wait(5)  # the round fired without this branch while gate was working
        return i

    def slow(i: int) -> str:
        calls.record("slow", i)
        return f"slow{i}"

    def fast(i: int) -> str:
        assert gate_started[i].wait(5)
        return f"fast{i}"

    def pick(d: dict[str, str]) -> int:
        calls.record("pick", d)
        i = int(next(iter(d.values()))[-1])
        picked[i].set()
        return i + 1

    f = (Formation("late_close").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("gate", gate).add_function("slow", slow).add_function("fast", fast)
         .add_function("pick", pick, join="any").add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "gate", "slow", "pick").connect("fork", "fast", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0)
    assert paused and result.output == 2
    assert calls.seen["pick"] == [{"fast": "fast0"}, {"fast": "fast1"}]
    assert calls.seen["gate"] == [0, 1]  # each round's visit started on a fresh replica, and was abandoned
    assert "slow" not in calls.seen  # the abandoned attempts' values were ignored when they came
    assert result.nodes["gate"].status == "cancelled"


class _BelowALoser:
    """The nodes of the tests of a ``join="any"`` in a loop whose loser ``slow`` has two
    replicas, with ``relay`` below it: ``fast`` wins iteration 0 while ``slow`` works on it,
    and iteration 1's ``relay`` value (or skip) reaches the join before iteration 0's."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.slow0_started, self.relay1_done, self.slow0_done = threading.Event(), threading.Event(), threading.Event()

    def slow(self, i: int) -> int:
        if i == 0 and not self.slow0_done.is_set():  # (not again when a resume replays it)
            self.slow0_started.set()
            assert self.relay1_done.wait(5)
            time.sleep(0.2)  # iteration 1's value (or skip) reaches the join first
            self.slow0_done.set()
        return i

    def relay(self, i: int) -> str:
        if i == 1:
            self.relay1_done.set()
        return f"relay{i}"

    def fast(self, i: int) -> str:
        if i == 0:
            assert self.slow0_started.wait(5)  # it wins iteration 0 while slow works on it
        else:
            assert self.slow0_done.wait(5)
            time.sleep(0.2)
        return f"fast{i}"

    def pick(self, d: dict[str, str]) -> int:
        self.seen.append(d)
        return int(next(iter(d.values()))[-1]) + 1


@pytest.mark.parametrize("journalled", [False, True])
def test_join_any_in_a_loop_matches_values_below_a_replicated_loser_to_their_own_iteration(
    journalled: bool, tmp_path: Any,
) -> None:
    # As test_join_any_in_a_loop_matches_a_replicated_losers_values_to_their_own_iteration, with
    # the replicated node one step above the join's predecessor: ``relay`` had no visit of
    # iteration 0 in flight when ``fast`` won it (``slow``'s was), so its first value (of
    # iteration 1) looks like iteration 0's.
    n = _BelowALoser()
    f = (Formation("replicated_above").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", n.slow, concurrency=2).add_function("relay", n.relay)
         .add_function("fast", n.fast).add_function("pick", n.pick, join="any").add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "slow", "relay", "pick").connect("fork", "fast", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0, store=str(tmp_path / "runs.db")) if journalled else f.run(0)
    assert n.seen == [{"fast": "fast0"}, {"relay": "relay1"}]
    assert result.output == 2


def test_join_any_in_a_loop_matches_a_skip_below_a_replicated_loser_to_its_own_iteration() -> None:
    # As test_join_any_in_a_loop_matches_values_below_a_replicated_loser_to_their_own_iteration,
    # but ``relay``'s edge to the join does not fire in iteration 1: that skip must not close
    # iteration 0 (whose ``slow`` visit is still running, to be cancelled), or that visit runs
    # on and its value takes iteration 1.
    n = _BelowALoser()
    f = (Formation("replicated_skip").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", n.slow, concurrency=2).add_function("relay", n.relay)
         .add_function("aside", lambda s: s).add_function("fast", n.fast)
         .add_function("pick", n.pick, join="any").add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "slow", "relay").connect("fork", "fast", "pick")
         .connect("relay", "pick", when=lambda s: s != "relay1").connect("relay", "aside", otherwise=True)
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0)
    assert n.seen == [{"fast": "fast0"}, {"fast": "fast1"}]
    assert result.outputs["done"] == 2


def test_a_resumed_run_replays_a_join_any_in_a_loop_below_a_replicated_loser_round_by_round(tmp_path: Any) -> None:
    # The run of test_join_any_in_a_loop_matches_values_below_a_replicated_loser_to_their_own_iteration,
    # failing at its end: its resume replays the journalled visits (the values' rounds told
    # by where they came from, as when they ran) and runs only what failed.
    n = _BelowALoser()
    failing = [True]

    def done(i: int) -> int:
        if failing:
            raise RuntimeError("down")
        return i

    f = (Formation("replicated_resume").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", n.slow, concurrency=2).add_function("relay", n.relay)
         .add_function("fast", n.fast).add_function("pick", n.pick, join="any").add_function("done", done)
         .connect("start", "fork").connect("fork", "slow", "relay", "pick").connect("fork", "fast", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    store = str(tmp_path / "runs.db")
    with pytest.raises(FormationRuntimeError, match=r"down"):
        f.run(0, store=store, run_id="r1")
    failing.clear()
    result = f.resume("r1", store=store)
    assert n.seen == [{"fast": "fast0"}, {"relay": "relay1"}]  # pick's visits replayed, not run again
    assert result.output == 2
