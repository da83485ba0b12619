"""Mastra's workflow behaviours on ``backend="ray"``, from mastra-ai/mastra
``packages/core/src/workflows/workflow.test.ts`` and ``nested-non-success-result.test.ts``: the same
declarations as test_peer_mastra.py, test_peer_mastra_suspend.py and test_peer_mastra_more.py, with
every node replica a Ray actor, so loops, foreach items, suspensions and condition failures cross
process boundaries (the functions are module-level: Ray pickles them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def increment(x: dict[str, int]) -> dict[str, int]:
    return {"value": x["value"] + 1}


def below_twelve(x: dict[str, int]) -> bool:
    return x["value"] < 12


def final(x: dict[str, int]) -> dict[str, int]:
    return {"finalValue": x["value"]}


def plus_eleven(x: dict[str, int]) -> dict[str, int]:
    return {"value": x["value"] + 11}


def total(items: list[dict[str, int]]) -> dict[str, int]:
    return {"finalValue": sum(item["value"] for item in items)}


def asks_when_big(x: dict[str, int]) -> dict[str, int]:
    more = interrupt({"value": x["value"]}) if x["value"] > 5 else 0
    return {"value": x["value"] + 11 + more}


def malformed(_: Any) -> bool:
    raise ValueError("malformed iteration output")


def same(x: Any) -> Any:
    return x


def test_a_dountil_loop_then_a_foreach_run_on_ray() -> None:
    """From workflow.test.ts "should run an until loop" and "should run a partial item concurrency for
    loop", chained, on backend="ray"."""
    f = (Formation("loop-then-foreach").add_function("increment", increment, max_visits=20)
         .add_function("final", final).add_function("fan", lambda x: [{"value": v} for v in range(x["finalValue"])])
         .add_map("map", plus_eleven, max_workers=2).add_function("total", total)
         .connect("increment", "increment", when=below_twelve).connect("increment", "final", otherwise=True)
         .connect("final", "fan", "map", "total"))
    result = f.run({"value": 0}, backend="ray", timeout=120)
    assert result.nodes["increment"].visits == 12
    assert result.output == {"finalValue": sum(range(12)) + 11 * 12}


def test_foreach_items_that_ask_are_answered_one_by_one_on_ray(tmp_path: Path) -> None:
    """From workflow.test.ts "should suspend and resume when running all items concurrency for loop"
    on backend="ray" (ours: one resume per asking item, lowest index first)."""
    f = Formation("counter").add_map("map", asks_when_big, max_workers=3).add_function("total", total)
    f.connect("map", "total")
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = f.run([{"value": 22}, {"value": 1}, {"value": 333}], store=store, backend="ray", timeout=120)
        assert first.interrupt == {"node": "map", "payload": {"value": 22}}
        second = f.resume(first.run_id, store=store, answer=5, backend="ray", timeout=120)
        assert second.interrupt == {"node": "map", "payload": {"value": 333}}
        done = f.resume(first.run_id, store=store, answer=5, backend="ray", timeout=120)
    assert done.output == {"finalValue": 22 + 11 + 5 + 1 + 11 + 333 + 11 + 5}


def test_a_loop_condition_that_raises_fails_the_run_and_the_nodes_trace_on_ray() -> None:
    """From nested-non-success-result.test.ts "surfaces a dowhile condition throw as a truthful run
    failure" on backend="ray"."""
    nested = Formation("nested-workflow").add_function("nested-step", same)
    f = (Formation("parent").add_formation("nested", nested).add_function("after", same)
         .connect("nested", "nested", when=malformed).connect("nested", "after", otherwise=True))
    with pytest.raises(FormationRuntimeError, match="malformed iteration output") as caught:
        f.run({}, backend="ray", timeout=120)
    assert caught.value.node == "nested" and caught.value.nodes["nested"].status == "failed"
