"""The declaration layer imports without cycles: the contract and problem finders live in
``formation/_validation.py``, which imports none of graph, plan or render, and none of
those hides an import inside a function to dodge a cycle: the only sibling imports made
inside a function are those listed in ``DEFERRED``, which keep the run-time half out of
``from wingman_actors import Formation`` (tests/formation/test_import_cost.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped]
import pytest

import wingman_actors.formation

PACKAGE = Path(wingman_actors.formation.__file__).parent
DECLARATION = ("_graph", "_sync_api", "_plan", "_render", "_typecheck", "_validation")

# (declaration module, sibling imported inside a function): why it is loaded late. Neither
# dodges a cycle (the sibling does not import the declaration module back).
DEFERRED: dict[tuple[str, str], str] = {
    ("_sync_api", "_runtime"): (
        "the runtime (actors, backends, routing, supervision) loads at the first start(), run(), "
        "resume() or run_stream(), once per call, never per message: declaring and validating "
        "a formation does not need it"
    ),
    ("_sync_api", "_one_run"): "one run from start to stop (run, resume, run_stream) is the runtime's, loaded as it is",
    ("_sync_api", "_durable"): "the journal, and with it the store, loads for a durable run (store=...) only",
}


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _sibling_imports(tree: ast.Module) -> tuple[set[str], list[str]]:
    """Formation modules imported at module level (outside ``if TYPE_CHECKING``), and the
    sibling imports made inside functions."""
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            top.add((node.module or "").split(".")[0])
    nested = [
        node.module or ""
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(fn)
        if isinstance(node, ast.ImportFrom) and node.level == 1
    ]
    return top, nested


def test_the_declaration_modules_import_each_other_without_a_cycle() -> None:
    graph = nx.DiGraph()
    for name in DECLARATION:
        top, _ = _sibling_imports(ast.parse((PACKAGE / f"{name}.py").read_text()))
        graph.add_edges_from((name, other) for other in top)
    assert nx.is_directed_acyclic_graph(graph), nx.find_cycle(graph)
    assert not set(graph.successors("_validation")) & {"_graph", "_plan", "_render"}


@pytest.mark.parametrize("name", DECLARATION)
def test_no_declaration_module_imports_a_sibling_inside_a_function_but_those_deferred_on_purpose(name: str) -> None:
    _, nested = _sibling_imports(ast.parse((PACKAGE / f"{name}.py").read_text()))
    assert sorted({m for m in nested if (name, m) not in DEFERRED}) == []


@pytest.mark.parametrize(("name", "sibling"), sorted(DEFERRED))
def test_each_deferred_sibling_import_is_still_made_inside_a_function_and_not_at_module_level(
    name: str, sibling: str
) -> None:
    top, nested = _sibling_imports(ast.parse((PACKAGE / f"{name}.py").read_text()))
    assert sibling in nested, f"{name}.py no longer imports {sibling} inside a function: remove it from DEFERRED"
    assert sibling not in top, f"{name}.py imports {sibling} at module level: it was deferred to keep imports light"
