"""Modular pipelines ported from Kedro's own test suite (kedro-org/kedro,
``tests/pipeline/test_modular_pipeline.py``, ``test_pipeline.py``'s namespace tests and
``tests/runner/test_parallel_runner.py``): a pipeline reused under a namespace, nested, its
inputs and outputs wired to the outer pipeline, and the same on ``backend="ray"``.

``pipeline(pipe, namespace="PREFIX")`` is ``add_formation("PREFIX", pipe)``: the inner
nodes are named by path (``"PREFIX/node1"``, Kedro's ``"PREFIX.node1"``) in events and
results. Kedro's ``inputs=``/``outputs=`` mappings wire datasets by name; ours wires by
edge: the formation node's input reaches every inner source, and its output is the inner
single sink's value, or the dict of the sinks' values by name.

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- Kedro renames a namespaced dataset to connect it (``inputs={"A": "A_new"}``); an inner
  source here receives the formation node's whole input (a dict keyed by the outer
  predecessors when it has several), not keyword arguments by dataset name.
- A function after a formation node with several sinks receives their dict, not keyword
  arguments named after the inner sinks (its one predecessor is the formation node).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter, Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError


def inc(x: int) -> int:
    return x + 1


def double(x: int) -> int:
    return 2 * x


def chain(name: str = "inner") -> Formation:
    """node1 (+1) → node2 (*2)."""
    return Formation(name).add_function("node1", inc).add_function("node2", double).connect("node1", "node2")


def paths(order: Order) -> list[str]:
    return sorted(order.nodes)


def test_one_pipeline_reused_under_two_namespaces_runs_twice_with_its_nodes_named_apart() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_prefix_dataset_names."""
    inner = chain()
    outer = Formation("outer").add_formation("first", inner).add_formation("second", inner).connect("first", "second")
    order = Order()
    result = outer.run(1, on_event=order)
    assert result.output == 10  # (1 + 1) * 2 = 4, then (4 + 1) * 2
    assert paths(order) == ["first", "first/node1", "first/node2", "second", "second/node1", "second/node2"]
    assert (result.nodes["first/node2"].output, result.nodes["second/node2"].output) == (4, 10)


def test_two_namespaces_of_one_pipeline_side_by_side_each_get_the_input() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::pipeline_with_namespaces
    (``katie``, ``lisa``, ``john``: one pipeline's nodes in several namespaces)."""
    inner = chain()
    outer = Formation("outer").add_function("src", inc)
    for ns in ("katie", "lisa"):
        outer.add_formation(ns, inner).connect("src", ns)
    result = outer.run(0)
    assert result.outputs == {"katie": 4, "lisa": 4}
    assert {n for n in result.nodes if n.startswith("katie/")} == {"katie/node1", "katie/node2"}


def test_a_pipeline_nested_two_namespaces_deep_names_its_nodes_by_the_whole_path() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_default_node_name_is_namespaced
    (``PRE.PREFIX.node``)."""
    outer = Formation("outer").add_formation("PRE", Formation("mid").add_formation("PREFIX", chain()))
    order = Order()
    result = outer.run(1, on_event=order)
    assert result.output == 4
    assert paths(order) == ["PRE", "PRE/PREFIX", "PRE/PREFIX/node1", "PRE/PREFIX/node2"]
    assert result.nodes["PRE/PREFIX/node1"].output == 2


def test_an_inner_nodes_policies_hold_when_its_pipeline_is_nested() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_node_properties_preserved."""
    calls = Counter()

    def flaky(x: int) -> int:
        if calls.hit("flaky") == 1:
            raise ConnectionError("first try fails")
        return x

    inner = Formation("inner").add_function("flaky", flaky, retries=1, backoff=0)
    result = Formation("outer").add_formation("PREFIX", inner).run(5)
    assert result.output == 5
    assert result.nodes["PREFIX/flaky"].attempts == 2 and result.nodes["PREFIX"].attempts == 1


def test_a_namespaced_pipeline_with_two_outer_inputs_gives_its_source_their_dict() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_transform_dataset_names
    (``inputs={"A": "A_new", ...}`` wires outer datasets in); Kedro renames datasets, our
    inner source receives the dict keyed by the outer predecessors."""

    def join(values: dict[str, int]) -> int:
        return values["a_new"] * 10 + values["d_new"]

    inner = Formation("inner").add_function("join", join)
    outer = Formation("outer").add_function("a_new", inc).add_function("d_new", double).add_formation("PREFIX", inner)
    assert outer.connect("a_new", "PREFIX").connect("d_new", "PREFIX").run(3).output == 46


def test_an_inner_source_with_parameters_named_after_the_outer_inputs_is_refused_naming_the_node() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_prefixing_and_renaming
    (``biconcat(C, D)`` reading renamed datasets); ours: an inner source takes the one input
    (DESIGN's keyword arguments are for a node's own predecessors), and the error says so."""

    def biconcat(a_new: int, d_new: int) -> int:
        return a_new + d_new

    outer = Formation("outer").add_function("a_new", inc).add_function("d_new", double)
    outer.add_formation("PREFIX", Formation("inner").add_function("biconcat", biconcat))
    with pytest.raises(FormationSetupError, match=r"formation node 'PREFIX'.*source function node 'biconcat'"):
        outer.connect("a_new", "PREFIX").connect("d_new", "PREFIX").validate()


def test_a_namespaced_pipeline_with_two_free_outputs_outputs_them_by_name() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_empty_input
    (``constant_output`` → ``["A", "B"]``: two outputs)."""
    inner = Formation("inner").add_function("a", inc).add_function("b", double)

    def after(prefix: dict[str, int]) -> tuple[int, int]:
        return prefix["a"], prefix["b"]

    outer = Formation("outer").add_formation("PREFIX", inner).add_function("after", after).connect("PREFIX", "after")
    result = outer.run(4)
    assert result.nodes["PREFIX"].output == {"a": 5, "b": 8}
    assert result.output == (5, 8)


def test_a_node_reading_the_named_outputs_of_a_namespaced_pipeline_by_keyword_is_refused() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_modular_pipeline.py::TestPipelineHelper::test_expose_intermediate_output;
    Kedro's next node reads the exposed datasets by name, ours receives the formation
    node's dict, and validation says so before the run."""

    def after(a: int, b: int) -> int:
        return a + b

    inner = Formation("inner").add_function("a", inc).add_function("b", double)
    outer = Formation("outer").add_formation("PREFIX", inner).add_function("after", after).connect("PREFIX", "after")
    with pytest.raises(FormationSetupError, match=r"'after' receives one value \(the output of 'PREFIX'\)"):
        outer.validate()


def test_a_failure_inside_a_nested_namespace_names_the_outer_node_and_the_inner_path() -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSuggestResumeScenario
    (the failing node named in the log) on a namespaced pipeline."""

    def boom(x: int) -> int:
        raise ValueError("test exception")

    mid = Formation("mid").add_function("node1", inc).add_function("boom", boom).connect("node1", "boom")
    outer = Formation("outer").add_function("src", inc).add_formation("PRE", Formation("inner").add_formation("mid", mid))
    with pytest.raises(FormationRuntimeError, match=r"node 'PRE' failed.*test exception") as err:
        outer.connect("src", "PRE").run(0)
    assert err.value.node == "PRE"
    assert "nested formation 'inner' failed at node PRE/mid/boom:" in str(err.value)  # the whole path, first
    assert {n: t.status for n, t in err.value.nodes.items()} == {
        "src": "succeeded", "PRE": "failed", "PRE/mid": "failed", "PRE/mid/node1": "succeeded", "PRE/mid/boom": "failed"}


def test_a_malformed_pipeline_inside_a_namespace_is_reported_naming_the_namespace() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_circle_case
    inside a modular pipeline."""
    inner = Formation("inner").add_function("start", inc).add_function("node1", inc).add_function("node2", inc)
    inner.connect("start", "node1", "node2", "node1")
    with pytest.raises(FormationSetupError, match=r"formation node 'PREFIX' \(formation 'inner'\): cycle node1 → node2"):
        Formation("outer").add_formation("PREFIX", inner).validate()


def test_an_empty_pipeline_in_a_namespace_is_reported_naming_the_namespace() -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestValidPipeline::test_empty_case
    (an empty modular pipeline); ours is a setup error naming the formation node."""
    with pytest.raises(FormationSetupError, match=r"formation node 'PREFIX' \(formation 'empty'\): the graph has no nodes"):
        Formation("outer").add_function("a", inc).add_formation("PREFIX", Formation("empty")).connect("a", "PREFIX").validate()


def test_a_breakpoint_naming_a_nested_node_is_refused_with_the_way_to_stop_there(tmp_path: Any) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_only_nodes_with_namespacing
    (a node named without its namespace gets a suggestion)."""
    outer = Formation("outer").add_formation("PREFIX", chain())
    with pytest.raises(FormationSetupError, match=r"'PREFIX/node2' is inside the nested formation 'PREFIX'.*\['PREFIX'\]"):
        outer.run(1, break_before=["PREFIX/node2"], store=tmp_path / "runs.sqlite")


# --- backend="ray" (Kedro's ParallelRunner) --------------------------------------------------


def branch_sum(c: int, d: int) -> int:
    return c + d


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_fan_out_fan_in_formation_on_ray_gives_the_join_each_branchs_value() -> None:
    """Ported from kedro-org/kedro tests/runner/test_parallel_runner.py::TestValidParallelRunner::test_parallel_run."""
    f = Formation("fan").add_function("b", inc).add_function("c", double).add_function("d", inc)
    f.add_function("z", branch_sum).connect("b", "c", "z").connect("b", "d", "z")
    assert f.run(1, backend="ray", timeout=120).output == 7  # b=2, c=4, d=3


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_namespaced_pipeline_on_ray_names_its_nodes_by_path() -> None:
    """Ported from kedro-org/kedro tests/runner/test_parallel_runner.py (a modular pipeline run
    in processes)."""
    order = Order()
    result = Formation("outer").add_formation("PREFIX", chain()).run(1, backend="ray", timeout=120, on_event=order)
    assert result.output == 4
    assert paths(order) == ["PREFIX", "PREFIX/node1", "PREFIX/node2"]


def raise_test_exception(x: int) -> int:
    raise ValueError("test exception")


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_node_failure_on_ray_fails_the_run_naming_the_node_and_the_cause() -> None:
    """Ported from kedro-org/kedro tests/runner/test_parallel_runner.py::TestInvalidParallelRunner::test_task_node_validation."""
    inner = Formation("inner").add_function("node1", inc).add_function("boom", raise_test_exception).connect("node1", "boom")
    with pytest.raises(FormationRuntimeError, match=r"node 'PREFIX' failed.*test exception") as err:
        Formation("outer").add_formation("PREFIX", inner).run(1, backend="ray", timeout=120)
    assert err.value.nodes["PREFIX/boom"].status == "failed" and err.value.nodes["PREFIX/node1"].output == 2
