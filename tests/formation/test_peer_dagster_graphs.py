"""Malformed graphs, ported from Dagster's own test suite (dagster-io/dagster,
``python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_definition_errors.py``,
``test_composition.py`` and ``execution_tests/dynamic_tests/test_not_allowed.py``): each
definition error becomes a ``FormationSetupError`` naming the node or edge and the fix
(Dagster's ``DagsterInvalidDefinitionError``), raised by the builder call or by
``validate()``, which lists every problem at once. (Split from
``test_peer_dagster_more.py``; ``test_peer_dagster.py``'s docstring maps ops, jobs and
graphs onto formations.)
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError

# --- malformed graphs -----------------------------------------------------------------------


def test_a_cycle_without_a_condition_is_refused_naming_the_cycle_and_the_fix() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_definition_errors.py::test_circular_dep."""
    f = (Formation("cycle").add_function("start", lambda x: x).add_function("A", lambda x: x).add_function("B", lambda x: x)
         .connect("start", "A", "B", "A"))
    with pytest.raises(FormationSetupError, match=r"cycle A → B → A has no conditional edge; add when="):
        f.validate()


def test_connecting_a_node_that_does_not_exist_is_refused_with_a_suggestion() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_definition_errors.py::test_to_solid_not_there."""
    f = Formation("missing").add_function("emit", lambda x: x).add_function("total", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"no node named 'totl' \(did you mean 'total'\?\); declare it first"):
        f.connect("emit", "totl")
    assert f.graph.number_of_edges() == 0


def test_an_edge_to_an_undeclared_node_in_a_hand_built_graph_names_every_way_to_declare_it() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_definition_errors.py::test_from_solid_not_there
    (a dependency naming an op that is not in the job)."""
    graph = nx.DiGraph()
    graph.add_node("emit", kind="function", fn=lambda x: x)
    graph.add_edge("emit", "NOTTHERE")
    with pytest.raises(FormationSetupError, match=r"node 'NOTTHERE' has no kind") as caught:
        Formation("hand", graph).validate()
    assert all(way in str(caught.value) for way in ("add_function", "add_agent", "add_fleet", "add_map", "add_formation"))


def test_a_join_whose_parameters_match_no_upstream_is_refused_naming_them() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_definition_errors.py::test_from_non_existant_input."""

    def join(not_an_input: int, other: int) -> int:
        return not_an_input + other

    f = (Formation("join").add_function("src", lambda x: x).add_function("a", lambda x: x).add_function("b", lambda x: x)
         .add_function("join", join).connect("src", "a", "join").connect("src", "b", "join"))
    with pytest.raises(FormationSetupError, match=r"parameter\(s\) 'not_an_input', 'other' match no predecessor"):
        f.validate()


def test_a_second_node_of_the_same_name_is_refused() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_composition.py::test_duplicate_op_name
    (two ops of one name need an alias)."""
    f = Formation("dup").add_function("op", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"already has a node named 'op'; pick another name"):
        f.add_function("op", lambda x: x)


def test_an_input_wired_twice_is_refused() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_composition.py::test_input_dependency_twice."""
    f = Formation("twice").add_function("a", lambda x: x).add_function("b", lambda x: x).connect("a", "b")
    with pytest.raises(FormationSetupError, match=r"edge 'a' → 'b' is declared twice; connect each pair once"):
        f.connect("a", "b")


def test_every_problem_of_a_graph_is_reported_at_once() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_definition_errors.py
    (each malformed definition names its problem); ours lists them all in one error."""

    def gives_str(_: Any) -> str:
        return ""

    def takes_int(x: int) -> int:
        return x

    f = (Formation("bad").add_function("a", gives_str).add_function("b", takes_int)
         .add_function("c", lambda x: x).add_function("d", lambda x: x).connect("a", "b").connect("c", "d", "c"))
    with pytest.raises(FormationSetupError) as caught:
        f.validate()
    problems = caught.value.problems
    assert any("cycle c → d → c" in p for p in problems) and any("edge 'a' → 'b'" in p for p in problems)


def test_a_graph_that_contains_itself_is_refused() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_composition.py
    (a graph cannot be composed into itself)."""
    f = Formation("self")
    with pytest.raises(FormationSetupError, match=r"cannot be nested in itself"):
        f.add_formation("me", f)


def test_mapping_over_a_value_that_is_not_a_list_is_refused_before_running() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_not_allowed.py
    (``.map`` on an output that is not dynamic)."""

    def one(_: Any) -> str:
        return "x"

    f = Formation("not_dynamic").add_function("one", one).add_map("each", lambda x: x).connect("one", "each")
    with pytest.raises(FormationSetupError, match=r"map node 'each' needs a list .* but 'one' outputs str"):
        f.validate()


def test_a_mapped_function_that_cannot_take_one_item_is_refused() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_not_allowed.py
    (a mapped op whose other inputs are not given)."""

    def two(x: int, y: int) -> int:
        return x + y

    with pytest.raises(FormationSetupError, match=r"map node 'each' calls its function with one item.*give the others defaults"):
        Formation("m").add_map("each", two).validate()
