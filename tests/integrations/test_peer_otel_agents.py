"""traceloop/openllmetry's tests of agent, tool and workflow spans (its openai-agents,
langgraph and crewai instrumentations), ported to our telemetry: ``invoke_agent`` per
session, ``execute_tool`` per tool call, ``invoke_workflow`` per formation run; what
each carries, how they nest across threads, asyncio tasks, fleets, maps, retries and nested
formations, and that every span ends (failed, cancelled, timed out, suspended)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason='needs opentelemetry-sdk: pip install -e ".[dev,otel]"')

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.support.otel import by_name, parent_id, span_id
from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Fleet, Formation, Session, Task, interrupt, tool
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, FormationRuntimeError, ToolError
from wingman_actors.integrations import otel
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


@tool
def broken(city: str) -> str:
    """Always raises."""
    raise ValueError(f"no station in {city}")


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    assert span.attributes is not None
    return dict(span.attributes)


def _got(spans: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    return by_name(spans.get_finished_spans())


def _wait_for(spans: InMemorySpanExporter, name: str, count: int = 1, within: float = 5.0) -> list[ReadableSpan]:
    """The spans named ``name`` once ``count`` ended (work abandoned ends on its own thread)."""
    deadline = time.monotonic() + within
    while True:
        found = _got(spans).get(name, [])
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.01)


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(calls))


class _Slow(ScriptedProvider):
    """Answers after ``delay`` seconds (a model call in flight long enough to be cut)."""

    def __init__(self, *args: Any, delay: float = 0.3, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delay = delay
        self.entered = threading.Event()

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        self.entered.set()
        time.sleep(self.delay)
        return super().run_inference(request)


# -- tools -----------------------------------------------------------------------------------


def test_a_function_tool_call_is_an_execute_tool_span_under_its_agent_with_name_id_type_and_description(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py::test_agent_with_function_tool_spans."""
    provider = ScriptedProvider([_calls(("call_w", "get_weather", {"city": "Oslo"})), "Sunny."])
    Session(Agent("weather", provider=provider, tools=[get_weather])).run("Oslo?")
    got = _got(spans)
    (agent,), (tool_span,) = got["invoke_agent weather"], got["execute_tool get_weather"]
    attrs = _attrs(tool_span)
    assert parent_id(tool_span) == span_id(agent)
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert (attrs["gen_ai.tool.name"], attrs["gen_ai.tool.call.id"]) == ("get_weather", "call_w")
    assert attrs["gen_ai.tool.type"] == "function"
    assert attrs["gen_ai.tool.description"] == "Current weather for a city."
    assert tool_span.status.status_code is StatusCode.UNSET


def test_a_tool_that_raises_marks_its_span_failed_and_the_run_goes_on(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-crewai/tests/test_crewai_instrumentation.py (tool error).

    The exception reaches the model as an error result; only the tool's span is an error."""
    provider = ScriptedProvider([_calls(("c1", "broken", {"city": "Oslo"})), "Sorry."])
    result = Session(Agent("a", provider=provider, tools=[broken])).run("go")
    assert result.response == "Sorry."
    got = _got(spans)
    (tool_span,), (agent,) = got["execute_tool broken"], got["invoke_agent a"]
    assert tool_span.status.status_code is StatusCode.ERROR
    assert _attrs(tool_span)["error.type"] == "ValueError"
    assert "no station in Oslo" in (tool_span.status.description or "")
    assert [e.name for e in tool_span.events] == ["exception"]
    assert agent.status.status_code is StatusCode.UNSET and "error.type" not in _attrs(agent)


def test_a_tool_error_raised_on_purpose_is_error_type_tool(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py::test_agent_with_function_tool_spans (error path)."""

    @tool
    def refuse(why: str) -> str:
        """Refuse."""
        raise ToolError(f"refused: {why}")

    provider = ScriptedProvider([_calls(("c1", "refuse", {"why": "policy"})), "ok"])
    Session(Agent("a", provider=provider, tools=[refuse])).run("go")
    (tool_span,) = _got(spans)["execute_tool refuse"]
    assert tool_span.status.status_code is StatusCode.ERROR
    assert _attrs(tool_span)["error.type"] == "tool"


@pytest.mark.parametrize(("name", "args"), [("no_such_tool", {"city": "x"}), ("get_weather", {"town": 3})],
                         ids=["unknown-tool", "invalid-arguments"])
def test_a_call_the_runtime_refuses_is_still_an_ended_failed_tool_span(
    spans: InMemorySpanExporter, name: str, args: dict[str, Any]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py::test_agent_with_function_tool_spans (refused calls)."""
    provider = ScriptedProvider([_calls(("c9", name, args)), "ok"])
    Session(Agent("a", provider=provider, tools=[get_weather])).run("go")
    (tool_span,) = _got(spans)[f"execute_tool {name}"]
    assert tool_span.status.status_code is StatusCode.ERROR
    assert _attrs(tool_span)["error.type"] == "tool"
    assert _attrs(tool_span)["gen_ai.tool.call.id"] == "c9"


def test_tool_arguments_and_results_are_recorded_only_when_content_is_opted_in(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py::test_agent_with_function_tool_spans (content)."""
    script = [_calls(("c1", "get_weather", {"city": "Oslo"})), "Sunny."]
    Session(Agent("a", provider=ScriptedProvider(script), tools=[get_weather])).run("go")
    otel.capture_content(True)
    Session(Agent("b", provider=ScriptedProvider(script), tools=[get_weather])).run("go")
    first, second = _got(spans)["execute_tool get_weather"]
    assert "gen_ai.tool.call.arguments" not in _attrs(first) and "gen_ai.tool.call.result" not in _attrs(first)
    assert _attrs(second)["gen_ai.tool.call.arguments"] == '{"city": "Oslo"}'
    assert _attrs(second)["gen_ai.tool.call.result"] == "Sunny in Oslo"


def test_parallel_tool_calls_each_get_a_span_with_their_own_call_id(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py (parallel tool calls)."""
    calls = [(f"c{i}", "get_weather", {"city": c}) for i, c in enumerate(["Oslo", "Rome", "Lima"])]
    Session(Agent("a", provider=ScriptedProvider([_calls(*calls), "done"]), tools=[get_weather])).run("go")
    got = _got(spans)
    (agent,) = got["invoke_agent a"]
    tools = got["execute_tool get_weather"]
    assert sorted(_attrs(t)["gen_ai.tool.call.id"] for t in tools) == ["c0", "c1", "c2"]
    assert {parent_id(t) for t in tools} == {span_id(agent)}


# -- agents ----------------------------------------------------------------------------------


def test_each_run_of_a_conversation_is_its_own_agent_span_with_the_same_conversation_id(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_conversations.py."""
    session = Session(Agent("chat", provider=ScriptedProvider(["one", "two"])))
    session.run("first")
    session.run("second")
    other = Session(Agent("chat", provider=ScriptedProvider(["three"])))
    other.run("third")
    runs = _got(spans)["invoke_agent chat"]
    ids = [_attrs(s)["gen_ai.conversation.id"] for s in runs]
    assert ids[0] == ids[1] == session.id and ids[2] == other.id != session.id
    assert len({s.context.trace_id for s in runs}) == 3  # no span current: each run a trace of its own


def test_an_agent_span_carries_the_runs_summed_usage_over_its_model_calls(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py::test_agent_spans (usage)."""
    provider = ScriptedProvider([_calls(("c1", "get_weather", {"city": "Oslo"})), "Sunny and mild today."])
    result = Session(Agent("a", provider=provider, tools=[get_weather])).run("Oslo?")
    got = _got(spans)
    (agent,) = got["invoke_agent a"]
    chats = got["chat scripted"]
    assert _attrs(agent)["gen_ai.usage.output_tokens"] == result.usage.output_tokens == sum(
        _attrs(c)["gen_ai.usage.output_tokens"] for c in chats)
    assert _attrs(agent)["gen_ai.usage.input_tokens"] == result.usage.input_tokens


def test_a_session_cancelled_mid_call_ends_its_spans_as_cancelled(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_cancellation.py."""
    provider = _Slow(["late"], delay=0.3)
    session = Session(Agent("a", provider=provider))
    threading.Thread(target=lambda: (provider.entered.wait(5), session.cancel())).start()
    with pytest.raises(AgentError, match="cancelled"):
        session.run("go")
    (agent,) = _got(spans)["invoke_agent a"]
    (chat,) = _wait_for(spans, "chat scripted")
    for span in (agent, chat):
        assert span.status.status_code is StatusCode.ERROR
        assert _attrs(span)["error.type"] == "cancelled"


def test_a_session_past_its_timeout_ends_its_agent_span_and_later_its_abandoned_tool_span(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_cancellation.py (deadline)."""
    release = threading.Event()

    @tool
    def stuck(city: str) -> str:
        """Blocks until released."""
        release.wait(5)
        return city

    provider = ScriptedProvider([_calls(("c1", "stuck", {"city": "x"})), "never"])
    try:
        with pytest.raises(AgentError, match="timed out"):
            Session(Agent("a", provider=provider, tools=[stuck])).run("go", timeout=0.2)
        (agent,) = _got(spans)["invoke_agent a"]
        assert _attrs(agent)["error.type"] == "timeout"
    finally:
        release.set()
    (tool_span,) = _wait_for(spans, "execute_tool stuck")  # ended once the tool's thread returns
    assert parent_id(tool_span) == span_id(agent)


# -- async -----------------------------------------------------------------------------------


def test_awaited_sessions_in_concurrent_tasks_keep_their_spans_apart(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_async_safety.py."""

    async def one(i: int) -> None:
        with trace.get_tracer("test").start_as_current_span(f"request {i}"):
            await asyncio.sleep(0)
            provider = ScriptedProvider([_calls((f"c{i}", "get_weather", {"city": str(i)})), "ok"])
            await Session(Agent(f"a{i}", provider=provider, tools=[get_weather])).arun("go")

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(3)))

    asyncio.run(main())
    got = _got(spans)
    for i in range(3):
        (request,), (agent,) = got[f"request {i}"], got[f"invoke_agent a{i}"]
        assert parent_id(agent) == span_id(request)
        mine = [s for s in got["execute_tool get_weather"] if _attrs(s)["gen_ai.tool.call.id"] == f"c{i}"]
        assert [parent_id(s) for s in mine] == [span_id(agent)]


def test_work_inside_an_async_tool_nests_under_its_tool_span(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py (async function tools)."""

    @tool
    async def lookup(city: str) -> str:
        """Look it up."""
        with trace.get_tracer("test").start_as_current_span("db query"):
            await asyncio.sleep(0)
        return city

    provider = ScriptedProvider([_calls(("c1", "lookup", {"city": "Oslo"})), "ok"])
    asyncio.run(Session(Agent("a", provider=provider, tools=[lookup])).arun("go"))
    got = _got(spans)
    (query,), (tool_span,) = got["db query"], got["execute_tool lookup"]
    assert parent_id(query) == span_id(tool_span)


def test_an_awaited_session_that_fails_ends_its_agent_span_in_error(spans: InMemorySpanExporter) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_async_chat_completions.py::test_async_chat_completion_404."""
    from wingman_actors.errors import ErrorKind

    provider = ScriptedProvider([AgentError("bad key", kind=ErrorKind.INVALID)])
    with pytest.raises(AgentError):
        asyncio.run(Session(Agent("a", provider=provider)).arun("go"))
    (agent,) = _got(spans)["invoke_agent a"]
    assert agent.status.status_code is StatusCode.ERROR and _attrs(agent)["error.type"] == "invalid"


# -- fleets ----------------------------------------------------------------------------------


def test_a_fleet_item_that_fails_ends_only_its_own_agent_span_in_error(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-crewai/tests/test_crewai_instrumentation.py (one agent span per task)."""

    def answer(request: InferenceRequest) -> InferenceResponse:
        if "bad" in request.messages[-1].text:
            raise AgentError("refused")
        return InferenceResponse.of_text("fine")

    class ByTask(ScriptedProvider):
        def run_inference(self, request: InferenceRequest) -> InferenceResponse:
            return answer(request)

    results = Fleet(Agent("worker", provider=ByTask([])), [Task("good 1"), Task("bad"), Task("good 2")],
                    max_workers=3).run()
    assert [r.error is None for r in results] == [True, False, True]
    sessions = _got(spans)["invoke_agent worker"]
    assert len(sessions) == 3
    assert sorted(s.status.status_code.name for s in sessions) == ["ERROR", "UNSET", "UNSET"]


# -- formations ------------------------------------------------------------------------------


def _agent(name: str, answer: str = "ok") -> Agent:
    return Agent(name, provider=ScriptedProvider([answer], cycle=True))


def test_two_runs_of_one_formation_are_two_workflow_spans_in_two_traces(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py::test_langgraph_double_invoke."""
    formation = Formation("graph").add_agent("calculate", _agent("calculate"))
    first, second = formation.run("1"), formation.run("2")
    got = _got(spans)
    workflows = got["invoke_workflow graph"]
    assert [_attrs(w)["wingman.run_id"] for w in workflows] == [first.run_id, second.run_id]
    assert workflows[0].context.trace_id != workflows[1].context.trace_id
    sessions = got["invoke_agent calculate"]
    assert [parent_id(s) for s in sessions] == [span_id(w) for w in workflows]


def test_an_awaited_run_nests_under_the_span_current_in_its_task(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py::test_langgraph_ainvoke."""
    formation = Formation("graph").add_agent("calculate", _agent("calculate"))

    async def main() -> str:
        with trace.get_tracer("test").start_as_current_span("request"):
            return str((await formation.arun("x")).output)

    assert asyncio.run(main()) == "ok"
    got = _got(spans)
    (request,), (workflow,), (session,) = got["request"], got["invoke_workflow graph"], got["invoke_agent calculate"]
    assert parent_id(workflow) == span_id(request)
    assert parent_id(session) == span_id(workflow)
    assert _attrs(session)["wingman.node"] == "calculate"


def test_a_map_nodes_items_are_one_agent_span_each_tagged_with_the_map_node(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (Send fan-out)."""

    def research(topic: str) -> str:
        return Session(_agent("researcher", "notes")).run(topic).response

    result = Formation("fan").add_map("each", research, max_workers=3).run(["a", "b", "c"])
    assert result.output == ["notes"] * 3
    got = _got(spans)
    (workflow,) = got["invoke_workflow fan"]
    sessions = got["invoke_agent researcher"]
    assert len(sessions) == 3 and {parent_id(s) for s in sessions} == {span_id(workflow)}
    assert {(_attrs(s)["wingman.node"], _attrs(s)["wingman.run_id"]) for s in sessions} == {("each", result.run_id)}


def test_a_retried_node_leaves_one_ended_agent_span_per_attempt(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (retry policy)."""
    answers = iter([AgentError("overloaded"), "fine"])
    agent = Agent("writer", provider=ScriptedProvider([next(answers), next(answers)]))
    result = Formation("r").add_agent("writer", agent, retries=1, backoff=0.01).run("go")
    assert result.output == "fine"
    first, second = _got(spans)["invoke_agent writer"]
    assert first.status.status_code is StatusCode.ERROR and second.status.status_code is StatusCode.UNSET
    (workflow,) = _got(spans)["invoke_workflow r"]
    assert parent_id(first) == parent_id(second) == span_id(workflow)
    assert workflow.status.status_code is StatusCode.UNSET


def test_a_failure_an_error_edge_handles_leaves_the_workflow_span_succeeded(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (error handling node)."""
    from wingman_actors.errors import ErrorKind

    failing = Agent("flaky", provider=ScriptedProvider([AgentError("no", kind=ErrorKind.INVALID)]))
    formation = (Formation("e").add_agent("flaky", failing).add_function("handler", lambda failure: "handled")
                 .connect("flaky", "handler", on_error=True))
    assert formation.run("go").outputs == {"handler": "handled"}
    got = _got(spans)
    (session,), (workflow,) = got["invoke_agent flaky"], got["invoke_workflow e"]
    assert session.status.status_code is StatusCode.ERROR
    assert workflow.status.status_code is StatusCode.UNSET
    assert _attrs(workflow)["wingman.run.status"] == "succeeded"


def test_sessions_inside_a_nested_formation_carry_the_node_path_and_the_outer_run_id(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py::test_nested_graph (subgraph spans).

    As DESIGN's nested events do, the inner node is named by its path ("research/writer")
    and the run by the outer run's id, the one the user holds."""
    inner = Formation("inner").add_agent("writer", _agent("writer"))
    result = Formation("outer").add_formation("research", inner).run("go")
    got = _got(spans)
    (outer,), (inner_run,), (session,) = got["invoke_workflow outer"], got["invoke_workflow inner"], got["invoke_agent writer"]
    assert parent_id(inner_run) == span_id(outer)
    assert parent_id(session) == span_id(inner_run)
    assert len({outer.context.trace_id, inner_run.context.trace_id, session.context.trace_id}) == 1
    assert _attrs(session)["wingman.node"] == "research/writer"
    assert _attrs(session)["wingman.run_id"] == result.run_id
    assert _attrs(inner_run)["wingman.node"] == "research"


def test_sessions_two_formations_deep_and_in_a_map_of_formations_are_named_by_their_whole_path(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py::test_nested_graph (subgraph of a subgraph, Send to a subgraph)."""
    leaf = Formation("leaf").add_agent("writer", _agent("writer"))
    deep = Formation("outer").add_formation("sub", Formation("mid").add_formation("deep", leaf)).run("go")
    mapped = Formation("fan").add_map("each", formation=leaf, max_workers=2).run(["a", "b"])
    sessions = _got(spans)["invoke_agent writer"]
    named = [(_attrs(s)["wingman.node"], _attrs(s)["wingman.run_id"]) for s in sessions]
    assert ("sub/deep/writer", deep.run_id) in named
    items = [(node, run) for node, run in named if node.startswith("each/")]
    assert [run for _, run in items] == [mapped.run_id] * 2
    assert all(node.endswith("/writer") for node, _ in items)
    assert items[0][0] != items[1][0]  # each item its own path


def test_a_run_suspended_by_an_interrupt_ends_its_workflow_span_and_the_resume_opens_another(
    spans: InMemorySpanExporter, location: str
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (interrupt / Command resume).

    The store decides nothing here, so it runs on SQLite and PostgreSQL alike."""

    def approve(draft: str) -> str:
        return f"{draft} ({interrupt('approve?')})"

    formation = (Formation("review").add_agent("draft", _agent("draft", "text"))
                 .add_function("approve", approve).connect("draft", "approve"))
    with RunStore(location) as store:
        paused = formation.run("go", store=store)
        assert paused.interrupt is not None
        (first,) = _got(spans)["invoke_workflow review"]
        done = formation.resume(paused.run_id, store=store, answer="yes")
    assert done.output == "text (yes)"
    attrs = _attrs(first)
    assert attrs["wingman.run.status"] == "suspended"
    assert first.status.status_code is StatusCode.UNSET  # waiting for an answer is no error
    first_again, second = _got(spans)["invoke_workflow review"]
    assert first_again is first or span_id(first_again) == span_id(first)
    assert _attrs(second)["wingman.run.status"] == "succeeded"
    assert _attrs(second)["wingman.run_id"] == paused.run_id
    assert len(_got(spans)["invoke_agent draft"]) == 1  # the journalled visit is not run again


def test_a_run_stopped_at_a_breakpoint_ends_its_workflow_span(spans: InMemorySpanExporter, path: Path) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (interrupt_before)."""
    formation = Formation("b").add_function("prep", str.upper).add_agent("say", _agent("say")).connect("prep", "say")
    with RunStore(path) as store:
        paused = formation.run("go", break_before=["say"], store=store)
    assert paused.interrupt is not None
    (workflow,) = _got(spans)["invoke_workflow b"]
    assert _attrs(workflow)["wingman.run.status"] == "suspended"
    assert "invoke_agent say" not in _got(spans)


def test_a_formation_run_raising_ends_every_span_it_opened(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (failing node)."""

    def boom(text: str) -> str:
        Session(_agent("inside")).run(text)
        raise RuntimeError("after the session")

    with pytest.raises(FormationRuntimeError):
        Formation("f").add_function("boom", boom).run("go")
    got = _got(spans)
    assert sorted(got) == ["chat scripted", "invoke_agent inside", "invoke_workflow f"]
    (workflow,) = got["invoke_workflow f"]
    assert workflow.status.status_code is StatusCode.ERROR
    assert _attrs(workflow)["error.type"] == "wingman_actors.errors.FormationRuntimeError"
    assert got["invoke_agent inside"][0].status.status_code is StatusCode.UNSET  # it succeeded


# -- Ray ---------------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_run_on_ray_ends_its_workflow_span_in_the_driver(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py::test_langgraph_invoke on backend="ray".

    The node work runs in Ray's processes, which export to their own tracer provider (none
    in this test): the driver's exporter sees the run's span, ended and succeeded."""
    formation = Formation("remote").add_function("double", lambda x: x * 2)
    result = formation.run(21, backend="ray", timeout=120)
    assert result.output == 42
    (workflow,) = _got(spans)["invoke_workflow remote"]
    assert _attrs(workflow)["wingman.run_id"] == result.run_id
    assert _attrs(workflow)["wingman.run.status"] == "succeeded"



def _fails(x: int) -> int:
    raise ValueError(f"bad input {x}")


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_run_failing_on_ray_ends_its_workflow_span_in_error(spans: InMemorySpanExporter) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-langchain/tests/test_langgraph.py (failing node) on backend="ray"."""
    with pytest.raises(FormationRuntimeError, match="bad input 3"):
        Formation("remote_fail").add_function("fails", _fails).run(3, backend="ray", timeout=120)
    (workflow,) = _got(spans)["invoke_workflow remote_fail"]
    assert workflow.status.status_code is StatusCode.ERROR
    assert _attrs(workflow)["wingman.run.status"] == "failed"
    assert _attrs(workflow)["error.type"] == "wingman_actors.errors.FormationRuntimeError"
