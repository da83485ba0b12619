"""A resume is refused when the formation differs from the run's (DESIGN, "Durable runs"):
nested formations included. The outer run's shape holds its inner formations' nodes and
edges by path, so a changed inner formation is refused before the run is claimed, and the
run stays suspended (before, its node failed with FormationMismatchError once it ran, and
the suspended run ended failed)."""

from __future__ import annotations

from wingman_actors import Formation, interrupt
from wingman_actors.store import FormationMismatchError, RunStore


def _outer(inner_nodes: tuple[str, ...]) -> Formation:
    inner = Formation("inner")
    for name in inner_nodes:
        inner.add_function(name, lambda v: v)
    inner.add_function("ask", lambda v: interrupt({"ok?": v}))
    for a, b in zip((*inner_nodes, "ask")[:-1], (*inner_nodes, "ask")[1:], strict=True):
        inner.connect(a, b)
    return Formation("outer").add_function("a", lambda v: v).add_formation("n", inner).connect("a", "n")


def test_resuming_a_run_whose_nested_formation_changed_is_refused_and_leaves_the_run_suspended(location: str) -> None:
    with RunStore(location) as store:
        run_id = _outer(("x",)).run(1, store=store).run_id
        refused = False
        try:
            _outer(("x", "y")).resume(run_id, store=store, answer="yes")
        except FormationMismatchError:
            refused = True
        except Exception:
            pass
        assert refused, "the resume was not refused before the run was claimed"
        assert store.get(run_id).status == "suspended"


def test_the_shape_holds_the_inner_formations_and_tells_what_changed_inside_by_path() -> None:
    from wingman_actors.store import FormationShape

    before, after = FormationShape.of(_outer(("x",)).graph), FormationShape.of(_outer(("x", "y")).graph)
    assert before.nodes == (("a", "function"), ("n", "formation"))  # the outer nodes only, as before
    assert dict(before.nested)["n"].nodes == (("ask", "function"), ("x", "function"))
    assert before.fingerprint != after.fingerprint
    assert sorted(before.diff(after)) == sorted([
        "node 'n/y' (function) is new", "edge 'n/x' → 'n/y' is new", "edge 'n/y' → 'n/ask' is new",
        "edge 'n/x' → 'n/ask' is missing"])
    assert FormationShape.from_json(before.to_json()) == before
    assert FormationShape.from_json(before.to_json()).fingerprint == before.fingerprint


def test_a_formation_without_nested_ones_keeps_the_shape_json_it_had() -> None:
    from wingman_actors.store import FormationShape

    shape = FormationShape.of(Formation("plain").add_function("a", abs).add_function("b", abs).connect("a", "b").graph)
    assert shape.to_json() == '{"nodes":[["a","function"],["b","function"]],"edges":[["a","b",false,false]]}'
