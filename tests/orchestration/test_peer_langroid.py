"""Behaviours of Langroid's multi-agent and batch tests (langroid/langroid tests/main/test_task.py's
two-agent tests, test_multi_agent_complex.py, test_batch.py, test_batch_concurrency.py,
test_batch_cancellation.py), ported: a task with sub-tasks (our delegation through an
``AgentRegistry``), the sub-task's answer coming back to its parent, a sub-task that fails, a chain
of agents and a requestor/critic loop (formations of agent nodes, bounded by ``max_visits``), and
``run_batch_tasks`` (our ``Fleet``: results in input order, ``batch_size`` as ``max_workers``,
exceptions per item, cancellation). Models are played by the scripted provider."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import InFlight, local_ray, until  # noqa: F401  (local_ray: a fixture)
from wingman_actors import Agent, Fleet, Formation, Session, Task, ask_human, tool
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def delegate(*tasks: dict[str, Any], call_id: str = "d1") -> InferenceResponse:
    """A model answer calling ``delegate`` with these tasks."""
    return InferenceResponse.of_tool_calls([(call_id, "delegate", {"tasks": list(tasks)})])


def last_text(request: InferenceRequest) -> str:
    """The text of the last message of a request (a tool result's content included)."""
    message = request.messages[-1]
    return message.text or " ".join(str(b.content) for b in message.content if b.type == "tool_result")


def doubler(request: InferenceRequest) -> str:
    """Langroid's Polinsky agent's LLM: the double of the number in the last user message."""
    return str(2 * int(request.messages[-1].text))


# -- sub-tasks: delegation -----------------------------------------------------------------------


def test_a_sub_agents_answer_comes_back_to_the_requestor_which_answers_with_it() -> None:
    """From langroid tests/main/test_task.py::test_task_2_agent_tool (the requestor's LLM asks for the
    Polinsky transform, a sub-task's agent computes it, the result returns and 200 is in the answer)."""
    registry = AgentRegistry()
    registry.register(Agent("Polinsky", provider=ScriptedProvider([doubler])), description="Polinsky transforms.")
    model = ScriptedProvider([delegate({"agent": "Polinsky", "task": "100"}), lambda r: f"DONE {last_text(r)}"])
    result = Session(Agent("Requestor", provider=model, delegates=registry)).run("100")

    assert json.loads(result.tool_calls[0].output) == [{"agent": "Polinsky", "result": "200"}]
    assert "200" in result.response


def test_a_requestor_may_ask_the_sub_agent_again_after_a_wrong_answer() -> None:
    """From langroid tests/main/test_task.py::test_task_2_agent_tool (the Polinsky agent flips the
    sign on its first try; the requestor asks again until it gets a positive value)."""
    tries: list[int] = []

    def polinsky(request: InferenceRequest) -> str:
        tries.append(1)
        value = 2 * int(request.messages[-1].text)
        return str(-value if len(tries) == 1 else value)

    registry = AgentRegistry()
    registry.register(lambda: Agent("Polinsky", provider=ScriptedProvider([polinsky], cycle=True)), description="Polinsky.")

    def requestor(request: InferenceRequest) -> InferenceResponse | str:
        if not request.messages[-1].text:  # a tool result: read the sub-agent's answer
            value = int(json.loads(last_text(request))[0]["result"])
            if value < 0:
                return delegate({"agent": "Polinsky", "task": "100"}, call_id="d2")
            return f"DONE {value}"
        return delegate({"agent": "Polinsky", "task": "100"})

    result = Session(Agent("Requestor", provider=ScriptedProvider([requestor], cycle=True), delegates=registry)).run("100")

    assert [json.loads(c.output)[0]["result"] for c in result.tool_calls] == ["-200", "200"]
    assert result.response == "DONE 200" and len(tries) == 2


def test_sub_tasks_given_together_run_at_once_and_answer_in_task_order() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_responses (``add_sub_task([halve, increment,
    double])``: each sub-task handles its own tool). Ours: one ``delegate`` call with three tasks."""
    registry = AgentRegistry()
    ops: dict[str, Callable[[int], int]] = {"Halver": lambda n: n // 2, "Incrementer": lambda n: n + 1, "Doubler": lambda n: 2 * n}

    def answers(op: Callable[[int], int]) -> ScriptedProvider:
        return ScriptedProvider([lambda request: str(op(int(request.messages[-1].text)))])

    for name, op in ops.items():
        registry.register(Agent(name, provider=answers(op)), description=name)
    model = ScriptedProvider([delegate(*({"agent": n, "task": "16"} for n in ("Halver", "Incrementer", "Doubler"))), "done"])
    result = Session(Agent("Processor", provider=model, delegates=registry)).run("16")

    assert json.loads(result.tool_calls[0].output) == [
        {"agent": "Halver", "result": "8"}, {"agent": "Incrementer", "result": "17"}, {"agent": "Doubler", "result": "32"}]


def test_a_failing_sub_task_comes_back_as_an_error_entry_and_the_parent_goes_on() -> None:
    """From langroid tests/main/test_batch.py::test_task_gen_batch_exceptions (a sub-task's handler
    raises "disaster"; with exceptions handled the parent gets the error, not a crash)."""
    registry = AgentRegistry()
    registry.register(Agent("Computer", provider=ScriptedProvider([RuntimeError("disaster")])), description="Computes.")
    model = ScriptedProvider([delegate({"agent": "Computer", "task": "3"}), lambda r: f"gave up: {last_text(r)}"])
    result = Session(Agent("Lead", provider=model, delegates=registry)).run("3")

    [entry] = json.loads(result.tool_calls[0].output)
    assert entry["agent"] == "Computer" and "disaster" in entry["error"]
    assert result.response.startswith("gave up:")


def test_a_sub_task_naming_an_agent_nobody_registered_is_a_tool_error_listing_the_known_ones() -> None:
    """From langroid tests/main/test_multi_agent_complex.py::test_agents_with_recipient
    (``RecipientTool.create(recipients=["Master", "Multiplier"])`` constrains whom the planner may
    address). Ours: an unknown agent is a tool error listing the registered ones."""
    registry = AgentRegistry()
    registry.register(Agent("Critic", provider=ScriptedProvider(["fine"])), description="Critiques.")
    model = ScriptedProvider([delegate({"agent": "Nobody", "task": "x"}), "ok"])
    result = Session(Agent("Lead", provider=model, delegates=registry)).run("go")

    call = result.tool_calls[0]
    assert call.is_error and "Nobody" in call.output and "Critic" in call.output


def test_a_sub_task_sees_only_its_task_and_context_not_the_parents_conversation() -> None:
    """From langroid tests/main/test_task.py::test_task_2_agent_tool (the sub-task's LLM receives the
    number the parent passed on, in a conversation of its own)."""
    child = ScriptedProvider(["200"])
    registry = AgentRegistry()
    registry.register(Agent("Polinsky", provider=child), description="Polinsky.")
    model = ScriptedProvider([delegate({"agent": "Polinsky", "task": "100", "context": "Double it."}), "200"])
    Session(Agent("Requestor", provider=model, delegates=registry)).run("secret parent message")

    texts = [m.text for m in child.requests[0].messages]
    assert "secret parent message" not in " ".join(texts)
    assert "100" in texts[-1] and any("Double it." in t for t in texts)


def test_the_sub_agents_usage_is_summed_into_the_parents_result() -> None:
    """From langroid tests/main/test_task.py::test_task_cost (``max_cost``/``max_tokens`` account for
    the sub-task's LLM calls too)."""
    from wingman_actors.core import Usage

    registry = AgentRegistry()
    child = InferenceResponse.of_text("8", usage=Usage(input_tokens=5, output_tokens=1))
    registry.register(Agent("Sub", provider=ScriptedProvider([child])), description="Doubles.")
    plan = delegate({"agent": "Sub", "task": "4"})
    plan = plan.model_copy(update={"usage": Usage(input_tokens=10, output_tokens=2)})
    final = InferenceResponse.of_text("8", usage=Usage(input_tokens=20, output_tokens=1))
    result = Session(Agent("Test", provider=ScriptedProvider([plan, final]), delegates=registry)).run("4")

    assert (result.usage.input_tokens, result.usage.output_tokens) == (35, 4)


# -- chains and loops of agents: formations -------------------------------------------------------


def test_a_chain_of_agent_tasks_passes_each_answer_to_the_next() -> None:
    """From langroid tests/main/test_multi_agent_complex.py::test_agents_with_recipient (master ->
    planner -> multiplier, a task whose sub-task has a sub-task: each level hands on what it is given
    and the top gets the final value), as a chain of agent nodes."""
    chain = Formation("chain")
    chain.add_agent("inc", Agent("inc", provider=ScriptedProvider([lambda r: str(int(r.messages[-1].text) + 1)])))
    chain.add_agent("double", Agent("double", provider=ScriptedProvider([doubler])))
    chain.connect("inc", "double")

    assert chain.run("4").output == "10"


def test_a_requestor_and_critic_loop_ends_when_the_critic_says_correct() -> None:
    """From langroid tests/main/test_task.py::test_task_2_agent_2_tool (the requestor guesses the
    successor first, the critic says WRONG, the requestor guesses the double, the critic says
    CORRECT). Ours: two agent nodes in a loop through a conditional back edge."""
    guesses = iter(["101", "200"])
    requestor = Agent("Requestor", provider=ScriptedProvider([lambda r: next(guesses)], cycle=True))
    critic = Agent("Critic", provider=ScriptedProvider([lambda r: "WRONG" if r.messages[-1].text == "101" else "CORRECT"], cycle=True))
    seen: list[str] = []

    def verdict(answer: str) -> str:
        seen.append(answer)
        return answer

    loop = Formation("polinsky").add_function("start", lambda n: n).add_agent("requestor", requestor).add_agent("critic", critic).add_function("verdict", verdict)
    loop.add_function("done", lambda v: f"transform found after {len(seen)} guesses")
    loop.connect("start", "requestor").connect("requestor", "critic").connect("critic", "verdict")
    loop.connect("verdict", "requestor", when=lambda v: v == "WRONG")
    loop.connect("verdict", "done", when=lambda v: v == "CORRECT")
    result = loop.run("100")

    assert result.output == "transform found after 2 guesses"
    assert seen == ["WRONG", "CORRECT"] and result.nodes["requestor"].visits == 2


def test_a_loop_of_agents_that_never_agrees_stops_at_max_visits_with_an_error_naming_the_node() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_num (without a done signal the task runs
    until ``turns``) and TaskConfig ``inf_loop_cycle_len`` (an endless loop is detected). Ours:
    ``max_visits`` bounds the loop and fails the run naming the node."""
    model = ScriptedProvider(["WRONG"], cycle=True)
    loop = Formation("stuck").add_agent("critic", Agent("Critic", provider=model), max_visits=3)
    loop.add_function("done", lambda v: v)
    loop.connect("critic", "critic", when=lambda v: v == "WRONG").connect("critic", "done", when=lambda v: v != "WRONG")
    with pytest.raises(FormationRuntimeError, match="max_visits") as caught:
        loop.run("100")

    assert caught.value.node == "critic" and model.calls == 3


def test_an_agent_node_with_an_int_return_type_routes_by_the_number() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_responses (``processor_task[int]``: a typed
    task's value decides what happens next: even numbers are halved, odd ones doubled)."""
    graph = Formation("typed").add_agent("parse", Agent("parse", provider=ScriptedProvider(["16"]), output_schema=int))
    graph.add_function("halve", lambda n: n // 2).add_function("double", lambda n: 2 * n)
    graph.connect("parse", "halve", when=lambda n: n % 2 == 0).connect("parse", "double", when=lambda n: n % 2 == 1)
    result = graph.run("sixteen")

    assert result.outputs == {"halve": 8} and result.nodes["double"].status == "skipped"


# -- batch runs: fleets --------------------------------------------------------------------------


def test_a_batch_of_tasks_answers_in_input_order() -> None:
    """From langroid tests/main/test_batch.py::test_task_batch (``run_batch_tasks`` over 0..2 with
    ``input_map=str`` gives each input plus one, in order)."""
    agent = Agent("Test", provider=ScriptedProvider([lambda r: str(int(r.messages[-1].text) + 1)], cycle=True))
    results = Fleet(agent, [0, 1, 2], render=str).run()

    assert [(r.task_index, r.response) for r in results] == [(0, "1"), (1, "2"), (2, "3")]


@pytest.mark.parametrize("batch_size", [1, 2])
def test_a_batch_size_caps_how_many_tasks_run_at_once(batch_size: int) -> None:
    """From langroid tests/main/test_batch.py::test_batch_size_processing and
    test_batch_concurrency.py (``batch_size`` bounds the tasks in flight). Ours: ``max_workers``."""
    flight = InFlight()

    def answer(request: InferenceRequest) -> str:
        with flight:
            threading.Event().wait(0.02)
            return str(int(request.messages[-1].text) + 1)

    results = Fleet(Agent("Test", provider=ScriptedProvider([answer], cycle=True)), [str(i) for i in range(5)],
                    max_workers=batch_size).run()

    assert [r.response for r in results] == ["1", "2", "3", "4", "5"]
    assert flight.peak <= batch_size


def test_a_batch_runs_its_tasks_concurrently_when_not_sequential() -> None:
    """From langroid tests/main/test_batch_concurrency.py (``sequential=False`` runs the tasks at once:
    all are in flight together)."""
    flight = InFlight()
    all_in = threading.Event()

    def answer(request: InferenceRequest) -> str:
        with flight:
            if flight.now == 3:
                all_in.set()
            all_in.wait(5)
            return "ok"

    results = Fleet(Agent("Test", provider=ScriptedProvider([answer], cycle=True)), ["a", "b", "c"], max_workers=3).run()

    assert [r.response for r in results] == ["ok"] * 3 and flight.peak == 3


def test_a_failing_task_of_a_batch_keeps_its_exception_and_the_others_succeed() -> None:
    """From langroid tests/main/test_batch.py::test_task_gen_batch_exceptions
    (``ExceptionHandling.RETURN_EXCEPTION``: item 1 is its RuntimeError, the others succeed)."""

    def answer(request: InferenceRequest) -> str:
        if request.messages[-1].text == "1":
            raise RuntimeError("disaster")
        return "success"

    results = Fleet(Agent("Test", provider=ScriptedProvider([answer], cycle=True)), ["0", "1", "2"]).run()

    assert [r.ok for r in results] == [True, False, True]
    assert "disaster" in str(results[1].error) and results[1].response == ""
    assert [results[0].response, results[2].response] == ["success", "success"]


def test_a_batch_streamed_gives_the_fastest_task_first() -> None:
    """From langroid tests/main/test_batch.py::test_task_gen_batch (``stop_on_first_result``: the fastest
    task's answer is the first one there)."""
    slow_go = threading.Event()

    def answer(request: InferenceRequest) -> str:
        text = request.messages[-1].text
        if text != "fast":
            slow_go.wait(5)
        return text

    stream = Fleet(Agent("Test", provider=ScriptedProvider([answer], cycle=True)), ["slow", "fast", "slower"]).run_stream()
    first = next(iter(stream))
    slow_go.set()
    rest = sorted(r.response for r in stream)

    assert (first.task_index, first.response) == (1, "fast")
    assert rest == ["slow", "slower"]


def test_a_cancelled_batch_ends_its_running_tasks_and_every_task_has_a_result() -> None:
    """From langroid tests/main/test_batch_cancellation.py (cancelling a batch kills its running tasks;
    the batch returns instead of hanging)."""
    started = InFlight()
    release = threading.Event()

    @tool
    def work() -> str:
        """Work until released."""
        with started:
            release.wait(5)
        return "late"

    model = ScriptedProvider([InferenceResponse.of_tool_calls([("w", "work", {})])], cycle=True)
    fleet = Fleet(Agent("Test", provider=model, tools=[work]), ["a", "b"], max_workers=2)
    out: list[Any] = []
    runner = threading.Thread(target=lambda: out.extend(fleet.run()))
    runner.start()
    try:
        assert until(lambda: started.now == 2, within=10)
        fleet.cancel()
        runner.join(2)
        assert not runner.is_alive()  # the tools still wait: their calls were abandoned
    finally:
        release.set()
        runner.join(5)

    assert len(out) == 2 and all(not r.ok for r in out)


def test_batch_tasks_carry_their_own_data_through_to_the_results() -> None:
    """From langroid tests/main/test_batch.py::test_task_batch (``output_map`` turns each result
    with its input into the batch's answer). Ours: a ``Task``'s ``data`` comes back on its result."""
    agent = Agent("Test", provider=ScriptedProvider([lambda r: r.messages[-1].text.upper()], cycle=True))
    results = Fleet(agent, [Task("a", data={"id": 1}), Task("b", data={"id": 2})]).run()

    assert [(r.data, r.response) for r in results] == [({"id": 1}, "A"), ({"id": 2}, "B")]


def test_an_empty_batch_gives_an_empty_list() -> None:
    """From langroid tests/main/test_batch.py::test_run_batch_function (an empty input list gives [])."""
    model = ScriptedProvider(["never"])

    assert Fleet(Agent("Test", provider=model), []).run() == [] and model.calls == 0


def test_a_fleet_node_runs_a_batch_inside_a_formation_in_item_order() -> None:
    """From langroid tests/main/test_batch.py::test_task_batch (a batch of task clones over a list of
    inputs) as one step of a pipeline: a fleet node."""
    agent = Agent("Test", provider=ScriptedProvider([lambda r: str(int(r.messages[-1].text) + 1)], cycle=True))
    graph = Formation("batch").add_function("inputs", lambda n: [str(i) for i in range(n)])
    graph.add_fleet("increment", agent, max_workers=2).add_function("total", lambda xs: sum(int(x) for x in xs))
    graph.connect("inputs", "increment").connect("increment", "total")

    assert graph.run(4).output == 1 + 2 + 3 + 4


# -- a person in the loop, and Ray ----------------------------------------------------------------


def test_an_agent_node_that_asks_a_person_suspends_the_run_and_the_answer_resumes_it(tmp_path: Path) -> None:
    """From langroid tests/main/test_task.py::test_task_default_human_response (``interactive`` tasks
    ask the human; ``default_human_response`` answers for them). Ours: the ``ask_human`` tool
    suspends a journalled run, and ``resume(answer=...)`` gives the person's answer; the model call
    made before the question is not made again."""
    ask = InferenceResponse.of_tool_calls([("q1", "ask_human", {"question": "Which number?"})])
    model = ScriptedProvider([ask, lambda r: str(2 * int(last_text(r)))])

    def build() -> Formation:
        return Formation("human").add_agent("doubler", Agent("Test", provider=model, tools=[ask_human]))

    with RunStore(tmp_path / "runs.sqlite") as store:
        waiting = build().run("Double the user's number.", store=store)
        assert waiting.status == "suspended" and waiting.interrupt is not None
        assert waiting.interrupt["payload"] == {"question": "Which number?"}
        done = build().resume(waiting.run_id, store=store, answer="4")

    assert done.output == "8" and model.calls == 2


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_requestor_and_its_sub_agent_answer_the_same_on_ray_as_on_threads() -> None:
    """From langroid tests/main/test_task.py::test_task_2_agent_tool, on backend="ray": an agent node
    that delegates to a sub-agent gives the same answer and usage on Ray as on threads (the sub-agent
    registered as a factory, as the Ray backend asks of agents that hold a live provider)."""

    def build() -> Formation:
        registry = AgentRegistry()  # a factory: the sub-agent is built where the node runs
        registry.register(lambda: Agent("Polinsky", provider=ScriptedProvider([doubler])), name="Polinsky",
                          description="Polinsky transforms.")
        model = ScriptedProvider([delegate({"agent": "Polinsky", "task": "100"}), lambda r: f"DONE {last_text(r)}"])
        return Formation("polinsky").add_agent("requestor", Agent("Requestor", provider=model, delegates=registry))

    threads = build().run("100")
    on_ray = build().run("100", backend="ray", timeout=120)

    assert on_ray.output == threads.output and "200" in on_ray.output
    assert on_ray.usage == threads.usage


def test_an_agent_node_whose_tool_ends_the_task_is_not_retried_and_an_error_edge_can_take_its_result() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_responses (``IncrementTool.handle`` returns
    ``DoneTool(content=x + 1)``: the sub-task ends with that content, for its parent to use). Ours
    differs: a tool's end is a middleware ``Halt``, which fails the agent node without a retry (it is
    not retryable); an error edge hands the ``NodeFailure`` on, and its handler may make the
    halt's reason the run's output."""
    from wingman_actors.agents import Halt, Middleware, RunContext
    from wingman_actors.core import ContentBlock
    from wingman_actors.formation import NodeFailure

    class DoneAfterIncrement(Middleware):
        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            raise Halt(f"DONE {result.content}")

    @tool
    def increment(x: int) -> int:
        """Increment a number."""
        return x + 1

    model = ScriptedProvider([InferenceResponse.of_tool_calls([("i", "increment", {"x": 10})])], cycle=True)
    graph = Formation("done").add_agent("processor", Agent("Processor", provider=model, tools=[increment],
                                                           middleware=[DoneAfterIncrement()]), retries=2, backoff=0)

    def finish(failure: NodeFailure) -> str:
        assert isinstance(failure.error, Halt)
        return failure.error.reason.removeprefix("DONE ")

    graph.add_function("finish", finish).connect("processor", "finish", on_error=True)
    result = graph.run("10")

    # processor, whose only out-edge is an error edge, is a sink too (docs/formations.md), and finish
    # its alternative: the answer is the run's one output
    assert result.outputs == {"finish": "11"} and result.output == "11" and model.calls == 1
    assert result.nodes["processor"].status == "failed" and result.nodes["processor"].attempts == 1
