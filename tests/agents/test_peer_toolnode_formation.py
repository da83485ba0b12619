"""LangGraph's create_react_agent tests about interrupts before tools and an agent inside a
bigger graph (libs/prebuilt/tests/test_react_agent.py, test_tool_node.py,
test_interrupt_tool_node.py), and smolagents' managed-agent runs, ported to our
sessions with a store and to agent (and fleet) nodes of a formation, on the threads
backend and, for a few, on Ray. The models are played by the scripted provider."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from tests.support.postgres import postgres_server, postgres_url  # noqa: F401  (fixtures)
from wingman_actors import Agent, Formation, Session, interrupt, tool
from wingman_actors.agents import Middleware, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Usage
from wingman_actors.errors import FormationRuntimeError, NoStoreError
from wingman_actors.orchestration import Blackboard, blackboard_tools
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def calls(*specs: tuple[str, str, dict[str, Any]], usage: Usage | None = None) -> InferenceResponse:
    response = InferenceResponse.of_tool_calls(list(specs))
    return response.model_copy(update={"usage": usage}) if usage is not None else response


RAN = Counter()


@tool
def book_hotel(hotel: str) -> str:
    """Book a hotel."""
    RAN.hit(("book_hotel", hotel))
    return f"Successfully booked a stay at {hotel}."


class ApproveTools(Middleware):
    """LangGraph's interrupt_before=["tools"]: ask a person before each tool call; a "no"
    answers the call without running it."""

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        verdict = interrupt({"tool": call.name, "input": call.input})
        if verdict == "yes":
            return None
        if isinstance(verdict, dict) and "edit" in verdict:  # run the call with the person's arguments
            return call.model_copy(update={"input": verdict["edit"]})
        return ContentBlock.tool_result_block(call.id or "", f"Error: the user refused ({verdict})", is_error=True)


def hotel_script() -> ScriptedProvider:
    return ScriptedProvider([calls(("h1", "book_hotel", {"hotel": "McKittrick"})),
                             lambda r: f"done: {r.messages[-1].content[0].content}"])


# -- interrupts before tools: a session with a store -----------------------------------


def test_an_interrupt_before_a_tool_suspends_the_session_and_yes_runs_the_tool_without_a_second_model_call(
    store: RunStore,
) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_surfaced."""
    provider = hotel_script()
    session = Session(Agent("hotel", provider=provider, tools=[book_hotel], middleware=[ApproveTools()]), store=store)
    before = RAN.count(("book_hotel", "McKittrick"))

    paused = session.run("book a stay at McKittrick hotel")
    assert (paused.status, paused.interrupt) == ("suspended", {"tool": "book_hotel", "input": {"hotel": "McKittrick"}})
    assert RAN.count(("book_hotel", "McKittrick")) == before

    done = session.resume(session.id, answer="yes")
    assert done.response == "done: Successfully booked a stay at McKittrick."
    assert provider.calls == 2 and RAN.count(("book_hotel", "McKittrick")) == before + 1


def test_a_refusal_before_a_tool_answers_the_call_without_running_it_and_the_model_sees_why(store: RunStore) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_resume_variants
    (the "ignore" answer: the call is answered without running the tool)."""
    provider = hotel_script()
    session = Session(Agent("hotel", provider=provider, tools=[book_hotel], middleware=[ApproveTools()]), store=store)
    before = RAN.count(("book_hotel", "McKittrick"))
    session.run("book")
    done = session.resume(session.id, answer="too expensive")
    assert done.response == "done: Error: the user refused (too expensive)"
    assert done.tool_calls[0].is_error and RAN.count(("book_hotel", "McKittrick")) == before


def test_an_edit_answered_before_a_tool_runs_it_with_the_edited_arguments(store: RunStore) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_resume_variants
    (the "edit" answer: the tool runs with the arguments the person gave)."""
    provider = hotel_script()
    session = Session(Agent("hotel", provider=provider, tools=[reserve], middleware=[ApproveTools()]), store=store)
    session.run("book")
    done = session.resume(session.id, answer={"edit": {"hotel": "Ritz"}})
    assert done.response == "done: Successfully booked a stay at Ritz."
    assert done.tool_calls[0].input == {"hotel": "Ritz"} and provider.calls == 2


def test_an_awaited_session_suspends_before_a_tool_and_aresume_finishes_it(store: RunStore) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_surfaced (awaited)."""
    provider = hotel_script()
    session = Session(Agent("hotel", provider=provider, tools=[book_hotel], middleware=[ApproveTools()]), store=store)

    async def main() -> tuple[Any, Any]:
        paused = await session.arun("book")
        return paused, await session.aresume(session.id, answer="yes")

    paused, done = asyncio.run(main())
    assert paused.status == "suspended" and done.response.startswith("done: Successfully booked")
    assert provider.calls == 2


def test_a_tool_that_interrupts_beside_another_in_one_step_resumes_with_both_results(store: RunStore) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    (one of a step's parallel tool calls interrupts). Per DESIGN, tools before the interrupt run again
    on resume; the model is not called again."""
    runs = Counter()

    @tool
    def plain(n: int) -> str:
        """A tool that just answers."""
        runs.hit("plain")
        return f"plain {n}"

    @tool
    def ask(question: str) -> str:
        """Ask a person."""
        return f"answer: {interrupt(question)}"

    provider = ScriptedProvider([calls(("c1", "plain", {"n": 1}), ("c2", "ask", {"question": "colour?"})),
                                 lambda r: " | ".join(b.content or "" for b in r.messages[-1].tool_results_blocks)])
    session = Session(Agent("a", provider=provider, tools=[plain, ask]), store=store)
    paused = session.run("go")
    assert paused.interrupt == "colour?"
    done = session.resume(session.id, answer="teal")
    assert done.response == "plain 1 | answer: teal"
    assert provider.calls == 2 and 1 <= runs.count("plain") <= 2


# -- an agent node inside a formation ---------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


def weather_agent(provider: ScriptedProvider, **kwargs: Any) -> Agent:
    return Agent("weather", provider=provider, tools=[get_weather], **kwargs)


def test_an_agent_node_runs_its_tool_loop_and_hands_its_answer_on_with_its_usage_traced() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_subgraph
    (a react agent used as a node of a bigger graph)."""
    provider = ScriptedProvider([
        calls(("c1", "get_weather", {"city": "Atlantis"}), usage=Usage(input_tokens=10, output_tokens=2)),
        calls(("c2", "get_weather", {"city": "SF"}), usage=Usage(input_tokens=20, output_tokens=3)),
        InferenceResponse.of_text("It is sunny in SF.", usage=Usage(input_tokens=30, output_tokens=4))])
    f = (Formation("w").add_agent("weather", weather_agent(provider), prompt="Weather in {input}?")
         .add_function("shout", str.upper).connect("weather", "shout"))
    result = f.run("SF")

    assert result.output == "IT IS SUNNY IN SF."
    assert provider.requests[0].messages[0].text == "Weather in SF?"
    assert provider.requests[1].messages[-1].content[0].is_error  # the tool error went back to the model
    node = result.nodes["weather"]
    assert (node.usage.input_tokens, node.usage.output_tokens) == (60, 9)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (60, 9)


class Forecast(BaseModel):
    city: str
    sunny: bool


def test_an_agent_nodes_structured_response_reaches_the_next_node_as_the_object() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_with_structured_response
    (structured_response in the graph's state)."""
    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "SF"})), '{"city": "SF", "sunny": true}'])
    f = (Formation("w").add_agent("weather", weather_agent(provider, output_schema=Forecast))
         .add_function("verdict", lambda fc: f"{fc.city}: {'go out' if fc.sunny else 'stay in'}")
         .connect("weather", "verdict"))
    assert f.run("SF").output == "SF: go out"


def test_an_agent_node_awaited_with_arun_awaits_its_async_tools() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_prompt_with_store_async
    (ainvoke of the agent graph with async tools)."""

    @tool
    async def aweather(city: str) -> str:
        """The weather, asynchronously."""
        await asyncio.sleep(0.01)
        return f"async sunny in {city}"

    provider = ScriptedProvider([calls(("c1", "aweather", {"city": "SF"})), lambda r: r.messages[-1].content[0].content])
    f = Formation("w").add_agent("weather", Agent("weather", provider=provider, tools=[aweather]))
    assert asyncio.run(f.arun("SF")).output == "async sunny in SF"


def test_an_agent_node_suspends_before_its_tool_and_resumes_without_a_second_first_call(store: RunStore) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_surfaced
    (the agent inside a checkpointed graph)."""
    provider = hotel_script()
    agent = Agent("hotel", provider=provider, tools=[book_hotel], middleware=[ApproveTools()])
    f = Formation("trip").add_agent("hotel", agent).add_function("receipt", lambda s: f"receipt: {s}").connect(
        "hotel", "receipt")
    paused = f.run("book McKittrick", store=store)
    assert paused.status == "suspended"
    assert paused.interrupt == {"node": "hotel", "payload": {"tool": "book_hotel", "input": {"hotel": "McKittrick"}}}

    done = f.resume(paused.run_id, store=store, answer="yes")
    assert done.output == "receipt: done: Successfully booked a stay at McKittrick."
    assert provider.calls == 2


def test_a_fleet_node_runs_each_items_tool_loop_and_keeps_item_order() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_multiagents (several managed agents
    at work at once), as a fleet node."""
    provider = ScriptedProvider([
        lambda r: calls(("c", "get_weather", {"city": r.messages[0].text or ""}))
        if len(r.messages) == 1 else (r.messages[-1].content[0].content or "")], cycle=True)
    f = Formation("w").add_fleet("weather", Agent("weather", provider=provider, tools=[get_weather]), max_workers=2)
    assert f.run(["SF", "Oslo", "Rome"]).output == ["sunny in SF", "sunny in Oslo", "sunny in Rome"]
    assert provider.calls == 6


def test_an_agent_node_whose_tool_hangs_fails_the_run_at_the_node_timeout() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node_mcp_timeout.py (a tool that
    never returns does not hang the graph)."""

    @tool
    async def hang() -> str:
        """Never returns in time."""
        await asyncio.sleep(3)
        return "late"

    provider = ScriptedProvider([calls(("c1", "hang", {})), "never"])
    f = Formation("h").add_agent("slow", Agent("slow", provider=provider, tools=[hang]), timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(FormationRuntimeError, match="slow") as caught:
        f.run("go")
    assert time.perf_counter() - started < 2.0  # the limit (0.3 s) plus grace, not the tool's 3 s
    assert caught.value.node == "slow"


# -- backend="ray" ----------------------------------------------------------------------


@tool(name="book_hotel")
def reserve(hotel: str) -> str:
    """Book a hotel (nothing live in it: a Ray actor gets a copy)."""
    return f"Successfully booked a stay at {hotel}."


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_node_with_tools_on_ray_gives_the_threads_answer() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_subgraph on backend="ray"."""

    def build() -> Formation:
        provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "SF"})),
                                     lambda r: f"report: {r.messages[-1].content[0].content}"])
        return Formation("w").add_agent("weather", weather_agent(provider))

    threads = build().run("SF")
    on_ray = build().run("SF", backend="ray", timeout=120)
    assert on_ray.output == threads.output == "report: sunny in SF"
    assert on_ray.nodes["weather"].status == threads.nodes["weather"].status


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_node_on_ray_suspends_before_its_tool_and_resumes_without_repeating_the_first_call(
    store: RunStore,
) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_surfaced
    on backend="ray". Each Ray actor answers from its own copy of the script, so the model
    is played by a reply that reads the conversation, not by its place in the script."""

    def hotel_model(request: InferenceRequest) -> Any:
        last = request.messages[-1].content[0]
        if last.type == "tool_result":
            return f"done: {last.content}"
        return calls(("h1", "book_hotel", {"hotel": "McKittrick"}))

    provider = ScriptedProvider([hotel_model], cycle=True)
    f = Formation("trip").add_agent(
        "hotel", Agent("hotel", provider=provider, tools=[reserve], middleware=[ApproveTools()]))
    paused = f.run("book", store=store, backend="ray", timeout=120)
    assert paused.interrupt == {"node": "hotel", "payload": {"tool": "book_hotel", "input": {"hotel": "McKittrick"}}}
    done = f.resume(paused.run_id, store=store, answer="yes", backend="ray", timeout=120)
    assert done.output == "done: Successfully booked a stay at McKittrick."
    assert provider.calls == 2  # one call before the interrupt, one after: the first was not repeated


def test_an_interrupt_before_a_tool_in_a_session_without_a_store_fails_the_run_saying_to_give_one() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_surfaced
    (an interrupt needs a checkpointer: without one the graph raises). A tool's own interrupt() without a
    store differs: it reaches the model as an error result (tests/agents/test_waiting.py)."""
    provider = hotel_script()
    session = Session(Agent("hotel", provider=provider, tools=[book_hotel], middleware=[ApproveTools()]))
    with pytest.raises(NoStoreError, match=r"needs a journalled .*store"):
        session.run("book")
    assert provider.calls == 1
    assert session.history[-1].tool_results_blocks[0].is_error  # the call is closed: the session goes on


# -- injected store and subgraph tools --------------------------------------------------


def test_agent_nodes_share_the_runs_blackboard_through_their_tools() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_inject_store
    (tools read and write the graph's store; ours: the run's blackboard)."""
    writer = ScriptedProvider([calls(("s1", "team_state_set", {"key": "plan", "value": "fly"})), "stored"])
    reader = ScriptedProvider([calls(("g1", "team_state_get", {"key": "plan"})),
                               lambda r: f"the plan: {r.messages[-1].content[0].content}"])
    f = (Formation("team").add_agent("writer", Agent("writer", provider=writer, tools=blackboard_tools("team")))
         .add_agent("reader", Agent("reader", provider=reader, tools=blackboard_tools("team")))
         .connect("writer", "reader"))
    board = Blackboard()
    assert f.run("go", blackboard=board).output == 'the plan: "fly"'
    assert board.get("plan") == "fly"


inner = Formation("inner").add_function("double", lambda x: x * 2).add_function("inc", lambda x: x + 1).connect(
    "double", "inc")


@tool
def pipeline(x: int) -> int:
    """Run the inner pipeline."""
    return int(inner.run(x).output)


@tool
async def apipeline(x: int) -> int:
    """Run the inner pipeline, awaited."""
    return int((await inner.arun(x)).output)


@pytest.mark.parametrize("name", ["pipeline", "apipeline"])
def test_a_tool_that_runs_a_formation_works_inside_an_agent_node_run_and_awaited(name: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_with_subgraph_tools
    (a tool that invokes a compiled graph, inside an agent graph)."""

    def build() -> Formation:
        provider = ScriptedProvider([calls(("c1", name, {"x": 5})), lambda r: f"got {r.messages[-1].content[0].content}"])
        return Formation("outer").add_agent("a", Agent("a", provider=provider, tools=[pipeline, apipeline]))

    assert build().run("go").output == "got 11"
    assert asyncio.run(build().arun("go")).output == "got 11"


def test_fleet_items_that_ask_before_their_tools_are_answered_one_at_a_time_and_the_others_run_once(
    store: RunStore,
) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    with interrupt_before=["tools"] (version="v2": one Send per tool call, each interrupting).
    Ours: the item with the lowest index is asked first; an item that did not ask is
    journalled and never runs again."""
    seen = Counter()

    def model(request: InferenceRequest) -> Any:
        item = request.messages[0].text or ""
        seen.hit(item)
        last = request.messages[-1].content[0]
        if last.type == "tool_result":
            return f"{item}: {last.content}"
        if item.startswith("ask"):
            return calls(("h1", "book_hotel", {"hotel": item}))
        return f"{item}: nothing to book"

    agent = Agent("hotels", provider=ScriptedProvider([model], cycle=True), tools=[reserve], middleware=[ApproveTools()])
    f = Formation("trip").add_fleet("hotels", agent, max_workers=3)
    first = f.run(["ask-a", "b", "ask-c"], store=store)
    assert first.interrupt == {"node": "hotels", "payload": {"tool": "book_hotel", "input": {"hotel": "ask-a"}}}
    second = f.resume(first.run_id, store=store, answer="yes")
    assert second.interrupt == {"node": "hotels", "payload": {"tool": "book_hotel", "input": {"hotel": "ask-c"}}}
    done = f.resume(first.run_id, store=store, answer="no")
    assert done.output == ["ask-a: Successfully booked a stay at ask-a.", "b: nothing to book",
                           "ask-c: Error: the user refused (no)"]
    assert (seen.count("ask-a"), seen.count("b")) == (2, 1)  # a's first call was replayed; b ran once


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: a SQLite file, or a fresh schema on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.sqlite")
    return str(request.getfixturevalue("postgres_url"))


def test_a_session_suspended_before_a_tool_resumes_from_another_store_handle_on_either_store(where: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_interrupt_tool_node.py::test_interrupt_surfaced
    (parametrized over every checkpointer: here SQLite and PostgreSQL): a new
    Session over a new handle on the same store takes it up."""
    provider = hotel_script()
    agent = Agent("hotel", provider=provider, tools=[reserve], middleware=[ApproveTools()])
    with RunStore(where) as first_store:
        session = Session(agent, store=first_store)
        assert session.run("book").status == "suspended"
    with RunStore(where) as second_store:
        later = Session(agent, store=second_store)
        done = later.resume(session.id, answer="yes")
        assert done.response == "done: Successfully booked a stay at McKittrick."
        assert later.id == session.id and second_store.get(session.id).status == "succeeded"
    assert provider.calls == 2
