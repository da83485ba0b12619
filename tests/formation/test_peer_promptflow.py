"""Activate conditions and bypassed nodes, ported from Microsoft Prompt flow's own tests
(microsoft/promptflow, ``src/promptflow/tests/executor/unittests/executor/test_dag_manager.py``,
``src/promptflow/tests/executor/e2etests/test_activate.py`` and the flows they run under
``src/promptflow/tests/test_configs/flows/``).

A flow node's ``activate: {when: ${x}, is: v}`` is a conditional edge here
(``connect(x, node, when=...)``); a *bypassed* node is a ``skipped`` one; a node's inputs
referencing several nodes (``${a.output}``, ``${b.output}``) are a keyword fan-in; the flow's
``${inputs.x}`` are the run's input, handed on by a source node.

Deliberately different (DESIGN.md "Data flow", docs/formations.md "Routes" and "Joins"):
- Prompt flow hands a bypassed dependency to a parameter without a default as ``None`` (with a
  warning); ours fails the node with a ``PayloadError`` naming the parameter and saying to give
  it a default (``x: T | None = None``). A dict fan-in has no key for a skipped predecessor
  (Prompt flow: the key with ``None``).
- Prompt flow runs a node whose own ``activate`` condition holds even when every node it reads
  was bypassed; ours skips a node whose predecessors were all skipped. A node that must run on
  its own condition reads that condition's value from its own edge (a fan-in with the source),
  as :func:`test_a_node_whose_own_condition_holds_runs_with_a_default_for_its_skipped_input` does.
- A flow output referencing a bypassed node is ``None`` in Prompt flow; ours leaves the skipped
  sink out of ``outputs`` (``output`` is None when it was the single sink).
- A node without inputs takes no parameter in Prompt flow; a function node here always receives
  its predecessor's value, so it takes one (``lambda _: ...``), which validation says.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, PayloadError
from wingman_actors.formation.events import FormationEvent


def inputs() -> Formation:
    """A formation whose source ``inputs`` hands the run's input (the flow's inputs) on."""
    return Formation("flow").add_function("inputs", lambda x: x)


def test_nodes_reading_one_node_start_after_it_and_both_receive_its_output() -> None:
    """From test_dag_manager.py::test_pop_ready_nodes (node2 and node3 read ``${node1.output}``:
    ready only once node1 completed)."""
    order = Order()
    f = (Formation("flow").add_function("node1", lambda x: f"{x}!").add_function("node2", lambda v: f"2:{v}")
         .add_function("node3", lambda v: f"3:{v}").connect("node1", "node2").connect("node1", "node3"))
    result = f.run("value1", on_event=order)
    assert result.outputs == {"node2": "2:value1!", "node3": "3:value1!"}
    assert order.nodes[0] == "node1" and sorted(order.nodes[1:]) == ["node2", "node3"]


def test_a_node_whose_condition_fails_is_skipped_and_so_is_the_node_reading_only_it() -> None:
    """From test_dag_manager.py::test_pop_bypassed_nodes (node2's activate is not met: node2 and
    node4, which reads only node2, are bypassed; node3 reading node1 runs)."""
    calls = Counter()

    def node(name: str) -> Any:
        def run(v: Any) -> str:
            calls.hit(name)
            return f"{name}({v})"
        return run

    f = (Formation("flow").add_function("node1", node("node1")).add_function("node2", node("node2"))
         .add_function("node3", node("node3")).add_function("node4", node("node4"))
         .connect("node1", "node2", when=lambda v: v == "node1(world)").connect("node1", "node3")
         .connect("node2", "node4"))
    result = f.run("hello")
    assert {n: t.status for n, t in result.nodes.items()} == {
        "node1": "succeeded", "node2": "skipped", "node3": "succeeded", "node4": "skipped"}
    assert result.outputs == {"node3": "node3(node1(hello))"}
    assert calls.count("node2") == 0 and calls.count("node4") == 0


def test_a_node_whose_condition_holds_runs_and_so_does_what_reads_it() -> None:
    """From test_dag_manager.py::test_completed (node1's activate is met; node2 reads it; the
    flow completes with both)."""
    f = (inputs().add_function("node1", lambda x: {"output1": "value1"}).add_function("node2", lambda v: v["output1"])
         .connect("inputs", "node1", when=lambda x: x["text"] == "hello").connect("node1", "node2"))
    result = f.run({"text": "hello"})
    assert result.output == "value1"
    assert all(t.status == "succeeded" for t in result.nodes.values())


def test_a_skipped_nodes_trace_has_no_attempt_no_time_and_no_output() -> None:
    """From test_activate.py::assert_activate_node_run_result (a bypassed node's status is
    Bypassed and its output None)."""
    f = (inputs().add_function("job_info_extractor", lambda x: x).add_function("other", lambda x: x)
         .connect("inputs", "job_info_extractor", when=lambda x: x == "job").connect("inputs", "other", otherwise=True))
    trace = f.run("incident").nodes["job_info_extractor"]
    assert (trace.status, trace.attempts, trace.visits, trace.output, trace.outputs) == ("skipped", 0, 0, None, [])
    assert trace.started_at is None and trace.finished_at is None


def test_a_skipped_node_sends_a_skip_event_with_its_reason_and_never_starts() -> None:
    """From test_activate.py::test_all_nodes_bypassed (Prompt flow logs why a node is bypassed:
    "The node 'x' will be bypassed because the activate condition is not met")."""
    events: list[FormationEvent] = []
    f = (inputs().add_function("divide_num", lambda x: x / 2).add_function("echo", lambda x: x)
         .connect("inputs", "divide_num", when=lambda x: x > 10).connect("inputs", "echo", otherwise=True))
    f.run(3, on_event=events.append)
    skipped = [e for e in events if e.type.value == "node_skipped"]
    assert [e.node for e in skipped] == ["divide_num"]
    assert "'inputs'" in skipped[0].data["reason"] and "did not fire" in skipped[0].data["reason"]
    assert not any(e.type.value == "node_started" and e.node == "divide_num" for e in events)


def investigation() -> Formation:
    """conditional_flow_with_activate in small: an incident id picks the job-info extractor or
    the incident-info extractor; each has a retriever after it; ``investigation_method`` reads
    both branches and says which ran (keyword fan-in, defaults for the skipped one)."""

    def method(job_info_extractor: str | None = None, incident_info_extractor: str | None = None) -> dict[str, str]:
        return {"first": "Skip job info extractor" if job_info_extractor is None else "Execute job info extractor",
                "second": "Skip incident info extractor" if incident_info_extractor is None
                else "Execute incident info extractor"}

    return (Formation("investigation").add_function("incident_id_extractor", lambda x: x["incident_id"])
            .add_function("job_info_extractor", lambda i: f"job {i}")
            .add_function("icm_retriever", lambda j: f"icm for {j}")
            .add_function("incident_info_extractor", lambda i: f"incident {i}")
            .add_function("tsg_retriever", lambda i: f"tsg for {i}")
            .add_function("investigation_method", method)
            .connect("incident_id_extractor", "job_info_extractor", when=lambda i: i in (1, 2))
            .connect("incident_id_extractor", "incident_info_extractor", when=lambda i: i in (3, 4))
            .connect("job_info_extractor", "icm_retriever")
            .connect("incident_info_extractor", "tsg_retriever")
            .connect("job_info_extractor", "investigation_method")
            .connect("incident_info_extractor", "investigation_method"))


def test_the_investigation_flow_runs_one_branch_and_reports_which() -> None:
    """From test_activate.py::test_flow_run_activate (conditional_flow_with_activate: expected
    output ``{"first": "Skip job info extractor", "second": "Execute incident info extractor"}``,
    the job-info branch bypassed, every node with a run info)."""
    result = investigation().run({"incident_id": 3})
    assert result.outputs["investigation_method"] == {
        "first": "Skip job info extractor", "second": "Execute incident info extractor"}
    assert len(result.nodes) == 6
    assert [n for n, t in result.nodes.items() if t.status == "skipped"] == ["job_info_extractor", "icm_retriever"]
    assert result.outputs["tsg_retriever"] == "tsg for incident 3" and "icm_retriever" not in result.outputs


def test_a_fan_in_parameter_with_a_default_takes_it_when_its_node_was_skipped() -> None:
    """From test_dag_manager.py::get_node_valid_inputs (a bypassed dependency is not passed
    when the parameter has a default, so the default is used)."""

    def collect(switch_case_a: str | None = None, switch_case_b: str = "no B") -> str:
        return f"{switch_case_a}|{switch_case_b}"

    f = (inputs().add_function("switch_case_a", lambda x: "A ran").add_function("switch_case_b", lambda x: "B ran")
         .add_function("collect", collect)
         .connect("inputs", "switch_case_a", when=lambda x: x == "A")
         .connect("inputs", "switch_case_b", when=lambda x: x == "B")
         .connect("switch_case_a", "collect").connect("switch_case_b", "collect"))
    assert f.run("A").output == "A ran|no B"
    assert f.run("B").output == "None|B ran"


def test_a_fan_in_parameter_without_a_default_fails_its_node_naming_the_parameter_and_the_fix() -> None:
    """From test_dag_manager.py::get_node_valid_inputs (no default: Prompt flow passes None with
    a warning). Ours: a ``PayloadError`` naming the parameter and the fix (module docstring)."""

    def collect(switch_case_a: str, switch_case_b: str) -> str:
        return switch_case_a + switch_case_b

    f = (inputs().add_function("switch_case_a", lambda x: "A").add_function("switch_case_b", lambda x: "B")
         .add_function("collect", collect, retries=2, backoff=0.01)
         .connect("inputs", "switch_case_a", when=lambda x: x == "A")
         .connect("inputs", "switch_case_b", when=lambda x: x == "B")
         .connect("switch_case_a", "collect").connect("switch_case_b", "collect"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run("A")
    err = info.value
    assert err.node == "collect" and err.attempts == 1 and isinstance(err.__cause__, PayloadError)
    assert "switch_case_b" in str(err.__cause__) and "None = None" in str(err.__cause__)
    assert err.outputs == {"inputs": "A", "switch_case_a": "A"}


def test_a_dict_fan_in_has_no_key_for_a_skipped_node() -> None:
    """From conditional_flow_with_aggregate_bypassed's collect_node (reads both switch cases;
    the bypassed one's value is None in Prompt flow). Ours: the key is absent (module docstring)."""
    f = (inputs().add_function("switch_case_a", lambda x: "A").add_function("switch_case_b", lambda x: "B")
         .add_function("collect_node", lambda d: d)
         .connect("inputs", "switch_case_a", when=lambda x: x == "A")
         .connect("inputs", "switch_case_b", when=lambda x: x == "B")
         .connect("switch_case_a", "collect_node").connect("switch_case_b", "collect_node"))
    assert f.run("B").output == {"switch_case_b": "B"}


def test_a_node_reading_only_skipped_nodes_is_skipped_even_when_its_own_condition_holds() -> None:
    """From test_activate.py (all_depedencies_bypassed_with_activate_met: nodeA bypassed, nodeB's
    activate on ``${inputs.text}`` met, nodeB reads only nodeA). Prompt flow runs nodeB with None;
    ours skips what depends only on skipped nodes (module docstring)."""
    calls = Counter()

    def node_b(a: Any) -> Any:
        calls.hit("nodeB")
        return a

    f = (inputs().add_function("nodeA", lambda x: x).add_function("nodeB", node_b)
         .add_function("echo", lambda x: x)
         .connect("inputs", "nodeA", when=lambda x: x == "world").connect("inputs", "echo", otherwise=True)
         .connect("nodeA", "nodeB", when=lambda _: True))
    result = f.run("hi")
    assert result.nodes["nodeB"].status == "skipped" and calls.count("nodeB") == 0


def test_a_node_whose_own_condition_holds_runs_with_a_default_for_its_skipped_input() -> None:
    """From test_activate.py (all_depedencies_bypassed_with_activate_met: nodeB runs because its
    own activate condition is met, its input from the bypassed nodeA None): here nodeB's condition
    sits on its own edge from the flow's inputs, beside its data edge from nodeA."""

    def node_b(inputs: str, nodeA: str | None = None) -> str:
        return f"nodeB got {nodeA!r}"

    f = (inputs().add_function("nodeA", lambda x: x).add_function("nodeB", node_b)
         .connect("inputs", "nodeA", when=lambda x: x == "world")
         .connect("inputs", "nodeB", when=lambda x: x == "hi").connect("nodeA", "nodeB"))
    result = f.run("hi")
    assert result.output == "nodeB got None"
    assert result.nodes["nodeA"].status == "skipped" and result.nodes["nodeB"].status == "succeeded"


def test_a_condition_reading_a_skipped_node_is_never_evaluated_and_its_node_is_skipped() -> None:
    """From _dag_manager.py's rule tested by test_activate.py (a node whose activate condition
    references a bypassed node is bypassed)."""
    calls = Counter()

    def condition(v: Any) -> bool:
        calls.hit("condition")
        return True

    f = (inputs().add_function("first_node", lambda x: x).add_function("second_node", lambda x: x)
         .add_function("other", lambda x: x)
         .connect("inputs", "first_node", when=lambda x: x == "run").connect("inputs", "other", otherwise=True)
         .connect("first_node", "second_node", when=condition))
    result = f.run("skip")
    assert result.nodes["second_node"].status == "skipped" and calls.count("condition") == 0


def test_a_condition_is_read_for_its_truth_not_compared_with_true() -> None:
    """From test_activate.py (activate_condition_always_met; Prompt flow compares the
    condition's value with ``is:``): ours reads a predicate's result for its truth, so a
    non-empty string fires and an empty one does not."""
    f = (inputs().add_function("met", lambda x: f"met: {x}").add_function("not_met", lambda x: f"not met: {x!r}")
         .connect("inputs", "met", when=lambda x: x).connect("inputs", "not_met", otherwise=True))
    assert f.run("yes").outputs == {"met": "met: yes"}
    assert f.run("").outputs == {"not_met": "not met: ''"}


def test_a_node_without_inputs_takes_one_unused_parameter_and_validation_says_so() -> None:
    """From test_activate.py (activate_with_no_inputs: a node with no inputs, activated by the
    flow's input). Ours: a function node receives its predecessor's value (module docstring)."""
    f = inputs().add_function("no_input", lambda: "hello").connect("inputs", "no_input", when=lambda x: x == "go")
    with pytest.raises(FormationSetupError, match=r"no_input.*add a positional parameter for it") as info:
        f.validate()
    assert "lambda _:" in str(info.value)
    g = inputs().add_function("no_input", lambda _: "hello").connect("inputs", "no_input", when=lambda x: x == "go")
    g.add_function("other", lambda x: x).connect("inputs", "other", otherwise=True)
    assert g.run("go").outputs == {"no_input": "hello"}


def test_a_skipped_single_sink_leaves_no_output_and_the_run_succeeds() -> None:
    """From test_activate.py::test_all_nodes_bypassed (the output references a bypassed node:
    ``result.output["result"] is None``). Ours: no entry in ``outputs``, ``output`` None."""

    def second_node(_: Any) -> Any:
        raise ValueError("bypass me")

    f = (inputs().add_function("second_node", second_node, on_error="skip").add_function("third_node", lambda x: x)
         .connect("inputs", "second_node", "third_node"))
    result = f.run("hello")
    assert result.status == "succeeded" and result.output is None and result.outputs == {}
    assert result.nodes["third_node"].status == "skipped"


def test_a_skipped_sink_beside_a_finished_one_is_left_out_of_the_outputs() -> None:
    """From test_activate.py::test_all_nodes_bypassed (an output referencing a bypassed node;
    Prompt flow gives ``None`` for it, ours leaves it out)."""
    f = (inputs().add_function("third_node", lambda x: x).add_function("echo", lambda x: x)
         .connect("inputs", "third_node", when=lambda x: x == "third").connect("inputs", "echo", otherwise=True))
    result = f.run("hello")  # the two branches exclude each other (otherwise): the one output is echo's
    assert result.outputs == {"echo": "hello"} and result.output == "hello"
    assert result.nodes["third_node"].status == "skipped"


def test_a_condition_with_the_wrong_arity_is_refused_naming_the_edge() -> None:
    """From test_activate.py::test_invalid_activate_config ("The definition of activate config
    for node divide_num is incorrect")."""
    with pytest.raises(FormationSetupError, match=r"'inputs' → 'divide_num'.*must take one argument"):
        inputs().add_function("divide_num", lambda x: x).connect("inputs", "divide_num", when=lambda a, b: a == b)  # type: ignore[arg-type, misc]


def test_a_condition_that_raises_fails_its_node_naming_the_edge() -> None:
    """From test_activate.py::test_invalid_activate_config (a wrong activate config is an error
    naming the node; here one that only fails when evaluated)."""
    f = (inputs().add_function("divide_num", lambda x: x).add_function("echo", lambda x: x)
         .connect("inputs", "divide_num", when=lambda x: x["missing"]).connect("inputs", "echo", otherwise=True))
    with pytest.raises(FormationRuntimeError) as info:
        f.run({"num": 1})
    assert info.value.node == "inputs" and isinstance(info.value.__cause__, KeyError)
    assert "edge 'inputs' → 'divide_num' raised KeyError" in str(info.value)
