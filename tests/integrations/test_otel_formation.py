"""OpenTelemetry spans of formation runs (SDK in-memory exporter): one ``invoke_workflow``
per run, one ``execute_node`` per node attempt on the node actor's thread, sessions and
fleet items nested under their node, errors and cancellations recorded."""

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
from wingman_actors import Agent, Formation, tool
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
    """Spans named ``name`` once ``count`` of them ended (node spans of abandoned or
    cancelled work end on their own thread, after the run resolved)."""
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


def test_a_run_nests_node_agent_chat_and_tool_spans_under_its_workflow_span(spans: InMemorySpanExporter) -> None:
    result = _research().run("a,b,c")
    assert result.output == "5"
    got = by_name(spans.get_finished_spans())
    (workflow,) = got["invoke_workflow research"]
    nodes = {name: got[f"execute_node {name}"] for name in ("split", "researchers", "calc")}
    assert all(len(n) == 1 for n in nodes.values())
    assert {parent_id(n[0]) for n in nodes.values()} == {span_id(workflow)}
    # the fleet node's sessions, one per item, on its worker threads
    researchers = got["invoke_agent researcher"]
    assert len(researchers) == 3
    assert {parent_id(s) for s in researchers} == {span_id(nodes["researchers"][0])}
    assert sorted(parent_id(c) or 0 for c in got["chat m-2"]) == sorted(span_id(s) for s in researchers)
    # the agent node's session, its model calls and its tool call
    (calc,) = got["invoke_agent calc"]
    assert parent_id(calc) == span_id(nodes["calc"][0])
    assert [parent_id(c) for c in got["chat m-1"]] == [span_id(calc)] * 2
    (tool_span,) = got["execute_tool add"]
    assert parent_id(tool_span) == span_id(calc)
    # one trace per run
    assert len({s.context.trace_id for s in spans.get_finished_spans()}) == 1
    # attributes
    run_attrs = _attrs(workflow)
    assert run_attrs["gen_ai.operation.name"] == "invoke_workflow"
    assert run_attrs["gen_ai.workflow.name"] == "research"
    assert run_attrs["wingman.run_id"] == result.run_id
    assert run_attrs["wingman.run.status"] == "succeeded"
    assert run_attrs["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert workflow.status.status_code is StatusCode.UNSET
    for name, (span,) in nodes.items():
        assert _attrs(span) == {"wingman.node": name, "wingman.run_id": result.run_id, "wingman.attempt": 1}
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
    with trace.get_tracer("test").start_as_current_span("request") as request:
        formation.run(2)
    got = by_name(spans.get_finished_spans())
    (workflow,) = got["invoke_workflow f"]
    assert parent_id(workflow) == span_id(request)
    (node,) = got["execute_node double"]
    assert parent_id(node) == span_id(workflow)


def test_runs_in_flight_at_once_keep_their_spans_apart(spans: InMemorySpanExporter) -> None:
    gate = threading.Barrier(2, timeout=5)

    def meet(x: int) -> int:
        gate.wait()  # both runs are inside this node at once, on two replicas
        return x

    formation = Formation("pair").add_function("meet", meet, concurrency=2).add_function("inc", lambda x: x + 1)
    formation.connect("meet", "inc")
    with formation.start() as running:
        futures = [running.submit(i) for i in range(2)]
        run_ids = [f.result(timeout=5).run_id for f in futures]
    finished = spans.get_finished_spans()
    workflows = {_attrs(s)["wingman.run_id"]: s for s in by_name(finished)["invoke_workflow pair"]}
    assert sorted(workflows) == sorted(run_ids)
    nodes = [s for s in finished if s.name.startswith("execute_node")]
    assert len(nodes) == 4
    for node in nodes:
        own = workflows[_attrs(node)["wingman.run_id"]]
        assert parent_id(node) == span_id(own)
        assert node.context.trace_id == own.context.trace_id
    assert workflows[run_ids[0]].context.trace_id != workflows[run_ids[1]].context.trace_id


def test_a_failing_node_records_each_attempt_and_the_run_failure(spans: InMemorySpanExporter) -> None:
    def boom(x: int) -> int:
        raise ValueError(f"bad input {x}")

    formation = Formation("fragile").add_function("boom", boom, retries=1, backoff=0.01)
    with pytest.raises(FormationRuntimeError):
        formation.run(7)
    got = by_name(spans.get_finished_spans())
    attempts = got["execute_node boom"]
    assert [_attrs(a)["wingman.attempt"] for a in attempts] == [1, 2]
    for attempt in attempts:
        assert attempt.status.status_code is StatusCode.ERROR
        assert _attrs(attempt)["error.type"] == "ValueError"
        assert [e.name for e in attempt.events] == ["exception"]
        assert "bad input 7" in str(attempt.events[0].attributes)
    (workflow,) = got["invoke_workflow fragile"]
    assert {parent_id(a) for a in attempts} == {span_id(workflow)}
    assert workflow.status.status_code is StatusCode.ERROR
    assert _attrs(workflow)["error.type"] == "wingman_actors.errors.FormationRuntimeError"
    assert _attrs(workflow)["wingman.run.status"] == "failed"


def test_a_failing_agent_node_marks_its_session_node_and_run(spans: InMemorySpanExporter) -> None:
    agent = Agent("writer", provider=ScriptedProvider([AgentError("bad request", kind=ErrorKind.INVALID)]))
    with pytest.raises(FormationRuntimeError):
        Formation("w").add_agent("writer", agent).run("go")
    got = by_name(spans.get_finished_spans())
    (session,) = got["invoke_agent writer"]
    (node,) = got["execute_node writer"]
    (workflow,) = got["invoke_workflow w"]
    assert parent_id(session) == span_id(node) and parent_id(node) == span_id(workflow)
    for span in (session, node):
        assert span.status.status_code is StatusCode.ERROR
        assert _attrs(span)["error.type"] == "invalid"
    assert workflow.status.status_code is StatusCode.ERROR


def test_a_cancelled_run_ends_its_workflow_span(spans: InMemorySpanExporter) -> None:
    entered, release = threading.Event(), threading.Event()

    def wait(x: int) -> int:
        entered.set()
        release.wait(10)
        return x

    formation = Formation("c").add_function("wait", wait).add_function("inc", lambda x: x + 1).connect("wait", "inc")
    try:
        with formation.start() as running:
            future = running.submit(1)
            assert entered.wait(5)
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(timeout=1)
            (workflow,) = by_name(spans.get_finished_spans())["invoke_workflow c"]  # ended at the cancel
            release.set()
            (node,) = _wait_for(spans, "execute_node wait")  # the abandoned attempt ends when its code returns
    finally:
        release.set()
    attrs = _attrs(workflow)
    assert attrs["wingman.run.status"] == "cancelled"
    assert workflow.status.status_code is StatusCode.UNSET  # a cancellation is not an error
    assert "error.type" not in attrs
    assert parent_id(node) == span_id(workflow)
    assert "execute_node inc" not in by_name(spans.get_finished_spans())


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
