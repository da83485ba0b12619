"""OpenTelemetry spans, checked with the SDK's in-memory exporter: names, parents, attributes."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason='needs opentelemetry-sdk: pip install -e ".[dev,otel]"')

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.support.otel import by_name, parent_id, reset_globals, span_id
from wingman_actors import Agent, Fleet, Session, Task, tool
from wingman_actors.core import InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind, ToolError
from wingman_actors.integrations import otel
from wingman_actors.testing import ScriptedProvider


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def refuse(why: str) -> str:
    """Always fails."""
    raise ToolError(f"refused: {why}")


def test_a_session_with_a_tool_emits_agent_chat_and_tool_spans_nested_under_the_callers(
    spans: InMemorySpanExporter,
) -> None:
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("call-1", "add", {"a": 2, "b": 3})]), "5",
    ], model="m-1")
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("outer") as outer:
        result = Session(Agent("calc", provider=provider, tools=[add])).run("2+3?")
    got = by_name(spans.get_finished_spans())
    assert sorted(got) == ["chat m-1", "execute_tool add", "invoke_agent calc", "outer"]
    (agent,) = got["invoke_agent calc"]
    chats = got["chat m-1"]
    (tool_span,) = got["execute_tool add"]
    assert parent_id(agent) == span_id(outer)
    assert [parent_id(c) for c in chats] == [span_id(agent)] * 2
    assert parent_id(tool_span) == span_id(agent)
    assert agent.attributes is not None and chats[0].attributes is not None and tool_span.attributes is not None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "calc"
    assert agent.attributes["gen_ai.provider.name"] == "scripted"
    assert agent.attributes["gen_ai.request.model"] == "m-1"
    assert agent.attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert chats[0].attributes["gen_ai.operation.name"] == "chat"
    assert chats[0].attributes["gen_ai.request.model"] == "m-1"
    assert chats[0].kind is trace.SpanKind.CLIENT
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == result.usage.output_tokens  # type: ignore[index,misc]
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert tool_span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_span.attributes["gen_ai.tool.name"] == "add"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call-1"
    assert "error.type" not in tool_span.attributes
    assert "gen_ai.input.messages" not in chats[0].attributes  # content is opt-in
    assert "gen_ai.tool.call.arguments" not in tool_span.attributes


def test_a_fleets_sessions_nest_under_the_span_current_at_run(spans: InMemorySpanExporter) -> None:
    provider = ScriptedProvider(["ok"], cycle=True)
    with trace.get_tracer("test").start_as_current_span("batch") as batch:
        Fleet(Agent("worker", provider=provider), [Task(f"t{i}") for i in range(4)], max_workers=4).run()
    got = by_name(spans.get_finished_spans())
    agents = got["invoke_agent worker"]
    assert len(agents) == 4 and {parent_id(a) for a in agents} == {span_id(batch)}
    assert sorted(parent_id(c) or 0 for c in got["chat scripted"]) == sorted(span_id(a) for a in agents)
    assert len({a.context.trace_id for a in agents} | {batch.get_span_context().trace_id}) == 1


def test_work_started_inside_a_tool_nests_under_the_tool_span_on_the_pool_thread(spans: InMemorySpanExporter) -> None:
    inner = ScriptedProvider(["inner answer"], cycle=True)

    @tool
    def ask(question: str) -> str:
        """Ask a helper agent."""
        return Session(Agent("helper", provider=inner)).run(question).response

    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("q1", "ask", {"question": "a"}), ("q2", "ask", {"question": "b"})]),
        "done",
    ])
    Session(Agent("lead", provider=provider, tools=[ask])).run("go")
    got = by_name(spans.get_finished_spans())
    tool_ids = {span_id(s) for s in got["execute_tool ask"]}
    helpers = got["invoke_agent helper"]
    assert len(helpers) == 2 and {parent_id(h) for h in helpers} == tool_ids
    (lead,) = got["invoke_agent lead"]
    assert {parent_id(s) for s in got["execute_tool ask"]} == {span_id(lead)}


def test_a_tool_error_marks_its_span_with_error_type(spans: InMemorySpanExporter) -> None:
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "refuse", {"why": "no"})]), "ok"])
    Session(Agent("a", provider=provider, tools=[refuse])).run("go")
    (span,) = by_name(spans.get_finished_spans())["execute_tool refuse"]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "tool"
    assert [e.name for e in span.events] == ["exception"]


def test_a_failed_model_call_is_recorded_on_the_chat_and_agent_spans(spans: InMemorySpanExporter) -> None:
    provider = ScriptedProvider([AgentError("slow down", kind=ErrorKind.RATE_LIMIT)])
    with pytest.raises(AgentError):
        Session(Agent("a", provider=provider)).run("go")
    got = by_name(spans.get_finished_spans())
    (chat,) = got["chat scripted"]
    (agent,) = got["invoke_agent a"]
    for span in (chat, agent):
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes is not None and span.attributes["error.type"] == "rate_limit"


def test_message_content_is_recorded_only_when_opted_in(spans: InMemorySpanExporter) -> None:
    otel.capture_content(True)
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "add", {"a": 1, "b": 1})]), "two"])
    Session(Agent("a", instructions="Be exact.", provider=provider, tools=[add])).run("1+1?")
    got = by_name(spans.get_finished_spans())
    first, second = got["chat scripted"]
    assert first.attributes is not None and second.attributes is not None
    assert '"content": "1+1?"' in str(first.attributes["gen_ai.input.messages"])
    assert "Be exact." in str(first.attributes["gen_ai.system_instructions"])
    assert '"name": "add"' in str(first.attributes["gen_ai.output.messages"])
    assert '"content": "two"' in str(second.attributes["gen_ai.output.messages"])
    (tool_span,) = got["execute_tool add"]
    assert tool_span.attributes is not None
    assert tool_span.attributes["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 1}'
    assert tool_span.attributes["gen_ai.tool.call.result"] == "2"


def test_a_streamed_run_emits_the_same_spans(spans: InMemorySpanExporter) -> None:
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "add", {"a": 1, "b": 2})]), "3"])
    stream = Session(Agent("s", provider=provider, tools=[add])).run_stream("1+2?")
    list(stream)
    got = by_name(spans.get_finished_spans())
    (agent,) = got["invoke_agent s"]
    assert [parent_id(s) for s in got["chat scripted"] + got["execute_tool add"]] == [span_id(agent)] * 3


def test_a_compaction_is_a_chat_span_of_the_compactor(spans: InMemorySpanExporter) -> None:
    script = [InferenceResponse.of_tool_calls([(f"c{i}", "add", {"a": i, "b": 0})], text="x" * 2000) for i in range(8)]
    compactor = ScriptedProvider(
        [InferenceResponse.of_text("summary", usage=Usage(input_tokens=7, output_tokens=3))], cycle=True, model="small"
    )
    agent = Agent("long", provider=ScriptedProvider([*script, "end"]), tools=[add], context_budget=2_000,
                  compactor=compactor)
    Session(agent).run("go")
    got = by_name(spans.get_finished_spans())
    (agent_span,) = got["invoke_agent long"]
    compactions = got["chat small"]
    assert compactions and {parent_id(c) for c in compactions} == {span_id(agent_span)}
    assert compactions[0].attributes is not None and compactions[0].attributes["gen_ai.usage.input_tokens"] == 7


def test_a_compaction_of_an_awaited_session_is_a_chat_span_of_the_compactor(spans: InMemorySpanExporter) -> None:
    script = [InferenceResponse.of_tool_calls([(f"c{i}", "add", {"a": i, "b": 0})], text="x" * 2000) for i in range(8)]
    compactor = ScriptedProvider([InferenceResponse.of_text("summary")], cycle=True, model="small")
    agent = Agent("long", provider=ScriptedProvider([*script, "end"]), tools=[add], context_budget=2_000,
                  compactor=compactor)
    asyncio.run(Session(agent).arun("go"))
    got = by_name(spans.get_finished_spans())
    (agent_span,) = got["invoke_agent long"]
    assert got["chat small"] and {parent_id(c) for c in got["chat small"]} == {span_id(agent_span)}


def test_node_work_nests_sessions_directly_under_the_workflow_span_and_tags_them(spans: InMemorySpanExporter) -> None:
    workflow = otel.start_workflow("budget", "run-1")
    assert workflow is not None and "traceparent" in workflow.carrier

    def node_thread() -> None:  # a node actor's thread: it only has the envelope's carrier
        with otel.node_work(workflow.carrier, "advisor", "run-1"):
            Session(Agent("advisor", provider=ScriptedProvider(["ok"]))).run("go")

    thread = threading.Thread(target=node_thread)
    thread.start()
    thread.join()
    workflow.end()
    got = by_name(spans.get_finished_spans())
    assert set(got) == {"invoke_workflow budget", "invoke_agent advisor", "chat scripted"}  # node work: no span
    (run_span,) = got["invoke_workflow budget"]
    (agent,) = got["invoke_agent advisor"]
    (chat,) = got["chat scripted"]
    assert parent_id(agent) == span_id(run_span)
    assert parent_id(chat) == span_id(agent)
    for span in (agent, chat):
        assert span.attributes is not None
        assert (span.attributes["wingman.node"], span.attributes["wingman.run_id"]) == ("advisor", "run-1")


def test_node_work_restores_the_context_and_lets_errors_through(spans: InMemorySpanExporter) -> None:
    workflow = otel.start_workflow("w", "run-2")
    assert workflow is not None
    before = trace.get_current_span()
    with pytest.raises(ValueError, match="node failed"), otel.node_work(workflow.carrier, "n", "run-2", attempt=2):
        assert trace.get_current_span().get_span_context().span_id == workflow.span.get_span_context().span_id
        raise ValueError("node failed")
    assert trace.get_current_span() is before
    assert otel.session_spans("after", ScriptedProvider(["x"]), "id") is not None
    assert otel._node.get() is None
    workflow.end()
    assert [s.name for s in spans.get_finished_spans()] == ["invoke_workflow w"]


def test_without_a_tracer_provider_sessions_make_no_spans() -> None:
    assert otel.session_spans("a", ScriptedProvider(["x"]), "id") is None
    assert otel.start_workflow("f", "r") is None

    def fn() -> int:
        return 1

    assert otel.carry_context(fn) is fn
    with otel.node_work({"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}, "n", "r"):
        assert otel.session_spans("a", ScriptedProvider(["x"]), "id") is None


def test_opentelemetry_keeps_its_provider_where_the_fast_path_reads_it(spans: InMemorySpanExporter) -> None:
    # otel._tracer() reads this global to skip get_tracer_provider()'s environment look-up
    # while no provider is set; if opentelemetry-api moves it, the fast path is lost.
    assert trace._TRACER_PROVIDER is trace.get_tracer_provider() is not None
    reset_globals()
    assert trace._TRACER_PROVIDER is None and otel._tracer() is None


def test_a_provider_named_by_the_environment_is_used() -> None:
    script = "import opentelemetry.trace\nfrom wingman_actors.integrations import otel\nprint(otel._tracer() is not None)"
    env = {**os.environ, "OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True, env=env)
    assert out.stdout.strip() == "True"


_NO_OTEL = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):  # as if opentelemetry were not installed
    def find_spec(self, name, path, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(name)
if {hide}:
    sys.meta_path.insert(0, Hide())
from wingman_actors import Agent, Fleet, Session, Task, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.testing import ScriptedProvider

@tool
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

p = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "add", {{"a": 1, "b": 2}}), ("c2", "add", {{"a": 1, "b": 2}})]), "3"])
assert Session(Agent("a", provider=p, tools=[add])).run("x").response == "3"
Fleet(Agent("w", provider=ScriptedProvider(["ok"], cycle=True)), [Task("a"), Task("b")]).run()
from wingman_actors import Formation
f = Formation("f").add_function("split", str.split).add_fleet("each", Agent("w", provider=ScriptedProvider(["ok"], cycle=True)))
assert f.connect("split", "each").run("a b").output == ["ok", "ok"]
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
print(loaded)
"""


@pytest.mark.parametrize("hide", [True, False], ids=["not-installed", "installed-but-unused"])
def test_sessions_fleets_and_formation_runs_import_nothing_of_opentelemetry(hide: bool) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _NO_OTEL.format(hide=hide)], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_docs_telemetry_example_runs_and_prints_what_it_shows(capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"^```python\n(.*?)^```", page, re.DOTALL | re.MULTILINE) if "set_tracer_provider" in b]
    reset_globals()
    try:
        exec(compile(block, "docs/agents.md[telemetry example]", "exec"), {"__name__": "docs_telemetry"})
    finally:
        trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]
        reset_globals()
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "['chat scripted', 'chat scripted', 'execute_tool add', 'invoke_agent calc']",
        "invoke_workflow quiz  under -",
        "invoke_agent calc     under invoke_workflow quiz",
        "chat scripted         under invoke_agent calc",
    ]
    assert all(f"# {line}\n" in block for line in printed)  # the page shows what it prints


def test_delegated_agents_nest_under_the_delegate_tool_span(spans: InMemorySpanExporter) -> None:
    from wingman_actors.orchestration import AgentRegistry

    registry = AgentRegistry()
    registry.register(Agent("poet", provider=ScriptedProvider(["Roses."])), description="Writes verse.")
    registry.register(Agent("critic", provider=ScriptedProvider(["Short."])), description="Finds flaws.")
    plan = InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": [
        {"agent": "poet", "task": "A poem."}, {"agent": "critic", "task": "Judge it."},
    ]})])
    Session(Agent("lead", provider=ScriptedProvider([plan, "done"]), delegates=registry)).run("go")
    got = by_name(spans.get_finished_spans())
    (delegate,) = got["execute_tool delegate"]
    (lead,) = got["invoke_agent lead"]
    assert parent_id(delegate) == span_id(lead)
    for child in ("poet", "critic"):
        (span,) = got[f"invoke_agent {child}"]
        assert parent_id(span) == span_id(delegate)


class _Backup(ScriptedProvider):
    """A second vendor's provider, told apart by its id."""

    id = "backup"


@pytest.mark.parametrize("awaited", [False, True], ids=["run", "arun"])
def test_a_model_call_prepare_sends_to_another_provider_is_a_chat_span_naming_that_provider(
    spans: InMemorySpanExporter, awaited: bool
) -> None:
    from wingman_actors.agents import Prepared

    backup = _Backup(["from the backup"], model="backup-model")
    agent = Agent("a", provider=ScriptedProvider(["unused"], model="main-model"), prepare=lambda ctx: Prepared(model=backup))
    session = Session(agent)
    result = asyncio.run(session.arun("hi")) if awaited else session.run("hi")
    assert result.response == "from the backup"
    got = by_name(spans.get_finished_spans())
    (chat,) = got["chat backup-model"]
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == "backup"
    assert chat.attributes["gen_ai.request.model"] == "backup-model"
    (agent_span,) = got["invoke_agent a"]
    assert parent_id(chat) == span_id(agent_span)


def test_a_streamed_call_to_the_provider_prepare_chose_names_it_too(spans: InMemorySpanExporter) -> None:
    from wingman_actors.agents import Prepared

    backup = _Backup(["from the backup"], model="backup-model")
    agent = Agent("a", provider=ScriptedProvider(["unused"], model="main-model"), prepare=lambda ctx: Prepared(model=backup))
    list(Session(agent).run_stream("hi"))
    (chat,) = by_name(spans.get_finished_spans())["chat backup-model"]
    assert chat.attributes is not None and chat.attributes["gen_ai.provider.name"] == "backup"
