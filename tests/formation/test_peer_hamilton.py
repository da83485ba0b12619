"""Behaviours ported from Hamilton's own test suite (DAGWorks-Inc/hamilton, ``tests/test_graph.py``,
``tests/test_async_driver.py``, ``tests/execution/test_executors.py`` with the modules of
``tests/resources/dynamic_parallelism/``): a DAG of functions whose parameters name the
functions they depend on. ``test_peer_hamilton_types.py`` takes the type checks;
``tests/durable/test_peer_hamilton.py`` takes caching and overrides.

A Hamilton function is a function node, a dependency is an edge (``connect``), and a
function with several dependencies takes them as keyword arguments named after the
nodes (or one dict keyed by node name); Hamilton's external inputs are source nodes
reading the run's input; ``Parallelizable[T]`` → ... → ``Collect[T]`` is a map node (over
a function, or over a formation for a block of several functions per item) followed by
the node that takes the list; a subdag is ``add_formation``; ``@config.when`` is a
conditional edge (``when=``, ``otherwise=True``); ``@parameterize`` is one function added
under several names (``functools.partial``).

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- Hamilton computes only what the requested ``final_vars`` need; a run here runs every
  node its input reaches, and every sink is an output (``outputs`` by sink name).
- Hamilton refuses every cycle (``has_cycles``); ours allows a cycle through a
  conditional edge, bounded by ``max_visits``, and refuses one without.
- A block inside ``Parallelizable``/``Collect`` may read any value computed outside it
  (``test_end_to_end_block_has_external_dependencies``); a mapped formation takes only its
  item, so an outside value travels with each item (zipped in by the node before the map).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray, sleeps_until_cancelled  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError

# --- tests/resources/dummy_functions.py: A(b, c) feeds B and C ------------------------------


def dummy(counter: Counter | None = None) -> Formation:
    """Hamilton's dummy module: ``A = b + c``, ``B = A * A``, ``C = A * 2``; ``b`` and ``c`` are inputs."""

    def A(b: int, c: int) -> int:
        if counter is not None:
            counter.hit("A")
        return b + c

    def B(A: int) -> int:
        return A * A

    def C(A: int) -> int:
        return A * 2

    return (Formation("dummy")
            .add_function("b", lambda inputs: inputs["b"]).add_function("c", lambda inputs: inputs["c"])
            .add_function("A", A).add_function("B", B).add_function("C", C)
            .connect("b", "A").connect("c", "A").connect("A", "B").connect("A", "C"))


def test_a_dag_of_functions_computes_every_sink_from_the_inputs() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_execute."""
    result = dummy().run({"b": 2, "c": 5})
    assert result.outputs == {"B": 49, "C": 14}
    assert result.nodes["A"].output == 7


def test_a_node_two_others_depend_on_runs_once() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_execute ("basic memoization since A is
    depended on by two functions")."""
    counter = Counter()
    dummy(counter).run({"b": 2, "c": 5})
    assert counter.count("A") == 1


def test_the_graph_shows_each_dependency_as_an_edge() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_function_graph_display."""
    f = dummy()
    assert sorted(f.graph.edges) == [("A", "B"), ("A", "C"), ("b", "A"), ("c", "A")]
    drawn = f.to_mermaid()
    assert all(name in drawn for name in ("A", "B", "C"))
    assert drawn.count("-->") == 4


def test_a_fan_in_node_may_take_one_dict_keyed_by_its_dependencies() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_add_dependency_strict_node_dependencies
    (dependencies by name, here as the keys of one dict)."""
    f = (Formation("dict").add_function("b", lambda x: x + 1).add_function("c", lambda x: x * 10)
         .add_function("A", lambda deps: sorted(deps.items())).connect("b", "A").connect("c", "A"))
    assert f.run(2).output == [("b", 3), ("c", 20)]


def test_a_parameter_with_a_default_keeps_it_when_no_node_feeds_it() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_non_required_nodes."""

    def A(required: int, defaults_to_zero: int = 0) -> int:
        return required + defaults_to_zero

    f = Formation("defaults").add_function("required", lambda x: x).add_function("A", A).connect("required", "A")
    assert f.run(10).output == 10


def test_one_function_added_under_several_names_gives_each_its_own_output() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_end_to_end_with_parametrized_nodes (@parameterize)."""

    def scaled(x: int, factor: int) -> int:
        return x * factor

    f = Formation("params").add_function("start", lambda x: x)
    for n in (1, 2, 3):
        f.add_function(f"parametrized_{n}", functools.partial(scaled, factor=n)).connect("start", f"parametrized_{n}")
    assert f.run(1).outputs == {"parametrized_1": 1, "parametrized_2": 2, "parametrized_3": 3}


def version_of(n: int) -> Any:
    return lambda config: config["fn_1_version"] == n


@pytest.mark.parametrize("version", [1, 2, 3])
def test_configuration_picks_one_implementation_through_conditional_edges(version: int) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_end_to_end_with_config_modifier (@config.when)."""
    f = (Formation("config").add_function("config", lambda c: c)
         .add_function("fn_v1", lambda c: "version_1").add_function("fn_v2", lambda c: "version_2")
         .add_function("fn_v3", lambda c: "version_3")
         .connect("config", "fn_v1", when=version_of(1)).connect("config", "fn_v2", when=version_of(2))
         .connect("config", "fn_v3", otherwise=True))
    result = f.run({"fn_1_version": version})
    assert result.outputs == {f"fn_v{version}": f"version_{version}"}
    assert {n for n, t in result.nodes.items() if t.status == "skipped"} == {"fn_v1", "fn_v2", "fn_v3"} - {f"fn_v{version}"}


def test_a_cycle_without_a_conditional_edge_is_refused_naming_it() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_function_graph_has_cycles_true.

    Hamilton differs: every cycle is refused; ours allows one through a conditional edge."""
    f = (Formation("cyclic").add_function("start", lambda x: x).add_function("A", lambda x: x)
         .add_function("B", lambda x: x).connect("start", "A").connect("A", "B").connect("B", "A"))
    with pytest.raises(FormationSetupError, match=r"cycle A → B → A has no conditional edge; add when="):
        f.validate()


def test_a_cycle_through_a_conditional_edge_runs_until_it_exits() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_function_graph_has_cycles_false (the legal shape).

    Hamilton differs: it refuses the cycle; ours runs it while the condition holds."""
    f = (Formation("loop").add_function("A", lambda x: x + 1).add_function("done", lambda x: x)
         .connect("A", "A", when=lambda x: x < 5).connect("A", "done", when=lambda x: x >= 5))
    result = f.run(0)
    assert result.output == 5
    assert result.nodes["A"].outputs == [1, 2, 3, 4, 5]


def test_a_dependency_on_a_node_that_does_not_exist_is_refused_naming_it() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_add_dependency_user_nodes (a dependency nothing defines)."""
    f = Formation("missing").add_function("A", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"connect\('A', 'b'\): no node named 'b'; declare it first"):
        f.connect("A", "b")


def test_a_node_name_used_twice_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_async_builder_allow_module_overrides
    ("Cannot define function foo more than once")."""
    f = Formation("twice").add_function("foo", lambda x: 1)
    with pytest.raises(FormationSetupError, match=r"'foo'"):
        f.add_function("foo", lambda x: 2)


# --- async functions: tests/test_async_driver.py ----------------------------------------------


async def simple_async_func(external_input: int) -> int:
    await asyncio.sleep(0.01)
    return external_input + 1


async def async_func_with_param(simple_async_func: int) -> int:
    await asyncio.sleep(0.01)
    return simple_async_func + 2


def simple_non_async_func(simple_async_func: int, async_func_with_param: int) -> int:
    return simple_async_func + async_func_with_param + 1


async def another_async_func(simple_non_async_func: int) -> int:
    await asyncio.sleep(0.01)
    return simple_non_async_func + 1


def simple_async_module() -> Formation:
    """Hamilton's simple_async_module (its pandas nodes left out): async and sync functions, one fan-in."""
    f = Formation("async_module")
    for fn in (simple_async_func, async_func_with_param, simple_non_async_func, another_async_func):
        f.add_function(fn.__name__, fn)
    return (f.connect("simple_async_func", "async_func_with_param", "simple_non_async_func", "another_async_func")
            .connect("simple_async_func", "simple_non_async_func"))


def test_async_and_sync_functions_mix_in_one_dag_with_a_fan_in() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end."""
    result = simple_async_module().run(1)
    assert {n: t.output for n, t in result.nodes.items()} == {
        "simple_async_func": 2, "async_func_with_param": 4, "simple_non_async_func": 7, "another_async_func": 8,
    }
    assert result.output == 8


def test_the_async_api_runs_the_same_dag_without_blocking_the_loop() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end (AsyncDriver.execute)."""

    async def main() -> tuple[int, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        ticker = asyncio.create_task(tick())
        try:
            result = await simple_async_module().arun(1)
        finally:
            ticker.cancel()
        return result.output, ticks

    output, ticks = asyncio.run(main())
    assert output == 8
    assert ticks > 1


def test_async_dependencies_of_a_fan_in_run_at_the_same_time() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_await_dict_of_tasks (awaited together)."""
    both = threading.Barrier(2, timeout=5)

    async def left(x: int) -> int:
        await asyncio.to_thread(both.wait)  # returns only once the other branch is running too
        return x + 1

    async def right(x: int) -> int:
        await asyncio.to_thread(both.wait)
        return x * 10

    async def join(left: int, right: int) -> int:
        return left + right

    f = (Formation("together").add_function("start", lambda x: x).add_function("left", left)
         .add_function("right", right).add_function("join", join)
         .connect("start", "left").connect("start", "right").connect("left", "join").connect("right", "join"))
    assert f.run(2, timeout=10).output == 23


def test_an_async_function_that_raises_fails_the_run_naming_it() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end (a failing async node)."""

    async def broken(simple_async_func: int) -> int:
        raise ValueError(f"cannot use {simple_async_func}")

    f = (Formation("broken").add_function("simple_async_func", simple_async_func).add_function("broken", broken)
         .add_function("after", lambda x: x).connect("simple_async_func", "broken", "after"))
    with pytest.raises(FormationRuntimeError, match=r"node 'broken' failed after 1 attempt") as info:
        f.run(1)
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.node == "broken"
    assert info.value.outputs == {"simple_async_func": 2}
    assert info.value.nodes["after"].status != "succeeded"


def test_an_async_node_over_its_timeout_is_cancelled_and_fails_the_run() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_async_driver_overrides (an async node
    that must not run to its end)."""
    cancelled = threading.Event()
    f = Formation("slow").add_function("slow", sleeps_until_cancelled(cancelled), timeout=0.1)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"'slow'"):
        f.run("go")
    assert time.monotonic() - started < 2.5
    assert cancelled.wait(2)



def optional_dependency(join: Any) -> Formation:
    """``A`` always runs; ``B`` only for inputs above 5 (Hamilton: a function enabled by @config.when)."""
    return (Formation("optional").add_function("start", lambda x: x).add_function("A", lambda x: x)
            .add_function("B", lambda x: x * 10).add_function("j", join)
            .connect("start", "A").connect("start", "B", when=lambda x: x > 5).connect("A", "j").connect("B", "j"))


def test_a_dependency_disabled_by_configuration_leaves_its_parameter_default() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_non_required_nodes with
    tests/function_modifiers/test_configuration.py::test_config_when (a disabled dependency, a default value)."""

    def j(A: int, B: int = -1) -> int:
        return A + B

    result = optional_dependency(j).run(1)
    assert (result.output, result.nodes["B"].status) == (0, "skipped")
    assert optional_dependency(j).run(7).output == 77


def test_a_disabled_dependency_without_a_default_fails_the_run_naming_the_parameter_and_the_fix() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_add_dependency_user_nodes (a required dependency
    nothing provides: Hamilton asks for it as an input)."""

    def j(A: int, B: int) -> int:
        return A + B

    with pytest.raises(FormationRuntimeError, match=r"node 'j' got no value for parameter\(s\) B: their predecessors "
                                                    r"were skipped.*give those parameters defaults"):
        optional_dependency(j).run(1)


def test_an_async_dependency_that_fails_cancels_its_slow_sibling_at_once() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end (a failing async node
    among concurrent ones)."""
    begun, cancelled = threading.Event(), threading.Event()
    sleeps = sleeps_until_cancelled(cancelled)

    async def slow(x: int) -> str:
        begun.set()
        return await sleeps(x)

    async def boom(x: int) -> int:
        for _ in range(1000):  # fails once its sibling is in flight (under load it may start later)
            if begun.is_set():
                break
            await asyncio.sleep(0.005)
        raise ValueError("boom")

    def j(slow: str, boom: int) -> str:
        return slow

    f = (Formation("siblings").add_function("start", lambda x: x).add_function("slow", slow)
         .add_function("boom", boom).add_function("j", j)
         .connect("start", "slow").connect("start", "boom").connect("slow", "j").connect("boom", "j"))
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"node 'boom' failed") as info:
        f.run(1)
    assert time.monotonic() - started < 2.5  # not the 5 s the sibling would sleep
    assert cancelled.wait(2)
    assert info.value.nodes["slow"].status == "cancelled"


# --- backend="ray" ----------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_dag_with_a_fan_in_of_async_and_sync_functions_runs_on_ray() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end on backend="ray"."""
    assert simple_async_module().run(1, backend="ray", timeout=120).output == 8
