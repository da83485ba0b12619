"""OpenTelemetry spans of formation runs (SDK in-memory exporter): one ``invoke_workflow``
per run and no span of its own per node: the sessions of agent nodes and fleet items nest
directly under the run's span (from the node actor's thread) and carry ``wingman.node`` /
``wingman.run_id``; errors and cancellations recorded."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

pytest.importorskip("opentelemetry.sdk", reason='needs opentelemetry-sdk: pip install -e ".[dev]"')

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.support.otel import by_name, parent_id, span_id
from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.testing import ScriptedProvider


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _attrs(span: ReadableSpan) -> dict[str, object]:
    assert span.attributes is not None
    return dict(span.attributes)


def _wait_for(exporter: InMemorySpanExporter, name: str, count: int = 1, within: float = 5.0) -> list[ReadableSpan]:
    """Spans named ``name`` once ``count`` of them ended (spans of abandoned or cancelled
    work end on their own thread, after the run resolved)."""
    deadline = time.monotonic() + within
    while True:
        found = by_name(exporter.get_finished_spans()).get(name, [])
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.01)


def _research() -> Formation:
    """split (function) -> researchers (fleet, one session per item) -> calc (agent with a tool)."""
    calc = Agent("calc", provider=ScriptedProvider([
        InferenceResponse.of_tool_calls([("call-1", "add", {"a": 2, "b": 3})]), "5",
    ], model="m-1"), tools=[add])
    researcher = Agent("researcher", provider=ScriptedProvider(["notes"], cycle=True, model="m-2"))
    formation = Formation("research")
    formation.add_function("split", lambda text: text.split(","))
    formation.add_fleet("researchers", researcher, max_workers=3)
    formation.add_agent("calc", calc)
    return formation.connect("split", "researchers").connect("researchers", "calc")


def test_a_run_nests_agent_chat_and_tool_spans_directly_under_its_workflow_span(spans: InMemorySpanExporter) -> None:
    result = _research().run("a,b,c")
    assert result.output == "5"
    finished = spans.get_finished_spans()
    got = by_name(finished)
    # exactly the spans DESIGN.md lists: nothing per node
    assert set(got) == {"invoke_workflow research", "invoke_agent researcher", "chat m-2", "invoke_agent calc",
                        "chat m-1", "execute_tool add"}
    (workflow,) = got["invoke_workflow research"]
    # the fleet node's sessions, one per item, on its worker threads
    researchers = got["invoke_agent researcher"]
    assert len(researchers) == 3
    assert {parent_id(s) for s in researchers} == {span_id(workflow)}
    assert sorted(parent_id(c) or 0 for c in got["chat m-2"]) == sorted(span_id(s) for s in researchers)
    # the agent node's session, its model calls and its tool call
    (calc,) = got["invoke_agent calc"]
    assert parent_id(calc) == span_id(workflow)
    assert [parent_id(c) for c in got["chat m-1"]] == [span_id(calc)] * 2
    (tool_span,) = got["execute_tool add"]
    assert parent_id(tool_span) == span_id(calc)
    # one trace per run
    assert len({s.context.trace_id for s in finished}) == 1
    # attributes
    run_attrs = _attrs(workflow)
    assert run_attrs["gen_ai.operation.name"] == "invoke_workflow"
    assert run_attrs["gen_ai.workflow.name"] == "research"
    assert run_attrs["wingman.run_id"] == result.run_id
    assert run_attrs["wingman.run.status"] == "succeeded"
    assert run_attrs["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert workflow.status.status_code is StatusCode.UNSET
    for span in [*researchers, *got["chat m-2"]]:
        assert (_attrs(span)["wingman.node"], _attrs(span)["wingman.run_id"]) == ("researchers", result.run_id)
    for span in (calc, tool_span, *got["chat m-1"]):
        assert (_attrs(span)["wingman.node"], _attrs(span)["wingman.run_id"]) == ("calc", result.run_id)
    assert _attrs(calc)["gen_ai.agent.name"] == "calc"
    assert _attrs(calc)["gen_ai.provider.name"] == "scripted"
    assert _attrs(calc)["gen_ai.request.model"] == "m-1"
    assert _attrs(calc)["gen_ai.usage.input_tokens"] == result.nodes["calc"].usage.input_tokens
    assert _attrs(tool_span)["gen_ai.tool.name"] == "add"
    assert _attrs(tool_span)["gen_ai.tool.call.id"] == "call-1"


def test_the_workflow_span_is_a_child_of_the_span_current_at_submit(spans: InMemorySpanExporter) -> None:
    formation = Formation("f").add_function("double", lambda x: x * 2)
    formation.add_agent("say", Agent("say", provider=ScriptedProvider(["4"]))).connect("double", "say")
    with trace.get_tracer("test").start_as_current_span("request") as request:
        formation.run(2)
    got = by_name(spans.get_finished_spans())
    (workflow,) = got["invoke_workflow f"]
    assert parent_id(workflow) == span_id(request)
    (session,) = got["invoke_agent say"]
    assert parent_id(session) == span_id(workflow)


def test_runs_in_flight_at_once_keep_their_spans_apart(spans: InMemorySpanExporter) -> None:
    gate = threading.Barrier(2, timeout=5)

    def meet(x: int) -> str:
        gate.wait()  # both runs are inside this node at once, on two replicas
        return Session(Agent("inner", provider=ScriptedProvider([f"in {x}"]))).run("go").response

    echo = Agent("echo", provider=ScriptedProvider(["ok"], cycle=True))
    formation = Formation("pair").add_function("meet", meet, concurrency=2).add_agent("echo", echo)
    formation.connect("meet", "echo")
    with formation.start() as running:
        futures = [running.submit(i) for i in range(2)]
        run_ids = [f.result(timeout=5).run_id for f in futures]
    got = by_name(spans.get_finished_spans())
    workflows = {_attrs(s)["wingman.run_id"]: s for s in got["invoke_workflow pair"]}
    assert sorted(workflows) == sorted(run_ids)
    sessions = [*got["invoke_agent inner"], *got["invoke_agent echo"]]
    assert len(sessions) == 4
    for session in sessions:
        own = workflows[_attrs(session)["wingman.run_id"]]
        assert parent_id(session) == span_id(own)
        assert session.context.trace_id == own.context.trace_id
    assert workflows[run_ids[0]].context.trace_id != workflows[run_ids[1]].context.trace_id


def test_a_failing_node_marks_the_run_failed_without_spans_of_its_own(spans: InMemorySpanExporter) -> None:
    def boom(x: int) -> int:
        raise ValueError(f"bad input {x}")

    formation = Formation("fragile").add_function("boom", boom, retries=1, backoff=0.01)
    with pytest.raises(FormationRuntimeError):
        formation.run(7)
    got = by_name(spans.get_finished_spans())
    assert list(got) == ["invoke_workflow fragile"]
    (workflow,) = got["invoke_workflow fragile"]
    assert workflow.status.status_code is StatusCode.ERROR
    assert _attrs(workflow)["error.type"] == "wingman_actors.errors.FormationRuntimeError"
    assert _attrs(workflow)["wingman.run.status"] == "failed"
    assert [e.name for e in workflow.events] == ["exception"]


def test_a_failing_agent_node_marks_its_session_and_run(spans: InMemorySpanExporter) -> None:
    agent = Agent("writer", provider=ScriptedProvider([AgentError("bad request", kind=ErrorKind.INVALID)]))
    with pytest.raises(FormationRuntimeError):
        Formation("w").add_agent("writer", agent).run("go")
    got = by_name(spans.get_finished_spans())
    (session,) = got["invoke_agent writer"]
    (workflow,) = got["invoke_workflow w"]
    assert parent_id(session) == span_id(workflow)
    assert session.status.status_code is StatusCode.ERROR
    assert _attrs(session)["error.type"] == "invalid"
    assert _attrs(session)["wingman.node"] == "writer"
    assert workflow.status.status_code is StatusCode.ERROR
    assert _attrs(workflow)["wingman.run.status"] == "failed"


def test_a_cancelled_run_ends_its_workflow_span(spans: InMemorySpanExporter) -> None:
    entered, release = threading.Event(), threading.Event()

    def wait(x: int) -> str:
        entered.set()
        release.wait(10)
        return Session(Agent("late", provider=ScriptedProvider(["late"]))).run("go").response

    after = Agent("after", provider=ScriptedProvider(["never"]))
    formation = Formation("c").add_function("wait", wait).add_agent("after", after).connect("wait", "after")
    try:
        with formation.start() as running:
            future = running.submit(1)
            assert entered.wait(5)
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(timeout=1)
            (workflow,) = by_name(spans.get_finished_spans())["invoke_workflow c"]  # ended at the cancel
            release.set()
            (late,) = _wait_for(spans, "invoke_agent late")  # the abandoned attempt's session, when its code goes on
    finally:
        release.set()
    attrs = _attrs(workflow)
    assert attrs["wingman.run.status"] == "cancelled"
    assert workflow.status.status_code is StatusCode.UNSET  # a cancellation is not an error
    assert "error.type" not in attrs
    assert parent_id(late) == span_id(workflow)
    assert "invoke_agent after" not in by_name(spans.get_finished_spans())


def test_a_run_that_times_out_ends_its_workflow_span_as_failed(spans: InMemorySpanExporter) -> None:
    release = threading.Event()

    def stuck(x: int) -> int:
        release.wait(10)
        return x

    try:
        with pytest.raises(FormationRuntimeError, match="timed out"):
            Formation("slow").add_function("stuck", stuck).run(1, timeout=0.2)
        (workflow,) = by_name(spans.get_finished_spans())["invoke_workflow slow"]
    finally:
        release.set()
    assert workflow.status.status_code is StatusCode.ERROR
    assert _attrs(workflow)["wingman.run.status"] == "failed"
