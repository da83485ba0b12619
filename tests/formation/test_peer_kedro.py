"""Behaviours ported from Kedro's own test suite (kedro-org/kedro, ``tests/pipeline/`` and
``tests/runner/``): pipelines of nodes, their validation, and what the sequential and
thread runners do with them. ``test_peer_kedro_modular.py`` takes modular pipelines
(namespaces, nesting); ``tests/durable/test_peer_kedro.py`` takes resuming after a failure;
``tests/launcher/test_peer_kedro.py`` takes ``kedro run``.

A Kedro pipeline is a formation; a node is a function node; a dataset written by one node
and read by another is an edge (a node's several inputs are a fan-in: keyword arguments
named after the predecessors); Kedro's free outputs are our sinks' outputs. The
``SequentialRunner`` and ``ThreadRunner`` are the threads backend (nodes of independent
branches run at once); the ``ParallelRunner`` is ``backend="ray"``.

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- Kedro's outputs are every dataset no node reads; ours are the sinks' outputs (a node's
  value read by another node is on its trace, ``result.nodes[name].output``).
- An empty Kedro pipeline is legal; an empty formation is a setup error.
- A Kedro node may take no input (``node(random, None, "A")``); our sources receive the
  run's input, so a source function takes one positional argument.
- Kedro refuses to save ``None`` (``DatasetError``); ``None`` is a value here and flows on.
- Kedro saves each chunk a generator node yields; our nodes output one value, so a
  generator function is refused at declaration with the fix (``return list(...)``).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import pytest

from tests.support.peers import InFlight, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError

KEDRO = "kedro-org/kedro"


def identity(x: Any) -> Any:
    return x


def fan_in(c: Any, d: Any, e: Any) -> tuple[Any, Any, Any]:
    return (c, d, e)


def fan_out_fan_in() -> Formation:
    """Kedro's ``fan_out_fan_in`` fixture: A → B → (C, D, E) → Z."""
    f = Formation("fan_out_fan_in")
    for name in ("b", "c", "d", "e"):
        f.add_function(name, identity)
    f.add_function("z", fan_in)
    return f.connect("b", "c", "z").connect("b", "d", "z").connect("b", "e", "z")


def exception_fn(_: Any) -> Any:
    raise Exception("test exception")


# --- runners: results ------------------------------------------------------------------------


def test_a_fan_out_fan_in_formation_gives_the_join_each_branchs_value_by_keyword() -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestValidSequentialRunner::test_run_without_plugin_manager."""
    result = fan_out_fan_in().run(42)
    assert result.output == (42, 42, 42)
    assert result.outputs == {"z": (42, 42, 42)}


def test_a_join_with_one_parameter_receives_the_dict_of_its_predecessors_values() -> None:
    """Ported from kedro-org/kedro tests/runner/conftest.py::fan_in (``def fan_in(*args)``: a
    node reading several datasets as positional arguments); ours gets them as one dict keyed
    by predecessor name."""
    f = fan_out_fan_in()
    f.graph.nodes["z"]["fn"] = lambda values: tuple(sorted(values.items()))
    assert f.run(7).output == (("c", 7), ("d", 7), ("e", 7))


def test_nodes_declared_out_of_order_run_in_the_order_their_edges_give() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestValidPipeline::test_grouped_nodes
    (``branchless_pipeline``: nodes listed E, D, C, A, B run A → B → C → D → E)."""
    f = Formation("branchless")
    for name in ("e", "d", "c", "a", "b"):
        f.add_function(name, identity)
    f.connect("a", "b", "c", "d", "e")
    order = Order()
    assert f.run("x", on_event=order).output == "x"
    assert order.nodes == ["a", "b", "c", "d", "e"]


def complex_pipeline() -> Formation:
    """Kedro's ``pipeline_list_with_lists``: node9 → node8 → node7 → (node6 → node5,
    node4 → (node2, node3) → node1), node1 also reading node4's output."""
    f = Formation("complex")
    for name in ("node9", "node8", "node7", "node6", "node5", "node4", "node2", "node3"):
        f.add_function(name, identity)

    def node1(node4: str, node2: str, node3: str) -> str:
        return node4 + node2 + node3

    f.add_function("node1", node1)
    f.connect("node9", "node8", "node7", "node6", "node5").connect("node7", "node4", "node2", "node1")
    return f.connect("node4", "node3", "node1").connect("node4", "node1")


def test_the_graph_tells_each_nodes_dependencies() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestValidPipeline::test_node_dependencies."""
    graph = complex_pipeline().graph
    assert {n: set(graph.predecessors(n)) for n in graph} == {
        "node1": {"node2", "node3", "node4"}, "node2": {"node4"}, "node3": {"node4"}, "node4": {"node7"},
        "node5": {"node6"}, "node6": {"node7"}, "node7": {"node8"}, "node8": {"node9"}, "node9": set(),
    }


def test_the_runs_outputs_are_its_sinks_and_the_values_other_nodes_read_stay_on_their_traces() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestValidPipeline::test_outputs
    (``pipeline_list_with_lists`` outputs L, G and N); Kedro also counts as outputs the
    datasets no node reads (L, G) beside ones read by others, ours are the sinks' values."""
    result = complex_pipeline().run("a")
    assert result.outputs == {"node5": "a", "node1": "aaa"}
    assert result.nodes["node8"].output == "a" and result.nodes["node3"].output == "a"


def test_disjoint_parts_each_receive_the_run_input_and_each_sink_is_an_output() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::disjoint_pipeline (two separate
    chains A → B → C and D → E → F, both free inputs fed)."""
    f = Formation("disjoint")
    for name, fn in (("node1", str.upper), ("node2", str.strip), ("node4", str.lower), ("node3", str.title)):
        f.add_function(name, fn)
    result = f.connect("node1", "node2").connect("node4", "node3").run(" mIx ")
    assert result.outputs == {"node2": "MIX", "node3": " Mix "}


def test_a_source_function_taking_no_argument_is_refused_with_the_fix() -> None:
    """Ported from kedro-org/kedro tests/runner/conftest.py::branchless_no_input_pipeline
    (``node(random, None, "A")``); Kedro's node may take no input, our sources receive the run
    input, and the error says to add a parameter for it."""
    with pytest.raises(FormationSetupError, match=r"source function node 'node5'.*`def step\(_\): \.\.\.`"):
        Formation("no_input").add_function("node5", random.random).add_function("node4", identity).connect(
            "node5", "node4").validate()
    f = Formation("no_input").add_function("node5", lambda _: 0.5).add_function("node4", identity)
    assert f.connect("node5", "node4").run(None).output == 0.5


def test_a_node_returning_none_passes_none_to_the_next_node() -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSeqentialRunnerBranchlessPipeline::test_node_returning_none;
    Kedro refuses to save None (``DatasetError``), here None is a value like any other."""
    f = Formation("none").add_function("a", identity).add_function("b", lambda _: None)
    f.add_function("c", lambda value: ("got", value))
    assert f.connect("a", "b", "c").run(1).output == ("got", None)


def test_a_value_read_by_two_nodes_reaches_both_and_one_readers_change_never_reaches_the_other() -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSequentialRunnerRelease::test_count_multiple_loads
    (one dataset loaded by ``bob`` and ``fred``)."""

    def bob(rows: list[int]) -> list[int]:
        rows.append(99)
        return rows

    def fred(rows: list[int]) -> list[int]:
        time.sleep(0.02)  # after bob changed its copy
        return rows

    f = Formation("loads").add_function("source", lambda _: [1, 2]).add_function("bob", bob).add_function("fred", fred)
    result = f.connect("source", "bob").connect("source", "fred").run(None)
    assert result.outputs == {"bob": [1, 2, 99], "fred": [1, 2]}
    assert result.nodes["source"].output == [1, 2]


def test_an_async_def_node_runs_beside_plain_ones() -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSeqentialRunnerBranchlessPipeline::test_no_datasets
    (``is_async=True``: loading and saving asynchronously); an ``async def`` node is awaited."""

    async def slow_identity(x: int) -> int:
        await asyncio.sleep(0.01)
        return x

    f = Formation("is_async").add_function("node1", slow_identity).add_function("node2", identity)
    assert f.connect("node1", "node2").run(42).output == 42


# --- runners: concurrency ----------------------------------------------------------------


def test_independent_branches_run_at_the_same_time_on_the_threads_backend() -> None:
    """Ported from kedro-org/kedro tests/runner/test_thread_runner.py::TestMaxWorkers::test_specified_max_workers
    (the fan-out needs three threads at once)."""
    meet = threading.Barrier(3, timeout=5)

    def branch(x: int) -> int:
        meet.wait()  # all three branches must be in flight together, or this breaks
        return x

    f = fan_out_fan_in()
    for name in ("c", "d", "e"):
        f.graph.nodes[name]["fn"] = branch
    assert f.run(1, timeout=10).output == (1, 1, 1)


def test_replicas_bound_how_many_inputs_of_one_node_are_worked_on_at_once() -> None:
    """Ported from kedro-org/kedro tests/runner/test_thread_runner.py::TestMaxWorkers::test_specified_max_workers
    (``max_workers``); ours is the node's ``concurrency``."""
    flight = InFlight()

    def work(x: int) -> int:
        with flight:
            time.sleep(0.03)
        return x

    with Formation("replicas").add_function("work", work, concurrency=2).start() as running:
        futures = [running.submit(i) for i in range(6)]
        assert [f.result(timeout=10).output for f in futures] == list(range(6))
    assert flight.peak == 2


@pytest.mark.parametrize("policy", [{"concurrency": -1}, {"concurrency": 0}])
def test_a_concurrency_below_one_is_refused_naming_the_node(policy: dict[str, int]) -> None:
    """Ported from kedro-org/kedro tests/runner/test_thread_runner.py::TestMaxWorkers::test_init_with_negative_process_count."""
    with pytest.raises(FormationSetupError, match=r"node 'work': concurrency must be an int >= 1"):
        Formation("bad").add_function("work", identity, **policy)


# --- runners: failures -------------------------------------------------------------------


def test_a_node_that_raises_fails_the_run_naming_it_and_its_cause_and_keeping_what_finished() -> None:
    """Ported from kedro-org/kedro tests/runner/test_thread_runner.py::TestInvalidThreadRunner::test_task_exception."""
    f = fan_out_fan_in().add_function("x", exception_fn).connect("z", "x")
    with pytest.raises(FormationRuntimeError, match=r"node 'x' failed after 1 attempt\(s\).*test exception") as err:
        f.run(42)
    assert err.value.node == "x" and err.value.attempts == 1
    assert err.value.outputs["z"] == (42, 42, 42)
    assert err.value.nodes["x"].status == "failed" and "test exception" in (err.value.nodes["x"].error or "")


def test_a_failure_at_the_first_node_leaves_every_other_node_unreached() -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSuggestResumeScenario::test_suggest_resume_scenario
    (``node1_A`` fails: "No nodes ran")."""
    f = Formation("chain").add_function("node1", exception_fn).add_function("node2", identity)
    with pytest.raises(FormationRuntimeError) as err:
        f.connect("node1", "node2").run(0)
    assert {n: (t.status, t.attempts) for n, t in err.value.nodes.items()} == {
        "node1": ("failed", 1), "node2": ("skipped", 0)}
    assert err.value.outputs == {}


# --- malformed pipelines -----------------------------------------------------------------


def test_two_nodes_of_one_name_are_refused_naming_it() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_duplicate_free_nodes."""
    f = Formation("dupes").add_function("same_name", identity)
    with pytest.raises(FormationSetupError, match=r"already has a node named 'same_name'; pick another name"):
        f.add_function("same_name", str.upper)
    assert f.graph.nodes["same_name"]["fn"] is identity  # the first declaration is kept


def test_a_circular_dependency_without_a_condition_is_refused_naming_the_cycle() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_circle_case."""
    f = Formation("circle").add_function("start", identity)
    for name in ("node1", "node2", "node3"):
        f.add_function(name, identity)
    f.connect("start", "node1", "node2", "node3", "node1")
    with pytest.raises(FormationSetupError, match=r"cycle node1 → node2 → node3 → node1 has no conditional edge"):
        f.validate()


def test_a_node_reading_its_own_output_without_a_condition_is_refused() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_circle_case
    (the shortest circle: a node whose input is its own output)."""
    f = Formation("self").add_function("start", identity).add_function("node1", identity).connect("start", "node1")
    with pytest.raises(FormationSetupError, match=r"cycle node1 → node1 has no conditional edge"):
        f.connect("node1", "node1").validate()


def test_an_empty_formation_is_refused_saying_how_to_declare_a_node() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestValidPipeline::test_empty_case;
    Kedro allows an empty pipeline, an empty formation is a setup error."""
    with pytest.raises(FormationSetupError, match=r"the graph has no nodes; declare at least one with add_function"):
        Formation("empty").run(1)


def test_connecting_an_unknown_node_names_it_and_the_closest_declared_one() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_from_nodes_unknown
    and ::test_only_nodes_with_namespacing ("Did you mean: ...?")."""
    f = Formation("names").add_function("node1", identity).add_function("missing_nod", identity)
    with pytest.raises(FormationSetupError, match=r"no node named 'missing_node' \(did you mean 'missing_nod'\?\)"):
        f.connect("node1", "missing_node")
    assert f.graph.number_of_edges() == 0


def test_every_problem_of_a_hand_built_graph_is_reported_at_once() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_unique_outputs
    (every non-unique output listed in one error)."""
    f = Formation("many").add_function("a", identity).add_function("b", identity)
    f.graph.add_edge("a", "ghost")
    f.graph.add_edge("b", "b")
    with pytest.raises(FormationSetupError) as err:
        f.validate()
    assert "node 'ghost' has no kind" in str(err.value) and "cycle b → b" in str(err.value)
    assert len(err.value.problems) >= 2


# --- generator nodes ---------------------------------------------------------------------


def chunks(x: int) -> Any:
    yield x
    yield x + 1


def test_a_generator_function_node_is_refused_at_declaration_with_the_fix() -> None:
    """Ported from kedro-org/kedro tests/runner/test_run_generator_node.py (a node that yields
    chunks); ours outputs one value, and a generator handed on would reach only one of two
    readers, so it is refused with the fix."""
    f = Formation("gen").add_function("chunks", chunks).add_function("a", list).add_function("b", list)
    f.connect("chunks", "a").connect("chunks", "b")
    with pytest.raises(FormationSetupError, match=r"function node 'chunks' is a generator function.*list\("):
        f.validate()


def test_an_async_generator_function_node_is_refused_at_declaration() -> None:
    """Ported from kedro-org/kedro tests/runner/test_run_generator_node.py (generator nodes, with
    ``is_async``)."""

    async def achunks(x: int) -> Any:
        yield x

    with pytest.raises(FormationSetupError, match=r"function node 'achunks' is an async generator function"):
        Formation("agen").add_function("achunks", achunks).validate()


def test_a_plain_function_returning_a_generator_fails_its_node_with_the_fix() -> None:
    """Ported from kedro-org/kedro tests/runner/test_run_generator_node.py; a lambda returning a
    generator expression is caught when it returns, before any reader consumes it."""
    f = Formation("genexpr").add_function("split", lambda text: (w for w in text.split()))
    f.add_function("a", list).add_function("b", list).connect("split", "a").connect("split", "b")
    with pytest.raises(FormationRuntimeError, match=r"node 'split'.*returned a generator.*list\(") as err:
        f.run("a b")
    assert err.value.node == "split"


def test_a_map_function_that_is_a_generator_function_is_refused_at_declaration() -> None:
    """Ported from kedro-org/kedro tests/runner/test_run_generator_node.py (a generator per item)."""
    with pytest.raises(FormationSetupError, match=r"map node 'each' is a generator function"):
        Formation("gen_map").add_map("each", chunks).validate()


def test_a_map_function_returning_a_generator_for_an_item_fails_the_map_naming_the_item() -> None:
    """Ported from kedro-org/kedro tests/runner/test_run_generator_node.py (a generator per item,
    from a plain function)."""
    f = Formation("genexpr_map").add_map("each", lambda n: (i for i in range(n)), retries=2)
    with pytest.raises(FormationRuntimeError, match=r"map node 'each' \(item 0\) returned a generator.*list\(") as err:
        f.run([2, 3])
    assert err.value.node == "each" and err.value.attempts == 1  # never retried: it would fail again
