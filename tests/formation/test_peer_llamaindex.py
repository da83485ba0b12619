"""Behaviours ported from LlamaIndex Workflows' own test suite (run-llama/workflows-py,
``tests/test_workflow.py``, ``tests/test_streaming.py``, ``tests/context/test_context.py``
and ``tests/test_workflow_send_gather.py``): runs, steps, ``num_workers``, concurrent runs,
streaming and ``collect_events``. ``test_peer_llamaindex_more.py`` takes timeouts, retry
policies, human in the loop, checkpoints and ``backend="ray"``.

A Workflow is a class of ``@step`` methods that receive and emit typed events; here a step
is a node and the event it emits is its output, carried along its out-edges. A step
receiving ``StartEvent`` is a source (it gets the run's input); one returning
``StopEvent(result=...)`` is a sink (its output is the run's output). Routing an event to
one step of several (``ctx.send_event(ev, step=...)``, or the type of the event) is
``when=`` on the edges; ``ctx.collect_events(ev, [A, B])`` is a fan-in with ``join="all"``;
``ctx.send_event`` of many events to one step is a map node; ``num_workers`` on a step is a
map's ``max_workers``, or ``concurrency=`` for the runs of a started formation;
``ctx.write_event_to_stream`` is what an agent node streams (``agent_text``) and the
node events every run reports.

Deliberately different, or without a counterpart (each test that touches one says so):
- ``Context`` state shared by steps (``ctx.store``): nodes pass values; state that outlives
  a step or a run lives on a :class:`~wingman_actors.orchestration.Blackboard`.
- ``run(ctx=handler.ctx)`` continuing a finished run's context: a formation holds no state
  between runs; ``resume`` continues an unfinished run, ``fork`` replays a finished one.
- A step that raises ends a workflow with that exception (or ``WorkflowRuntimeError``);
  ours fails the run with a ``FormationRuntimeError`` naming the node, the exception
  chained as its cause.
- ``stream_events()`` consumed twice raises; our streams are generators: a second
  iteration of an exhausted one yields nothing, and each ``run_stream`` is its own run.
- Stepwise runs (``run(stepwise=True)``, ``run_step()``) have no counterpart: breakpoints
  (``break_after=``) stop a journalled run between nodes instead (test_peer_llamaindex_more.py).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.testing import ScriptedProvider


class InFlight:
    """How many calls are inside a node at once, and the most there ever were."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


def three_steps() -> Formation:
    """workflows' conftest DummyWorkflow: start_step → middle_step → end_step."""
    return (Formation("dummy").add_function("start_step", lambda x: f"{x}>start")
            .add_function("middle_step", lambda x: f"{x}>middle").add_function("end_step", lambda x: f"{x}>end")
            .connect("start_step", "middle_step", "end_step"))


def kinds(events: list[FormationEvent]) -> list[tuple[str, str | None]]:
    return [(str(e.type), e.node) for e in events]


# --- runs and steps -------------------------------------------------------------------


def test_a_run_returns_what_the_last_step_returns() -> None:
    # workflows test_workflow.py::test_workflow_run
    assert three_steps().run("go").output == "go>start>middle>end"


def test_steps_run_in_the_order_their_events_flow() -> None:
    # workflows test_workflow.py::test_workflow_event_propagation
    order = Order()
    three_steps().run("go", on_event=order)
    assert order.nodes == ["start_step", "middle_step", "end_step"]


def test_sync_and_async_steps_mix_in_one_run() -> None:
    # workflows test_workflow.py::test_workflow_sync_async_steps
    async def async_step(x: str) -> str:
        await asyncio.sleep(0.01)
        return f"{x}>async"

    f = (Formation("mixed").add_function("async_step", async_step).add_function("sync_step", lambda x: f"{x}>sync")
         .connect("async_step", "sync_step"))
    result = f.run("go")
    assert (result.status, result.output) == ("succeeded", "go>async>sync")


def test_an_event_routed_to_one_step_reaches_that_step_and_not_its_sibling() -> None:
    # workflows test_workflow.py::test_workflow_step_send_event (send_event(ev, step="step2"))
    counter = Counter()

    def step_n(name: str) -> Any:
        def run(ev: dict[str, str]) -> str:
            counter.hit(name)
            return name
        return run

    f = (Formation("send_to").add_function("step1", lambda x: {"to": "step2"})
         .add_function("step2", step_n("step2")).add_function("step3", step_n("step3"))
         .connect("step1", "step2", when=lambda ev: ev["to"] == "step2")
         .connect("step1", "step3", when=lambda ev: ev["to"] == "step3"))
    result = f.run(None)
    assert result.outputs == {"step2": "step2"}
    assert (counter.count("step2"), counter.count("step3")) == (1, 0)
    assert result.nodes["step3"].status == "skipped"


def test_a_step_that_raises_fails_the_run_naming_the_step_with_the_error_as_cause() -> None:
    # workflows test_workflow.py::test_workflow_task_raises. Differs by DESIGN: a
    # FormationRuntimeError naming the node, the ValueError chained as its cause.
    def step(x: Any) -> Any:
        raise ValueError("The step raised an error!")

    with pytest.raises(FormationRuntimeError, match=r"step") as info:
        Formation("raises").add_function("step", step).run(None)
    assert info.value.node == "step"
    assert isinstance(info.value.__cause__, ValueError)
    assert "The step raised an error!" in str(info.value)


def test_a_step_with_no_parameter_for_its_event_is_refused_at_setup() -> None:
    # workflows test_workflow.py::test_workflow_validation_start_event_not_consumed: a
    # workflow whose steps cannot take what starts it is a configuration error.
    f = Formation("invalid").add_function("a_step", lambda: "done")
    with pytest.raises(FormationSetupError, match=r"a_step"):
        f.validate()


def test_a_step_whose_output_type_does_not_fit_the_next_steps_parameter_is_refused_at_setup() -> None:
    # workflows test_workflow.py::test_workflow_validation_unconsumed_events (an event produced
    # that no step consumes): ours checks the types along each edge.
    def produce(x: str) -> int:
        return 1

    def consume(text: str) -> str:
        return text

    f = Formation("types").add_function("produce", produce).add_function("consume", consume)
    with pytest.raises(FormationSetupError, match=r"produce.*consume|consume.*produce"):
        f.connect("produce", "consume").validate()


def test_a_step_returning_what_the_next_step_cannot_take_fails_the_run_naming_the_edge() -> None:
    # workflows test_workflow.py::test_workflow_step_returning_bogus ("Step function step1
    # returned str instead of an Event instance")
    def step1(x: int) -> int:
        return "foo"  # type: ignore[return-value]

    def step2(n: int) -> int:
        return n

    f = Formation("bogus").add_function("step1", step1).add_function("step2", step2).connect("step1", "step2")
    with pytest.raises(FormationRuntimeError, match=r"edge 'step1' → 'step2': a value of type str does not fit"):
        f.run(1)


def test_a_steps_llamaindex_options_spelt_as_policies_are_refused_naming_ours() -> None:
    # workflows test_workflow.py::test_workflow_num_workers and test_retry_policy.py:
    # @step(num_workers=3, retry_policy=ConstantDelayRetryPolicy(maximum_attempts=3, delay=5))
    with pytest.raises(FormationSetupError) as info:
        Formation("options").add_function("step", lambda x: x, num_workers=3, retry_policy=None,
                                          maximum_attempts=3, delay=5)
    text = str(info.value)
    assert "num_workers" in text and "concurrency=3" in text and "max_workers=" in text
    assert "maximum_attempts" in text and "retries=2" in text
    assert "delay" in text and "backoff=5" in text and "max_backoff=5" in text
    assert "retry_policy" in text and "retries=, backoff=" in text
    assert "did you mean 'retry_on'" not in text  # a retry policy is not an error filter


# --- several runs at once -------------------------------------------------------------


def test_runs_awaited_together_each_get_their_own_result() -> None:
    # workflows test_workflow.py::test_workflow_multiple_runs (asyncio.gather of three runs)
    f = Formation("double").add_function("step", lambda n: n * 2)

    async def main() -> list[int]:
        results = await asyncio.gather(f.arun(3), f.arun(42), f.arun(-99))
        return [r.output for r in results]

    assert asyncio.run(main()) == [6, 84, -198]


def test_runs_submitted_together_to_one_started_formation_each_get_their_own_result() -> None:
    # workflows test_workflow.py::test_workflow_multiple_runs, on one started formation
    async def step(n: int) -> int:
        await asyncio.sleep(0.05)
        return n * 2

    async def main() -> list[int]:
        async with Formation("double").add_function("step", step, concurrency=3).astart() as running:
            results = await asyncio.gather(*(running.asubmit(n) for n in (3, 42, -99)))
        return [r.output for r in results]

    assert asyncio.run(main()) == [6, 84, -198]


def test_a_step_with_concurrency_one_serves_concurrent_runs_one_at_a_time() -> None:
    # workflows test_workflow.py::test_workflow_run_num_concurrent (num_concurrent_runs=1)
    inside = InFlight()

    def step_one(n: int) -> str:
        with inside:
            time.sleep(0.05)
        return f"Run {n}: Done"

    with Formation("one_at_a_time").add_function("step_one", step_one, concurrency=1).start() as running:
        futures = [running.submit(n) for n in range(1, 5)]
        results = [fut.result(timeout=10).output for fut in futures]
    assert results == [f"Run {n}: Done" for n in range(1, 5)]
    assert inside.most == 1


def test_a_step_with_concurrency_three_serves_three_runs_at_once() -> None:
    # workflows test_workflow.py::test_workflow_num_workers (num_workers=3: three 1 s steps
    # take about 1 s), with the runs of a started formation as the three events
    inside = InFlight()
    all_in = threading.Barrier(3, timeout=5)

    def test_step(n: int) -> int:
        with inside:
            all_in.wait()  # only passes when three calls are inside at once
        return n

    with Formation("workers").add_function("test_step", test_step, concurrency=3).start() as running:
        futures = [running.submit(n) for n in range(3)]
        assert [fut.result(timeout=10).output for fut in futures] == [0, 1, 2]
    assert inside.most == 3


def test_an_async_step_of_concurrency_one_awaits_many_runs_at_once_and_a_semaphore_limits_them() -> None:
    # workflows test_workflow.py::test_workflow_run_num_concurrent (num_concurrent_runs=1).
    # Differs on purpose (docs/async.md, "Many runs through one async node"): one replica of
    # an async def node awaits many visits at once; a semaphore in the function limits calls.
    inside, limited = InFlight(), InFlight()
    semaphore: asyncio.Semaphore | None = None

    async def step_one(n: int) -> str:
        nonlocal semaphore
        with inside:
            await asyncio.sleep(0.05)
        semaphore = semaphore or asyncio.Semaphore(1)  # made on the replica's loop, at its first call
        async with semaphore:
            with limited:
                await asyncio.sleep(0.01)
        return f"Run {n}: Done"

    with Formation("awaits").add_function("step_one", step_one, concurrency=1).start() as running:
        futures = [running.submit(n) for n in range(1, 5)]
        assert [fut.result(timeout=10).output for fut in futures] == [f"Run {n}: Done" for n in range(1, 5)]
    assert (inside.most, limited.most) == (4, 1)


def test_a_map_with_three_workers_runs_at_most_three_items_at_once_and_keeps_item_order() -> None:
    # workflows test_workflow.py::test_workflow_num_workers (three events sent to a step of
    # num_workers=3 within one run, collected by the next step)
    inside = InFlight()

    def test_step(param: str) -> str:
        with inside:
            time.sleep(0.05)
        return param.upper()

    f = (Formation("num_workers").add_function("original_step", lambda n: [f"test{i}" for i in range(1, n + 1)])
         .add_map("test_step", test_step, max_workers=3).add_function("final_step", lambda items: items)
         .connect("original_step", "test_step", "final_step"))
    result = f.run(7)
    assert result.output == [f"TEST{i}" for i in range(1, 8)]
    assert inside.most == 3


def test_events_sent_to_a_step_many_times_are_gathered_into_one_summary() -> None:
    # workflows test_workflow_send_gather.py::test_dispatch_receive (send_events, then
    # receive_events until every one has come back)
    emails = {f"{name}@example.com": "hi" for name in
              ("john", "johanna", "mario", "alice", "bob", "charlie", "david", "eve", "frank", "grace",
               "heidi", "ivan", "judy", "kevin", "liam", "mia", "noah", "olivia", "peter", "quinn")}

    def process_email(contact: str) -> bool:
        return not contact.startswith("j")

    def output(sent: list[bool]) -> str:
        return f"Sent {sum(sent)} emails; {len(sent) - sum(sent)} failed"

    f = (Formation("emails").add_function("collect_contacts", lambda e: sorted(e))
         .add_map("process_email", process_email, max_workers=4).add_function("output", output)
         .connect("collect_contacts", "process_email", "output"))
    assert f.run(emails).output == "Sent 17 emails; 3 failed"


# --- collect_events: fan-in -----------------------------------------------------------


def test_a_step_collecting_two_events_gets_both_keyed_in_declaration_order() -> None:
    # workflows tests/context/test_context.py::test_collect_events (result == [ev1, ev2]
    # whichever arrives first); ours: a dict by predecessor, in the order of the edges
    def step1(_: Any) -> str:
        time.sleep(0.1)  # arrives second
        return "ev1"

    f = (Formation("collect").add_function("step1", step1).add_function("step2", lambda _: "ev2")
         .add_function("step3", lambda events: events).connect("step1", "step3").connect("step2", "step3"))
    result = f.run(None)
    assert result.output == {"step1": "ev1", "step2": "ev2"}
    assert list(result.output) == ["step1", "step2"]


def test_a_collecting_step_with_keyword_parameters_gets_each_event_by_name() -> None:
    # workflows test_context.py::test_collect_events, with the step's parameters named after
    # the steps it collects from
    def step3(step1: str, step2: str) -> list[str]:
        return [step1, step2]

    f = (Formation("collect_kw").add_function("step1", lambda _: "ev1").add_function("step2", lambda _: "ev2")
         .add_function("step3", step3).connect("step1", "step3").connect("step2", "step3"))
    assert f.run(None).output == ["ev1", "ev2"]


# --- state ----------------------------------------------------------------------------


def test_runs_are_independent_unless_they_share_a_blackboard() -> None:
    # workflows test_workflow.py::test_workflow_continue_context. Differs by DESIGN: no
    # Context outlives a run; a Blackboard passed to runs is their shared state.
    def step(_: Any, blackboard: Blackboard | None = None) -> int:
        board = blackboard if blackboard is not None else Blackboard()
        board.set("number", board.get("number", 0) + 1)
        return int(board.get("number"))

    f = Formation("continue").add_function("step", step)
    assert [f.run(None).output, f.run(None).output] == [1, 1]
    board = Blackboard()
    assert [f.run(None, blackboard=board).output, f.run(None, blackboard=board).output] == [1, 2]
    assert board.get("number") == 2


def test_a_blackboard_key_that_was_never_set_gives_the_default() -> None:
    # workflows tests/context/test_context.py::test_get_default
    f = Formation("default").add_function("step", lambda _, blackboard: blackboard.get("test_key", 42))
    assert f.run(None, blackboard=Blackboard()).output == 42


# --- streaming ------------------------------------------------------------------------


def test_an_agent_steps_text_streams_before_the_step_finishes_and_adds_up_to_its_answer() -> None:
    # workflows test_streaming.py::test_e2e (ctx.write_event_to_stream of each word)
    answer = "Paul Graham is a British-American computer scientist, entrepreneur, vc, and writer."
    f = Formation("chat").add_agent("chat", Agent("chat", provider=ScriptedProvider([answer], stream_chunk=5)))
    events = list(f.run_stream("Who is Paul Graham?"))
    texts = [e for e in events if e.type == "agent_text"]
    assert len(texts) > 1
    assert "".join(e.data["text"] for e in texts) == answer
    finished = next(i for i, e in enumerate(events) if e.type == "node_finished")
    assert all(events.index(e) < finished for e in texts)
    assert events[-1].data["result"].output == answer


def test_a_stream_ends_with_run_failed_when_a_step_raises_after_streaming() -> None:
    # workflows test_streaming.py::test_task_raised (the stream must not block; the error
    # reaches the caller)
    def step(x: Any) -> Any:
        raise ValueError("The step raised an error!")

    f = Formation("raised").add_function("first", lambda x: x).add_function("step", step).connect("first", "step")
    events = list(f.run_stream("go"))
    assert kinds(events)[:3] == [("run_started", None), ("node_started", "first"), ("node_finished", "first")]
    assert events[-1].type == "run_failed"
    assert "The step raised an error!" in str(events[-1].data["error"])


def test_a_failed_runs_last_event_names_the_steps_it_cut_short(gate: tuple[threading.Event, threading.Event]) -> None:
    # workflows test_streaming.py::test_task_raised, with a sibling step still running when
    # the other raises: the stream's consumer learns it will not finish (as run_cancelled's
    # ``unfinished`` says for a cancel)
    entered, release = gate

    def slow(x: Any) -> Any:
        entered.set()
        release.wait(10)
        return x

    def step(x: Any) -> Any:
        assert entered.wait(5)
        raise ValueError("The step raised an error!")

    events = list(Formation("cut").add_function("slow", slow).add_function("step", step).run_stream("go"))
    assert events[-1].type == "run_failed"
    assert events[-1].data["unfinished"] == ["slow"]


def test_a_stream_ends_with_run_failed_in_time_when_the_run_times_out() -> None:
    # workflows test_streaming.py::test_task_timeout
    async def step(x: Any) -> Any:
        await asyncio.sleep(5)
        return x

    t0 = time.monotonic()
    events = list(Formation("timeout").add_function("step", step).run_stream("go", timeout=0.3))
    assert time.monotonic() - t0 < 1.5
    assert events[-1].type == "run_failed"
    assert "timed out" in str(events[-1].data["error"])


def test_a_stream_run_again_is_a_new_run_with_all_its_events() -> None:
    # workflows test_streaming.py::test_multiple_sequential_streams
    f = three_steps()
    first, second = list(f.run_stream("a")), list(f.run_stream("b"))
    assert kinds(first) == kinds(second)
    assert first[0].run_id != second[0].run_id
    assert (first[-1].data["result"].output, second[-1].data["result"].output) == ("a>start>middle>end",
                                                                                  "b>start>middle>end")


def test_two_streams_open_at_once_each_get_exactly_their_own_runs_events() -> None:
    # workflows test_streaming.py::test_multiple_ongoing_streams
    f = three_steps()
    one, two = f.run_stream("a"), f.run_stream("b")
    first, second = [next(one)], [next(two)]
    first += list(one)
    second += list(two)
    for events, value in ((first, "a"), (second, "b")):
        assert len({e.run_id for e in events}) == 1
        assert kinds(events) == [("run_started", None)] + [
            (k, n) for n in ("start_step", "middle_step", "end_step") for k in ("node_started", "node_finished")
        ] + [("run_finished", None)]
        assert events[-1].data["result"].output == f"{value}>start>middle>end"
    assert first[0].run_id != second[0].run_id


def test_an_async_stream_ends_soon_after_the_last_step() -> None:
    # workflows test_workflow.py::test_workflow_stream_events_exits (wait_for(..., 1))
    async def main() -> list[FormationEvent]:
        async def collect() -> list[FormationEvent]:
            return [e async for e in three_steps().astream("go")]
        return await asyncio.wait_for(collect(), timeout=5)

    events = asyncio.run(main())
    assert events[-1].type == "run_finished"
    assert events[-1].data["result"].output == "go>start>middle>end"


def test_an_async_stream_does_not_block_the_event_loop_while_a_sync_step_works() -> None:
    # workflows test_streaming.py::test_e2e, async: events are awaited, not waited for
    def slow(x: Any) -> Any:
        time.sleep(0.4)
        return x

    async def main() -> tuple[int, list[FormationEvent]]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        ticker = asyncio.create_task(tick())
        events = [e async for e in Formation("slow").add_function("slow", slow).astream("go")]
        ticker.cancel()
        return ticks, events

    ticks, events = asyncio.run(main())
    assert ticks >= 8
    assert events[-1].type == "run_finished"


def test_every_run_through_a_started_formation_reports_each_of_its_events_once() -> None:
    # workflows test_workflow.py::test_workflow_multiple_runs with streaming
    # (test_streaming.py::test_multiple_ongoing_streams): per run, complete and in order
    events: list[FormationEvent] = []
    lock = threading.Lock()

    def listen(e: FormationEvent) -> None:
        with lock:
            events.append(e)

    with three_steps().start(on_event=listen) as running:
        futures = [running.submit(str(i)) for i in range(6)]
        ids = [fut.result(timeout=10).run_id for fut in futures]
    for run_id in ids:
        mine = [e for e in events if e.run_id == run_id]
        assert kinds(mine) == [("run_started", None)] + [
            (k, n) for n in ("start_step", "middle_step", "end_step") for k in ("node_started", "node_finished")
        ] + [("run_finished", None)]


def test_a_started_branch_a_join_any_fires_without_is_reported_cancelled_once_before_the_run_finishes(
        gate: tuple[threading.Event, threading.Event]) -> None:
    # workflows test_streaming.py::test_e2e with a step LlamaIndex would leave running (its
    # event never collected): every node_started is followed by an event that ends it. DESIGN:
    # node_skipped with cancelled=True for a node whose trace says cancelled.
    entered, release = gate
    left = threading.Event()

    def slow(x: str) -> str:
        entered.set()
        release.wait(10)
        left.set()
        return "B"

    def fast(x: str) -> str:
        assert entered.wait(5)  # B is surely running when A wins
        return "A"

    f = (Formation("race").add_function("A", fast).add_function("B", slow).add_function("C", lambda d: d, join="any")
         .connect("A", "C").connect("B", "C"))
    events: list[FormationEvent] = []
    with f.start(on_event=events.append) as running:
        result = running.submit("go").result(timeout=10)
        finished = len(events)
        release.set()
        assert left.wait(5)
    assert result.output == {"A": "A"}
    assert result.nodes["B"].status == "cancelled"
    b = [e for e in events if e.node == "B"]
    assert [str(e.type) for e in b] == ["node_started", "node_skipped"]
    assert b[1].data["cancelled"] is True
    assert events.index(b[1]) < finished - 1 and events[finished - 1].type == "run_finished"
