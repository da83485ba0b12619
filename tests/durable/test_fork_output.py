"""Forks with a new output (``Formation.fork(..., output=...)``), on both stores: an output
that does not fit the node's declared output type is refused before anything is written,
naming the node, its type and the fix, as a bad ``input=`` is; one that fits (a pydantic
model given as its JSON dict included) is journalled as given and the run goes on. A
fork reads its run from an existing store: a path where there is none is refused, not
created; bad run options are refused before the fork is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Formation
from wingman_actors.formation import RunOptions
from wingman_actors.store import RunStore


class Draft(BaseModel):
    text: str


def _draft(x: int) -> Draft:
    return Draft(text=str(x))


def _publish(d: Draft) -> str:
    return d.text.upper()


def _double(x: int) -> int:
    return x * 2


def _count(x: int) -> int:
    return x + 1


def typed() -> Formation:
    """count (int → int) → double (int → int) → draft (int → Draft) → publish (Draft → str)."""
    f = Formation("typed").add_function("count", _count).add_function("double", _double)
    f.add_function("draft", _draft).add_function("publish", _publish)
    return f.connect("count", "double").connect("double", "draft").connect("draft", "publish")


def test_a_fork_output_that_does_not_fit_the_nodes_output_type_is_refused_before_anything_is_written(
        location: str) -> None:
    f = typed()
    with RunStore(location) as store:
        original = f.run(1, store=store).run_id
        with pytest.raises(ValueError, match=r"output= for node 'double' does not fit its output type int: .*"
                                             r"give a value of that type"):
            f.fork(original, store=store, at="double", output="not a number")
        with pytest.raises(ValueError, match=r"output= for node 'draft' does not fit its output type Draft"):
            f.fork(original, store=store, at="draft", output={"title": "no text"})
        assert [r.id for r in store.runs()] == [original]


def test_a_fork_output_that_fits_the_nodes_output_type_is_journalled_and_the_run_goes_on(location: str) -> None:
    f = typed()
    with RunStore(location) as store:
        original = f.run(1, store=store).run_id
        forked = f.fork(original, store=store, at="draft", output={"text": "from json"})
        assert store.get(forked).status == "succeeded"
        assert store.load(forked).visits["publish"] == {1: "FROM JSON"}


def test_a_fork_output_of_an_unannotated_node_is_taken_as_given(location: str) -> None:
    f = Formation("loose").add_function("a", lambda x: x + 1).add_function("b", lambda x: x).connect("a", "b")
    with RunStore(location) as store:
        original = f.run(1, store=store).run_id
        forked = f.fork(original, store=store, at="a", output="anything")
        assert store.load(forked).visits["b"] == {1: "anything"}


def test_a_fork_from_a_store_path_that_does_not_exist_is_refused_without_creating_a_store(tmp_path: Path) -> None:
    from wingman_actors.store import UnknownRunError

    typo = tmp_path / "typo.sqlite"
    for store in (typo, str(typo)):
        with pytest.raises(UnknownRunError, match=r"no run 'r1': the run store .*typo\.sqlite does not exist; give "
                                                  r"the path of the store the run was journalled in"):
            typed().fork("r1", store=store, at="draft", output={"text": "x"})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("given", "error", "match"), [
    ({"timeout": -1}, ValueError, r"timeout must be a number of seconds > 0, or None or math.inf for no limit, got -1"),
    ({"timeout": "soon"}, TypeError, r"timeout must be a number of seconds > 0, or None or math.inf for no limit"),
    ({"options": "fast"}, TypeError, r"options must be a wingman_actors.formation.RunOptions"),
    ({"options": RunOptions(run_id="mine")}, TypeError, r"Formation.fork\(\) does not take run_id"),
    ({"options": RunOptions(store="other.sqlite")}, TypeError, r"Formation.fork\(\) does not take store"),
])
def test_a_fork_with_bad_run_options_is_refused_before_the_fork_is_written(
        location: str, given: dict[str, Any], error: type[Exception], match: str) -> None:
    f = typed()
    with RunStore(location) as store:
        original = f.run(1, store=store).run_id
        with pytest.raises(error, match=match):
            f.fork(original, store=store, at="draft", output={"text": "x"}, **given)
        assert [r.id for r in store.runs()] == [original]
