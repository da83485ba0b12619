"""Flyte's map tasks, conditions and failure nodes on ``backend="ray"``, ported from
flytekit's own tests (flyteorg/flytekit ``tests/flytekit/unit/core/``): the same
declarations as ``test_peer_flyte_maps.py``, ``test_peer_flyte_conditions.py`` and
``test_peer_flyte_workflows.py``, with every node replica a Ray actor, so the outputs,
routes and errors cross process boundaries (pickled)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError, NoRouteError
from wingman_actors.formation import NodeFailure

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def double(n: float) -> float:
    return 2 * n


def square(n: float) -> float:
    return n * n


def first_value(v: dict[str, Any]) -> Any:
    return next(iter(v.values()))


def identity(x: Any) -> Any:
    return x


def below_one(x: float) -> bool:
    return x < 1.0


def check(x: int) -> int:
    if x % 2 == 0:
        raise ValueError(f"Unexpected inputs: {x}")
    return x


def report(failure: NodeFailure) -> dict[int, str]:
    assert isinstance(failure.error, MapItemsError)
    return {i: f"{type(e).__name__}: {e}" for i, e in failure.error.errors.items()}


def test_a_condition_inside_a_mapped_formation_decides_per_item_on_ray() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic_conditional.py::test_dynamic_conditional
    on backend="ray"."""
    inner = (Formation("per_item").add_function("x", identity).add_function("double", double)
             .add_function("square", square).add_function("out", first_value, join="any")
             .connect("x", "double", when=below_one).connect("x", "square", otherwise=True)
             .connect("double", "out").connect("square", "out"))
    f = Formation("wf").add_map("each", formation=inner, max_workers=2)
    assert f.run([0.5, 3.0], backend="ray", timeout=120).output == [1.0, 9.0]


def test_an_else_fail_on_ray_is_a_no_route_error_naming_the_decision() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_else_fail on backend="ray"."""
    f = (Formation("multiplier_2").add_function("decide", identity).add_function("double", double)
         .connect("decide", "double", when=below_one))
    with pytest.raises(NoRouteError) as info:
        f.run(10.0, backend="ray", timeout=120)
    assert info.value.node == "decide" and info.value.preview == "10.0"


def test_an_error_edge_after_a_map_on_ray_gets_every_failed_item() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_raw_execute_with_min_success_ratio
    on backend="ray" (the failed items' errors reach the handler through pickling)."""
    f = (Formation("wf").add_map("some_task1", check).add_function("report", report)
         .connect("some_task1", "report", on_error=True))
    result = f.run([1, 2, 3, 4], backend="ray", timeout=120)
    assert result.outputs == {"report": {1: "ValueError: Unexpected inputs: 2", 3: "ValueError: Unexpected inputs: 4"}}


def test_a_failing_item_of_a_mapped_formation_on_ray_names_the_inner_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node.py::test_local_exec_lp_min_successes
    on backend="ray"."""
    inner = Formation("inner").add_function("check", check)
    with pytest.raises(FormationRuntimeError) as info:
        Formation("outer").add_map("each", formation=inner).run([1, 2, 3], backend="ray", timeout=120)
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
    assert "check" in str(cause.errors[1]) and "Unexpected inputs: 2" in str(cause.errors[1])
