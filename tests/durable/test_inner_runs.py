"""The inner runs of nested formations belong to their outer run: a store lists them only
with ``nested=True`` (with their parent), refuses to resume them on their own, and prunes
them with their outer run."""

from __future__ import annotations

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.store import RunNotResumableError, RunStore


def inner() -> Formation:
    return Formation("inner").add_function("shout", str.upper).add_function("mark", lambda t: t + "!") \
        .connect("shout", "mark")


def outer() -> Formation:
    return Formation("outer").add_function("trim", str.strip).add_formation("sub", inner()).connect("trim", "sub")


def asking() -> Formation:
    def ask(text: str) -> str:
        return f"{text}: {interrupt('ok?')}"

    return Formation("outer").add_formation("sub", Formation("inner").add_function("ask", ask))


def test_a_nested_run_lists_as_its_outer_run_only(store: RunStore) -> None:
    result = outer().run(" hi ", store=store)
    assert [r.id for r in store.runs()] == [result.run_id]


def test_nested_true_lists_the_inner_run_with_its_parent(store: RunStore) -> None:
    result = outer().run(" hi ", store=store)
    listed = [(r.id, r.formation, r.parent) for r in store.runs(nested=True)]
    assert listed == [(result.run_id, "outer", None), (f"{result.run_id}/sub/1", "inner", result.run_id)]


def test_a_formation_maps_item_runs_record_the_outer_run_as_parent(store: RunStore) -> None:
    mapped = Formation("outer").add_map("each", formation=inner())
    result = mapped.run(["a", "b"], store=store)
    assert result.output == ["A!", "B!"]
    assert {r.id: r.parent for r in store.runs(nested=True) if r.parent} == {
        f"{result.run_id}/each/1/0": result.run_id, f"{result.run_id}/each/1/1": result.run_id}


def test_resuming_an_inner_run_is_refused_naming_the_outer_run(store: RunStore) -> None:
    suspended = asking().run("hi", store=store)
    assert suspended.status == "suspended"
    inner_id = f"{suspended.run_id}/sub/1"
    with pytest.raises(RunNotResumableError, match=rf"inner run of run '{suspended.run_id}'.*resume run "
                                                   rf"'{suspended.run_id}' instead"):
        Formation("inner").add_function("ask", str).resume(inner_id, store=store)


def test_resuming_an_inner_run_with_the_outer_formation_names_the_outer_run_not_a_mismatch(store: RunStore) -> None:
    suspended = asking().run("hi", store=store)
    with pytest.raises(RunNotResumableError, match=rf"resume run '{suspended.run_id}' instead"):
        asking().resume(f"{suspended.run_id}/sub/1", store=store)


def test_resuming_the_outer_run_still_resumes_its_inner_run(store: RunStore) -> None:
    formation = asking()
    suspended = formation.run("hi", store=store)
    assert formation.resume(suspended.run_id, store=store, answer="yes").output == "hi: yes"
    assert [r.status for r in store.runs(nested=True)] == ["succeeded", "succeeded"]


def test_prune_deletes_the_inner_runs_with_their_outer_run(store: RunStore) -> None:
    outer().run(" hi ", store=store)
    assert store.prune(0) == 1
    assert store.runs(nested=True) == []
