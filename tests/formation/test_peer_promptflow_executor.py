"""The flow executor, ported from Microsoft Prompt flow's own tests (microsoft/promptflow,
``src/promptflow/tests/executor/e2etests/test_executor_happypath.py``,
``test_executor_execution_failures.py``, ``test_executor_validation.py``,
``test_concurent_execution.py``, ``test_async.py``, ``test_traces.py``, and
``src/promptflow/tests/executor/unittests/executor/test_flow_nodes_scheduler.py``,
``test_flow_executor.py``; the same files under ``src/promptflow-core/tests/core/``).

``FlowExecutor.exec_line(inputs)`` is ``Formation.run(input)``; a line's ``node_run_infos``
are ``result.nodes``; ``load_and_exec_node`` is ``wingman_actors.testing.run_node``.

Deliberately different:
- When a node fails, Prompt flow lets the line's other running nodes finish before the line
  fails (``test_concurrent_run_with_exception``: "should at least finish the running job");
  ours fails the run at once and abandons the siblings in flight (their traces ``cancelled``),
  DESIGN.md "Supervision".
- A generator tool's output is consumed and joined (``"0123456789"``) by Prompt flow; ours
  refuses a generator function node at declaration, saying to return the collected values.
- ``node_concurrency=1`` runs a line's nodes one by one in Prompt flow; ours has no per-run
  node concurrency: independent nodes always run at once (``concurrency`` is replicas per node).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import threading
import time
import traceback
from typing import Any

import pytest

from tests.support.peers import Counter, Gate, a_until, sleeps_until_cancelled
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError, PayloadError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider, run_node


def raise_exception(msg: str) -> None:
    raise Exception(msg)


def raise_an_exception(s: str) -> str:
    """sync_tools_failures' tool: an exception raised from another."""
    try:
        raise_exception(f"In raise_exception: {s}")
    except Exception as e:
        raise Exception(f"In tool raise_an_exception: {s}") from e
    return s


async def raise_exception_async(msg: str) -> None:
    await asyncio.sleep(0)
    raise Exception(msg)


async def raise_an_exception_async(s: str) -> str:
    """async_tools_failures' tool."""
    try:
        await raise_exception_async(f"In raise_exception_async: {s}")
    except Exception as e:
        raise Exception(f"In tool raise_an_exception_async: {s}") from e
    return s


def test_a_line_runs_every_node_once_and_each_has_a_succeeded_trace() -> None:
    """From test_executor_happypath.py::test_executor_exec_line (status Completed; one node run
    info per node, named after it)."""
    f = (Formation("script_with_import").add_function("node1", str.strip).add_function("node2", str.upper)
         .add_function("node3", lambda s: s + "!").connect("node1", "node2", "node3"))
    result = f.run("  some_text ")
    assert result.status == "succeeded" and result.output == "SOME_TEXT!"
    assert list(result.nodes) == ["node1", "node2", "node3"]
    assert all(t.name == n and t.status == "succeeded" and t.attempts == 1 and t.visits == 1
               for n, t in result.nodes.items())


def test_a_node_reads_the_flows_inputs_and_another_nodes_output_at_once() -> None:
    """From test_dag_manager.py::test_get_node_valid_inputs and the flows' ``${inputs.text}`` /
    ``${node1.output}`` references (a keyword fan-in from the inputs node and node1)."""

    def summarize(inputs: dict[str, str], fetch: str) -> str:
        return f"{inputs['text']}: {fetch}"

    f = (Formation("web").add_function("inputs", lambda x: x).add_function("fetch", lambda x: f"page {x['url']}")
         .add_function("summarize", summarize).connect("inputs", "fetch", "summarize").connect("inputs", "summarize"))
    assert f.run({"url": "u", "text": "t"}).output == "t: page u"


def test_a_literal_input_is_bound_with_partial_and_its_type_still_checked() -> None:
    """From test_dag_manager.py::test_get_node_valid_inputs (``test_input2: "hello world"``, a
    literal beside the reference)."""

    def tool(test_input: int, test_input2: str) -> str:
        return f"{test_input} {test_input2}"

    f = Formation("literal").add_function("node1", functools.partial(tool, test_input2="hello world"))
    assert f.run("41").output == "41 hello world"
    with pytest.raises(FormationRuntimeError) as info:
        f.run("hello")
    assert isinstance(info.value.__cause__, PayloadError) and "int" in str(info.value.__cause__)


def test_a_flow_input_is_converted_to_the_parameters_type() -> None:
    """From test_executor_happypath.py::test_convert_flow_input_types (``{"num": "11"}`` gives
    11 for an int input)."""

    def divide_num(num: int) -> int:
        return num // 2

    assert Formation("simple_flow_with_python_tool").add_function("divide_num", divide_num).run("11").output == 5


def test_an_input_of_the_wrong_type_fails_once_naming_the_edge_and_the_type() -> None:
    """From test_executor_validation.py::test_flow_run_input_type_invalid ("Value for input
    'num' of node 'divide_num' is not type 'int'"); not retried: it would fail again."""

    def divide_num(num: int) -> int:
        return num // 2

    f = Formation("simple_flow_with_python_tool").add_function("divide_num", divide_num, retries=3, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as info:
        f.run("hello")
    err = info.value
    assert err.node == "divide_num" and err.attempts == 1 and isinstance(err.__cause__, PayloadError)
    assert "'input' → 'divide_num'" in str(err.__cause__) and "type int" in str(err.__cause__)


@pytest.mark.parametrize("tool,message", [
    (raise_an_exception, "In tool raise_an_exception: dummy_input"),
    (raise_an_exception_async, "In tool raise_an_exception_async: dummy_input"),
])
def test_a_failing_tool_fails_the_line_naming_the_node_and_its_message(tool: Any, message: str) -> None:
    """From test_executor_execution_failures.py::test_executor_exec_line_fail_with_exception
    ("Execution failure in 'sync_fail'", the tool's message; sync and async tools)."""
    f = Formation("tools_failures").add_function("fail", tool)
    with pytest.raises(FormationRuntimeError) as info:
        f.run("dummy_input")
    err = info.value
    assert err.node == "fail" and "node 'fail' failed" in str(err) and message in str(err)
    assert str(err.__cause__) == message


@pytest.mark.parametrize("tool,inner", [
    (raise_an_exception, "raise_exception"), (raise_an_exception_async, "raise_exception_async")])
def test_a_failing_tools_traceback_keeps_the_chain_down_to_the_first_raise(tool: Any, inner: str) -> None:
    """From test_executor_execution_failures.py::test_executor_exec_node_fail (the traceback
    shows ``raise_exception`` inside ``raise_an_exception`` and "The above exception was the
    direct cause of the following exception")."""
    with pytest.raises(FormationRuntimeError) as info:
        Formation("tools_failures").add_function("fail", tool).run("dummy_input")
    text = "".join(traceback.format_exception(info.value.__cause__))
    assert f"in {inner}" in text and f"in {tool.__name__}" in text
    assert "The above exception was the direct cause of the following exception" in text
    assert f"Exception: In {inner}: dummy_input" in text


def test_a_failed_lines_traces_keep_what_ran_before_and_the_failure() -> None:
    """From test_executor_execution_failures.py::test_executor_exec_line_fail (``raise_ex=False``:
    the line's run info carries status Failed, no output, and the error)."""
    f = (Formation("line").add_function("prepare", str.strip).add_function("fail", raise_an_exception)
         .add_function("after", str.upper).connect("prepare", "fail", "after"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(" dummy_input ")
    nodes = info.value.nodes
    assert (nodes["prepare"].status, nodes["prepare"].output) == ("succeeded", "dummy_input")
    assert (nodes["fail"].status, nodes["fail"].output, nodes["fail"].attempts) == ("failed", None, 1)
    assert nodes["fail"].error == "Exception: In tool raise_an_exception: dummy_input"
    assert nodes["after"].status == "skipped" and nodes["fail"].duration_s >= 0


def test_a_single_node_runs_alone_with_its_dependencys_output() -> None:
    """From test_executor_happypath.py::test_executor_exec_node (``load_and_exec_node`` with
    ``dependency_nodes_outputs={"node1": "text"}``)."""
    f = (Formation("script_with___file__").add_function("node1", str.strip).add_function("node2", lambda s: s + "!")
         .connect("node1", "node2"))
    run = run_node(f, "node2", "text")
    assert run.output == "text!" and run.trace.status == "succeeded" and run.trace.duration_s >= 0


def test_a_single_fan_in_node_runs_alone_with_each_dependencys_output() -> None:
    """From test_executor_happypath.py::test_executor_exec_node (simple_aggregation's accuracy
    node, ``flow_inputs={"text": "A"}``, ``dependency_nodes_outputs={"passthrough": "B"}``)."""

    def accuracy(inputs: str, passthrough: str) -> str:
        return f"{inputs}/{passthrough}"

    f = (Formation("simple_aggregation").add_function("inputs", lambda x: x).add_function("passthrough", lambda x: x)
         .add_function("accuracy", accuracy).connect("inputs", "passthrough", "accuracy").connect("inputs", "accuracy"))
    assert run_node(f, "accuracy", {"inputs": "A", "passthrough": "B"}).output == "A/B"


def test_a_single_node_run_of_an_unknown_node_names_the_nodes_there_are() -> None:
    """From test_executor_validation.py::test_single_node_input_type_invalid ("Node
    'bad_node_name' is not found in flow")."""
    f = Formation("simple_flow_with_python_tool").add_function("divide_num", lambda x: x)
    with pytest.raises(KeyError, match=r"no node 'bad_node_name'; nodes: divide_num"):
        run_node(f, "bad_node_name", 22)


def test_a_single_node_run_takes_a_node_override() -> None:
    """From test_executor_happypath.py::test_executor_node_overrides (``node_override`` replaces
    a node's setting for one run)."""
    f = Formation("web").add_function("classify_with_llm", lambda x: f"real {x}")
    assert run_node(f, "classify_with_llm", "x", fn=lambda x: f"override {x}").output == "override x"
    assert f.run("x").output == "real x"


def test_a_duplicate_node_name_is_refused_naming_it() -> None:
    """From test_executor_validation.py (nodes_names_duplicated: "Node with name
    'stringify_num' appears more than once")."""
    f = Formation("nodes_names_duplicated").add_function("stringify_num", str)
    with pytest.raises(FormationSetupError, match=r"already has a node named 'stringify_num'; pick another name"):
        f.add_function("stringify_num", repr)


def test_a_reference_to_a_missing_node_is_refused_naming_both() -> None:
    """From test_executor_validation.py (node_reference_not_found: "Node 'divide_num_2'
    references a non-existent node 'divide_num_3'")."""
    f = Formation("node_reference_not_found").add_function("divide_num_2", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"connect\('divide_num_3', 'divide_num_2'\): no node named 'divide_num_3'"):
        f.connect("divide_num_3", "divide_num_2")


def test_a_circular_dependency_is_refused_naming_the_nodes_in_it() -> None:
    """From test_executor_validation.py (node_circular_dependency: "review the reference
    relationships for the nodes ['divide_num', 'divide_num_1', 'divide_num_2']")."""
    f = (Formation("node_circular_dependency").add_function("divide_num", lambda x: x)
         .add_function("divide_num_1", lambda x: x).add_function("divide_num_2", lambda x: x)
         .connect("divide_num", "divide_num_1", "divide_num_2", "divide_num"))
    with pytest.raises(FormationSetupError, match=r"cycle divide_num → divide_num_1 → divide_num_2 → divide_num "
                                                  r"has no conditional edge"):
        f.validate()


def test_an_output_that_is_no_json_is_kept_as_is_and_its_text_in_to_dict() -> None:
    """From test_executor_validation.py::test_flow_run_execution_errors (flow_output_unserializable:
    Prompt flow fails the line, "The output value is not JSON serializable"). Ours keeps the
    object in ``output``; ``to_dict()`` gives its ``str``, so the result always dumps."""

    class UnserializableClass:
        def __str__(self) -> str:
            return "UnserializableClass(22)"

    value = UnserializableClass()
    result = Formation("flow_output_unserializable").add_function("content", lambda x: value).run("22")
    assert result.output is value
    dumped = json.loads(json.dumps(result.to_dict()))
    assert dumped["output"] == "UnserializableClass(22)" and dumped["nodes"]["content"]["output"] == "UnserializableClass(22)"


def test_a_generator_tool_is_refused_at_declaration_saying_to_collect_it() -> None:
    """From test_flow_executor.py::TestEnsureNodeResultIsSerializable (a streaming tool's output
    is consumed and merged, ``"0123456789"``). Ours refuses it (module docstring)."""

    def streaming_tool(_: Any) -> Any:
        yield from range(10)

    with pytest.raises(FormationSetupError, match=r"'streaming_tool' is a generator function.*return list\(\.\.\.\)"):
        Formation("generator_tools").add_function("streaming_tool", streaming_tool).validate()


def test_a_tool_with_init_is_a_callable_object_keeping_what_init_set() -> None:
    """From test_executor_happypath.py::test_executor_for_script_tool_with_init (a class tool
    whose ``__init__`` takes ``init_key``: ``{"input": "World"}`` gives "Hello World")."""

    class ScriptToolWithInit:
        def __init__(self, init_key: str) -> None:
            self.init_key = init_key

        def __call__(self, input: str) -> str:
            return f"{self.init_key} {input}"

    assert Formation("script_tool_with_init").add_function("node", ScriptToolWithInit("Hello")).run("World").output \
        == "Hello World"


def test_independent_nodes_of_a_line_run_at_once() -> None:
    """From test_concurent_execution.py::test_concurrent_run (four wait nodes in one line run
    concurrently: the line takes less than their sum)."""
    barrier = threading.Barrier(4, timeout=5)

    def wait(x: int) -> int:
        barrier.wait()  # breaks, failing the node, unless all four are in at once
        return x

    f = Formation("python_tool_concurrent_run").add_function("inputs", lambda x: x)
    f.add_function("combine", lambda d: sorted(d.values()))
    for i in range(4):
        f.add_function(f"wait_{i}", functools.partial(lambda i, x: wait(x + i), i)).connect("inputs", f"wait_{i}")
        f.connect(f"wait_{i}", "combine")
    assert f.run(10).output == [10, 11, 12, 13]


def test_a_failing_node_fails_the_line_at_once_and_cancels_the_nodes_in_flight(held: Gate) -> None:
    """From test_concurent_execution.py::test_concurrent_run_with_exception and
    test_flow_nodes_scheduler.py::test_future_cancelled_for_exception (the other futures are
    cancelled). Prompt flow waits for the running ones first; ours does not (module docstring)."""
    calls = Counter()

    def fail(_: Any) -> None:
        assert held.reached.wait(5)
        raise ValueError("wait_1 failed")

    def after(x: Any) -> Any:
        calls.hit("after")
        return x

    f = (Formation("python_tool_concurrent_run").add_function("inputs", lambda x: x).add_function("wait_0", held)
         .add_function("wait_1", fail).add_function("after", after)
         .connect("inputs", "wait_0", "after").connect("inputs", "wait_1"))
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    assert time.monotonic() - started < 3 and not held.opened.is_set()
    assert info.value.node == "wait_1" and info.value.nodes["wait_0"].status == "cancelled"
    assert info.value.nodes["after"].status == "skipped" and calls.count("after") == 0


def test_async_and_sync_nodes_mix_in_one_line() -> None:
    """From test_async.py (async_tools_with_sync_tools: async_passthrough, async_passthrough1,
    sync_passthrough1)."""

    async def async_passthrough(s: str) -> str:
        await asyncio.sleep(0.01)
        return s + " a"

    def sync_passthrough1(s: str) -> str:
        return s + " s"

    f = (Formation("async_tools_with_sync_tools").add_function("async_passthrough", async_passthrough)
         .add_function("sync_passthrough1", sync_passthrough1).add_function("async_passthrough1", async_passthrough)
         .connect("async_passthrough", "sync_passthrough1", "async_passthrough1"))
    result = f.run("Hello")
    assert result.output == "Hello a s a" and all(t.status == "succeeded" for t in result.nodes.values())


def test_two_async_nodes_of_a_line_run_at_once() -> None:
    """From test_async.py::test_executor_node_concurrency (with node_concurrency 2, each of two
    async nodes starts before the other ends)."""
    started = {"async_passthrough1": threading.Event(), "async_passthrough2": threading.Event()}

    def passthrough(me: str, other: str) -> Any:
        async def step(s: str) -> str:
            started[me].set()
            assert await a_until(started[other].is_set), f"{other} did not start while {me} ran"
            return f"{me}: {s}"
        return step

    f = (Formation("async_tools").add_function("async_passthrough", lambda s: s)
         .add_function("async_passthrough1", passthrough("async_passthrough1", "async_passthrough2"))
         .add_function("async_passthrough2", passthrough("async_passthrough2", "async_passthrough1"))
         .connect("async_passthrough", "async_passthrough1").connect("async_passthrough", "async_passthrough2"))
    assert f.run("Hello").outputs == {"async_passthrough1": "async_passthrough1: Hello",
                                      "async_passthrough2": "async_passthrough2: Hello"}


def test_an_async_nodes_timeout_cancels_its_coroutine_and_fails_the_line() -> None:
    """From test_executor_timeout.py (a line past its limit fails, "execution timeout for
    exceeding"), on a node's own ``timeout``: the awaited coroutine is cancelled."""
    cancelled = threading.Event()
    f = (Formation("one_line_of_bulktest_timeout").add_function("my_python_tool", lambda x: x)
         .add_function("my_python_tool_with_failed_line", sleeps_until_cancelled(cancelled), timeout=0.2)
         .connect("my_python_tool", "my_python_tool_with_failed_line"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(2)
    err = info.value
    assert err.node == "my_python_tool_with_failed_line" and isinstance(err.__cause__, NodeTimeoutError)
    assert "timed out after 0.2s" in str(err.__cause__) and err.outputs == {"my_python_tool": 2}
    assert cancelled.wait(2)


def test_every_node_reports_its_start_and_end_in_dependency_order() -> None:
    """From test_traces.py and test_executor_happypath.py (``api_calls``: one child per node, with
    start and end times; the flow's ``system_metrics["duration"]``)."""
    events: list[FormationEvent] = []
    f = (Formation("web_classification").add_function("fetch", lambda u: f"page {u}")
         .add_function("summarize", lambda t: t[:6]).add_function("classify", lambda t: "App")
         .connect("fetch", "summarize", "classify"))
    result = f.run("url", on_event=events.append)
    assert [e.node for e in events if e.type.value == "node_started"] == ["fetch", "summarize", "classify"]
    finished = {e.node: e.data["output"] for e in events if e.type.value == "node_finished"}
    assert finished == {"fetch": "page url", "summarize": "page u", "classify": "App"}
    for trace in result.nodes.values():
        assert trace.started_at is not None and trace.finished_at is not None
        assert trace.started_at <= trace.finished_at and trace.duration_s >= 0
    assert result.duration_s >= sum(t.duration_s for t in result.nodes.values()) * 0.5


def test_agent_nodes_tokens_are_summed_into_the_lines_usage() -> None:
    """From test_traces.py::test_executor_openai_api_flow (``system_metrics["total_tokens"] > 0``
    summed over the line's LLM calls)."""
    f = (Formation("openai_chat_api_flow")
         .add_agent("chat", Agent("chat", provider=ScriptedProvider(["a joke about fruit"])))
         .add_agent("rate", Agent("rate", provider=ScriptedProvider(["funny"]))).connect("chat", "rate"))
    result = f.run("tell a joke")
    per_node = [result.nodes[n].usage.total_tokens for n in ("chat", "rate")]
    assert all(t > 0 for t in per_node) and result.usage.total_tokens == sum(per_node)


def test_a_dataclass_output_is_kept_as_is_and_dumped_as_its_fields() -> None:
    """From promptflow-core test_eager_flow.py::test_flow_run (flow_with_dataclass_output:
    ``is_dataclass(x) and x.text == "text" and x.models == ["model"]``)."""

    @dataclasses.dataclass
    class Output:
        text: str
        models: list[str]

    result = Formation("flow_with_dataclass_output").add_function("flow", lambda x: Output(x["text"], x["models"])) \
        .run({"text": "text", "models": ["model"]})
    assert dataclasses.is_dataclass(result.output) and result.output == Output("text", ["model"])
    assert result.to_dict()["output"] == {"text": "text", "models": ["model"]}


def test_two_lines_through_one_async_node_run_at_once() -> None:
    """From promptflow-core test_eager_flow.py::test_flow_run_with_function_entry_async (two
    ``exec_line_async`` tasks of ``func_entry_async``: "The two tasks should run concurrently")."""
    arrived: set[str] = set()

    async def func_entry_async(input_str: str) -> str:
        arrived.add(input_str)
        assert await a_until(lambda: len(arrived) == 2), "the other line did not start meanwhile"
        return "Hello " + input_str

    f = Formation("func_entry_async").add_function("entry", func_entry_async)

    async def main() -> list[str]:
        async with f.astart() as running:
            results = await asyncio.gather(running.asubmit("world"), running.asubmit("there"))
        return [r.output for r in results]

    assert asyncio.run(main()) == ["Hello world", "Hello there"]
