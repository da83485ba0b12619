"""A journalled run whose formation node's inner run failed journals the inner traces as
a succeeded one does: ``runs show`` names the inner node that failed, with its error, and
the inner nodes that succeeded before it, with their outputs, as the result does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._nesting import NestedRunError
from wingman_actors.store import RunStore


def inc(x: int) -> int:
    return x + 1


def boom(x: int) -> int:
    raise ValueError(f"no luck with {x}")


def nested(**policies: Any) -> Formation:
    inner = Formation("inner").add_function("inc", inc).add_function("boom", boom).connect("inc", "boom")
    return (Formation("outer").add_function("src", inc).add_formation("sub", inner, **policies)
            .add_function("show", str).connect("src", "sub", "show"))


def show(path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["runs", "show", run_id, "--store", str(path), "--json"]) == 0
    nodes: dict[str, Any] = json.loads(capsys.readouterr().out)["nodes"]
    return nodes


def test_runs_show_of_a_failed_run_names_the_inner_node_that_failed_and_those_before_it(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(FormationRuntimeError) as caught:
        nested().run(1, store=path)
    assert caught.value.run_id is not None
    nodes = show(path, caught.value.run_id, capsys)
    assert {name: n["status"] for name, n in nodes.items()} == {
        "src": "succeeded", "sub": "failed", "sub/inc": "succeeded", "sub/boom": "failed", "show": "skipped"}
    assert nodes["sub/boom"]["error"] == "ValueError: no luck with 3"
    assert nodes["sub/inc"]["outputs"] == [3]


def test_a_journalled_run_fails_with_the_inner_traces_on_its_nested_run_error(store: RunStore) -> None:
    with pytest.raises(FormationRuntimeError) as caught:
        nested().run(1, store=store)
    cause = caught.value.__cause__
    assert isinstance(cause, NestedRunError)
    assert {name: t.status.value for name, t in cause.nodes.items()} == {"sub/inc": "succeeded", "sub/boom": "failed"}


def test_runs_show_of_a_run_that_skipped_a_failed_formation_node_shows_what_the_result_does(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = nested(on_error="skip").run(1, store=path)
    nodes = show(path, result.run_id, capsys)
    assert {name: n["status"] for name, n in nodes.items()} == {
        name: t.status.value for name, t in result.nodes.items()}
    assert nodes["sub/boom"]["error"] == result.nodes["sub/boom"].error == "ValueError: no luck with 3"
    assert nodes["sub/inc"]["outputs"] == result.nodes["sub/inc"].outputs == [3]


def test_a_resume_of_the_failed_run_does_not_rerun_the_inner_nodes_that_succeeded(store: RunStore) -> None:
    calls: list[int] = []

    def counted(x: int) -> int:
        calls.append(x)
        return x + 1

    broken = [True]

    def healed(x: int) -> int:
        if broken[0]:
            raise ValueError("not yet")
        return x

    inner = Formation("inner").add_function("inc", counted).add_function("heal", healed).connect("inc", "heal")
    outer = Formation("outer").add_formation("sub", inner)
    with pytest.raises(FormationRuntimeError) as caught:
        outer.run(1, store=store)
    cause = caught.value.__cause__
    assert isinstance(cause, NestedRunError) and cause.nodes["sub/heal"].error == "ValueError: not yet"
    broken[0] = False
    assert caught.value.run_id is not None
    resumed = outer.resume(caught.value.run_id, store=store)
    assert resumed.output == 2 and calls == [1]
    assert {name: t.status.value for name, t in resumed.nodes.items()} == {
        "sub": "succeeded", "sub/inc": "succeeded", "sub/heal": "succeeded"}
