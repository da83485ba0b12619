"""Caching and override behaviours ported from Hamilton's own test suite (DAGWorks-Inc/hamilton,
``tests/caching/test_integration.py``, ``tests/execution/test_executors.py``): Hamilton's
cache skips a node whose code and inputs it has seen; here a journalled run skips on
``resume`` the node visits its journal holds, and ``fork(at=node, output=...)`` is
Hamilton's ``overrides={node: value}`` (what comes before is reused, what follows reruns).

Deliberately different (DESIGN.md "Durable runs" and "Beyond one machine" document ours):
- Hamilton's cache works across separate executions (a second ``execute`` reuses the
  first's results by fingerprint); ours reuses a journal only within one run, by
  ``resume`` or ``fork``: a new ``run`` recomputes everything.
- Hamilton skips what follows an override whose value equals the cached one; a fork
  reruns what follows its ``at`` node whatever the value.
- Hamilton recomputes a node whose code changed; ``resume`` trusts the journal of a
  formation of the same shape (nodes, kinds, edges) and refuses another shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import FormationMismatchError, RunStore


def abc(counter: Counter, b_fails: dict[str, bool] | None = None) -> Formation:
    """Hamilton's caching nodes: ``A`` → ``B = 0 - A`` → ``C = B + 1`` (``A`` doubles its input)."""
    fails = b_fails if b_fails is not None else {"on": False}

    def A(x: int) -> int:
        counter.hit("A")
        return x * 2

    def B(A: int) -> int:
        counter.hit("B")
        if fails["on"]:
            raise ValueError("B raised")
        return 0 - A

    def C(B: int) -> int:
        counter.hit("C")
        return B + 1

    return Formation("abc").add_function("A", A).add_function("B", B).add_function("C", C).connect("A", "B", "C")


def test_resuming_after_a_node_raised_reuses_what_came_before_it(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py::test_node_that_raises_error."""
    counter, fails = Counter(), {"on": True}
    f = abc(counter, fails)
    with pytest.raises(FormationRuntimeError, match=r"node 'B' failed"):
        f.run(1, store=store, run_id="raised")
    assert [v.node for v in store.history("raised") if v.status == "succeeded"] == ["A"]
    fails["on"] = False
    assert f.resume("raised", store=store).output == -1
    assert counter.calls == {"A": 1, "B": 2, "C": 1}


def test_an_override_of_a_node_reruns_only_what_follows_it(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py::test_override_with_different_value_do_recompute."""
    counter = Counter()
    f = abc(counter)
    f.run(1, store=store, run_id="first")
    child = f.fork("first", store=store, at="A", output=13)
    assert [(v.node, v.output) for v in store.history(child)] == [("A", 13), ("B", -13), ("C", -12)]
    assert counter.calls == {"A": 1, "B": 2, "C": 2}
    assert [v.output for v in store.history("first")] == [2, -2, -1]  # the original run is unchanged


def test_an_override_with_the_value_it_had_still_reruns_what_follows(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py::test_override_with_same_value_dont_recompute.

    Hamilton differs: an override equal to the cached value recomputes nothing; a fork
    reruns what follows its node whatever the value."""
    counter = Counter()
    f = abc(counter)
    f.run(1, store=store, run_id="first")
    child = f.fork("first", store=store, at="A", output=2)
    assert store.get(child).status == "succeeded"
    assert counter.calls == {"A": 1, "B": 2, "C": 2}


def test_a_node_rerun_with_another_input_recomputes_it_and_what_follows(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py::test_input_data_change_do_recompute."""
    counter = Counter()
    f = abc(counter)
    f.run(1, store=store, run_id="first")
    child = f.fork("first", store=store, at="A", input=2)
    assert [(v.node, v.output) for v in store.history(child)] == [("A", 4), ("B", -4), ("C", -3)]
    assert counter.calls == {"A": 2, "B": 2, "C": 2}


def test_a_second_run_recomputes_every_node(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py::test_recompute_behavior.

    Hamilton differs: its second execution reads every node from the cache; a new run
    here is a new journal."""
    counter = Counter()
    f = abc(counter)
    first, second = f.run(1, store=store), f.run(1, store=store)
    assert first.output == second.output == -1
    assert counter.calls == {"A": 2, "B": 2, "C": 2}


def test_a_formation_of_another_shape_cannot_resume_the_run(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py::test_dependency_code_change_different_result_do_recompute.

    Hamilton differs: it recomputes the changed node; ours refuses a formation whose nodes
    or edges differ (a changed function body of the same shape resumes on the journal)."""
    counter, fails = Counter(), {"on": True}
    with pytest.raises(FormationRuntimeError):
        abc(counter, fails).run(1, store=store, run_id="raised")
    changed = abc(counter).add_function("D", lambda c: c).connect("C", "D")
    with pytest.raises(FormationMismatchError):
        changed.resume("raised", store=store)


def parallel(counter: Counter, broken: set[int]) -> Formation:
    """Hamilton's parallelism_with_caching, in short: ``steps`` → each item doubled → summed."""

    def double(item: int) -> int:
        counter.hit(("double", item))
        if item in broken:
            raise ValueError(f"item {item} broke")
        return item * 2

    def summed(values: list[int]) -> int:
        counter.hit("summed")
        return sum(values)

    return (Formation("parallel").add_function("steps", lambda n: list(range(n))).add_map("double", double)
            .add_function("summed", summed).connect("steps", "double", "summed"))


def resume_after_one_item_broke(store: RunStore) -> tuple[Counter, Any]:
    counter, broken = Counter(), {2}
    f = parallel(counter, broken)
    with pytest.raises(FormationRuntimeError, match=r"item 2"):
        f.run(4, store=store, run_id="items")
    broken.clear()
    return counter, f.resume("items", store=store)


def test_resuming_a_parallel_block_reruns_only_the_item_that_failed(store: RunStore) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py (parallelism_with_caching: cached items are not rerun)."""
    counter, result = resume_after_one_item_broke(store)
    assert result.output == 12
    assert [counter.count(("double", i)) for i in range(4)] == [1, 1, 2, 1]
    assert counter.count("summed") == 1


def test_a_failed_item_resumes_alone_on_either_store(location: str) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/caching/test_integration.py (parallelism_with_caching), on SQLite and PostgreSQL."""
    with RunStore(location) as store:
        counter, result = resume_after_one_item_broke(store)
        assert result.nodes["double"].output == [0, 2, 4, 6]
        assert [counter.count(("double", i)) for i in range(4)] == [1, 1, 2, 1]
        assert store.get("items").status == "succeeded"
