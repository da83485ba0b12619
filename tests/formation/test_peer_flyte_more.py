"""Gates, map retries after a timeout, mapped callables and failure-node declarations,
ported from Flyte's Python SDK's own tests (flyteorg/flytekit ``tests/flytekit/unit/core/``:
``test_gate.py``, ``test_array_node_map_task.py``, ``test_map_task.py``,
``test_workflows.py``). A gate (``wait_for_input``, ``approve``) is an ``interrupt()`` in a
function node of a journalled run; the signal's value is the ``answer`` of ``resume``.

Deliberately different:
- Flyte's gates in parallel branches wait together and take their signals in any order;
  a run of ours suspends at one interrupt at a time (``result.interrupt`` names its node),
  and each ``resume`` answers that one; a node that was still running when the run
  suspended runs again on resume (at-least-once for what was in flight, DESIGN.md
  "Durable runs and interrupts").
- A sub-workflow whose failing node is caught by an error edge inside it has two sinks
  (the node and its handler) that exclude each other: its output is the value of the one
  that produced (``1`` or ``0``), as Flyte's is; a ``join="any"`` node after both gives the
  same.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import networkx as nx
import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, PayloadError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def t1(a: int) -> int:
    return a + 5


def t2(a: int) -> int:
    return a + 6


# --- gates ------------------------------------------------------------------------------


def test_signals_and_an_approval_suspend_the_run_one_at_a_time_until_each_is_answered(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_gate.py::test_basic_signal
    (``wait_for_input`` of a bool and of an int, then ``approve(y)``: the workflow returns
    ``(9, 10, 15)``)."""
    calls = Counter()

    def s1(_: Any) -> bool:
        return bool(interrupt({"signal": "my-signal-name", "expected_type": "bool"}))

    def s2(_: Any) -> int:
        calls.hit("s2")
        return int(interrupt({"signal": "my-signal-name-2", "expected_type": "int"}))

    def approve(y: int) -> int:
        if not interrupt({"approve": y}):
            raise ValueError(f"{y} was not approved")
        return y

    def z(_: bool) -> int:
        return t1(5)

    f = (Formation("wf").add_function("x", t1).add_function("s1", s1).add_function("z", z)
         .add_function("s2", s2).add_function("y", t2).add_function("approve", approve).add_function("q", t2)
         .connect("x", "s1", "z").connect("s2", "y", "approve", "q"))
    answers = {"my-signal-name": True, "my-signal-name-2": 3}
    asked = []
    with RunStore(tmp_path / "runs.db") as store:
        result = f.run(5, store=store, run_id="gates")
        while result.status == "suspended":
            assert result.interrupt is not None
            payload = result.interrupt["payload"]
            asked.append(result.interrupt["node"])
            result = f.resume("gates", store=store, answer=answers.get(payload.get("signal"), True))
    assert result.status == "succeeded"
    assert (result.nodes["y"].output, result.outputs) == (9, {"z": 10, "q": 15})
    # approve follows s2 (it needs y, which needs s2); s1's branch is independent, so it may ask
    # before or after approve (which of two pending questions a suspension records is not fixed)
    assert sorted(asked) == ["approve", "s1", "s2"] and asked.index("approve") > asked.index("s2")


def test_a_refused_approval_fails_the_run_naming_the_gate(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_gate.py::test_basic_signal (``approve``:
    a value goes on only once approved)."""

    def approve(y: int) -> int:
        if not interrupt({"approve": y}):
            raise ValueError(f"{y} was not approved")
        return y

    f = Formation("wf").add_function("y", t2).add_function("approve", approve).add_function("q", t2)
    f.connect("y", "approve", "q")
    with RunStore(tmp_path / "runs.db") as store:
        assert f.run(3, store=store, run_id="a").interrupt == {"node": "approve", "payload": {"approve": 9}}
        with pytest.raises(FormationRuntimeError, match="9 was not approved") as info:
            f.resume("a", store=store, answer=False)
    assert info.value.node == "approve" and info.value.nodes["y"].output == 9


def test_a_gate_inside_one_item_of_a_mapped_formation_resumes_only_that_item(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_gate.py::test_dyn_signal (a gate inside a
    dynamic workflow); here in the sub-workflow one item of a map runs."""
    calls = Counter()

    def ask(x: int) -> int:
        calls.hit(x)
        return int(interrupt({"item": x})) if x == 2 else x

    f = Formation("wf").add_map("each", formation=Formation("item").add_function("ask", ask))
    with RunStore(tmp_path / "runs.db") as store:
        result = f.run([1, 2, 3], store=store, run_id="m")
        assert result.status == "suspended" and result.interrupt == {"node": "each/1/ask", "payload": {"item": 2}}
        assert f.resume("m", store=store, answer=20).output == [1, 20, 3]
    assert (calls.count(1), calls.count(2), calls.count(3)) == (1, 2, 1)


# --- map retries after a timeout, mapped callables ---------------------------------------


def test_a_map_retry_after_a_timeout_reruns_only_the_item_cut_short() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_serialization
    (``map_task(t1, metadata=TaskMetadata(retries=2))``: each subtask retries on its own) with a
    timeout: the items that finished before it are kept."""
    calls = Counter()
    release = threading.Event()

    def slow_once(x: int) -> int:
        if calls.hit(x) == 1 and x == 2:
            release.wait(5)
        return x * 10

    try:
        result = Formation("wf").add_map("m", slow_once, timeout=0.5, retries=1, backoff=0).run([1, 2, 3])
    finally:
        release.set()
    assert result.output == [10, 20, 30] and result.nodes["m"].attempts == 2
    assert (calls.count(1), calls.count(2), calls.count(3)) == (1, 2, 1)


def test_an_async_map_retry_after_a_timeout_reruns_only_the_item_cut_short() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_serialization
    (per-subtask retries), for an ``async def`` mapped function whose await is cancelled."""
    calls = Counter()

    async def slow_once(x: int) -> int:
        if calls.hit(x) == 1 and x == 2:
            await asyncio.sleep(5)
        return x * 10

    started = time.monotonic()
    result = Formation("wf").add_map("m", slow_once, timeout=0.5, retries=1, backoff=0).run([1, 2, 3])
    assert result.output == [10, 20, 30] and time.monotonic() - started < 4
    assert (calls.count(1), calls.count(2), calls.count(3)) == (1, 2, 1)


class Adder:
    """A callable object, as a task object is to ``map_task``."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __call__(self, x: int) -> int:
        return x + self.k

    def add(self, x: int) -> int:
        return x + self.k


def test_a_callable_object_and_a_bound_method_map_like_functions() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_map_task_types (any task
    object maps)."""
    assert Formation("wf").add_map("m", Adder(5)).run([1, 2]).output == [6, 7]
    assert Formation("wf").add_map("m", Adder(1).add).run([1, 2]).output == [2, 3]


def test_a_mapped_function_whose_other_inputs_have_defaults_maps_over_the_first() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_inputs_outputs_length
    (only the unbound inputs are mapped); here the others have defaults."""

    def scaled(x: int, scale: int | None = None) -> int:
        return x * (scale or 1)

    assert Formation("wf").add_map("m", scaled).run([1, 2]).output == [1, 2]


# --- failure-node declarations ------------------------------------------------------------


def test_a_failure_node_may_be_a_sub_workflow_taking_the_failure() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py (``on_failure`` may be a
    workflow as well as a task)."""

    def fail(_: Any) -> None:
        raise ValueError("Fail!")

    def clean_up(failure: NodeFailure) -> str:
        return f"{failure.node}: {failure.error}"

    handler = Formation("clean_up_wf").add_function("clean_up", clean_up).add_function("log", str.upper)
    handler.connect("clean_up", "log")
    f = (Formation("wf").add_function("t1", fail).add_formation("on_failure", handler)
         .connect("t1", "on_failure", on_error=True))
    assert f.run(None).outputs == {"on_failure": "T1: FAIL!"}


def test_a_failure_node_whose_input_is_typed_otherwise_is_refused_at_validation() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py (a failure node's interface is
    checked when the workflow compiles)."""

    def fail(_: Any) -> int:
        raise ValueError("Fail!")

    def clean_up(x: int) -> int:
        return x

    f = Formation("wf").add_function("t1", fail).add_function("clean_up", clean_up)
    f.connect("t1", "clean_up", on_error=True)
    with pytest.raises(FormationSetupError, match=r"error edge 't1' → 'clean_up'.*annotate it as NodeFailure"):
        f.validate()


def test_a_map_cannot_be_a_failure_node_as_a_failure_is_no_list() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py (a failure node's interface is
    checked when the workflow compiles)."""
    f = Formation("wf").add_function("t1", t1).add_map("m", t1).connect("t1", "m", on_error=True)
    with pytest.raises(FormationSetupError, match=r"map node 'm' needs a list.*NodeFailure"):
        f.validate()


def test_a_sub_workflow_catching_its_own_failure_outputs_the_sink_that_produced() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (a sub-workflow with its own failure node), mapped: see the module docstring."""

    def check(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x

    def fix(_: NodeFailure) -> int:
        return 0

    inner = Formation("item").add_function("check", check).add_function("fix", fix)
    inner.connect("check", "fix", on_error=True)
    assert Formation("wf").add_map("each", formation=inner).run([1, -1]).output == [1, 0]
    inner.add_function("out", lambda v: next(iter(v.values())), join="any").connect("check", "out").connect("fix", "out")
    assert Formation("wf").add_map("each", formation=inner).run([1, -1]).output == [1, 0]


# --- imperative workflows: node names ------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   "])
def test_a_blank_node_name_is_refused_by_the_builder(name: str) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_imperative (every entity
    added gets a node id; a workflow needs a non-empty name too)."""
    with pytest.raises(FormationSetupError, match=r"a node name must be a non-empty str"):
        Formation("wf").add_function(name, t1)


@pytest.mark.parametrize("name", ["", "   "])
def test_a_blank_node_name_in_a_hand_built_graph_is_refused_at_validation(name: str) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_imperative (an imperative
    workflow's nodes are named as the declared ones are): a graph built by hand is held to what
    the builder refuses."""
    g = nx.DiGraph()
    g.add_node(name, kind="function", fn=t1)
    with pytest.raises(FormationSetupError, match=r"has a blank name; name every node with a non-empty str"):
        Formation("wf", g).validate()


# --- type checks at run time -------------------------------------------------------------


def test_an_output_that_breaks_its_return_annotation_is_converted_by_the_next_nodes_parameter() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_hints.py::test_wf_output_mismatch and
    test_type_engine.py (Flyte converts a task's outputs with its declared types and fails the
    task when a value does not convert). Deliberately different: a node's output is not checked
    against its own return annotation; the receiving parameter validates it with pydantic's
    default (lax) rules, so ``"5"`` reaches an ``int`` parameter as ``5``."""

    def returns_text(_: Any) -> int:
        return "5"  # type: ignore[return-value]  # the broken annotation under test

    def add_one(x: int) -> int:
        return x + 1

    f = Formation("wf").add_function("t", returns_text).add_function("add_one", add_one).connect("t", "add_one")
    result = f.run(None)
    assert result.output == 6 and result.nodes["t"].output == "5"


def test_an_output_the_next_parameter_cannot_convert_fails_that_node_naming_the_value() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_engine.py (a value that does not convert
    to the declared type fails the task, naming it)."""

    def returns_text(_: Any) -> int:
        return "five"  # type: ignore[return-value]  # the broken annotation under test

    def add_one(x: int) -> int:
        return x + 1

    f = Formation("wf").add_function("t", returns_text).add_function("add_one", add_one).connect("t", "add_one")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(None)
    assert info.value.node == "add_one" and isinstance(info.value.__cause__, PayloadError)
    assert "edge 't' → 'add_one'" in str(info.value) and "got 'five'" in str(info.value)


# --- map timeouts --------------------------------------------------------------------------


def nap(x: int) -> int:
    time.sleep(0.15)
    return x


def test_a_map_timeout_bounds_the_whole_visit_not_each_item() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_serialization
    (``TaskMetadata(timeout=...)`` of a mapped task bounds each subtask). Deliberately different:
    a map node's ``timeout`` bounds the visit, all its items together (DESIGN.md "Map nodes"), so
    four items of 0.15 s one at a time outrun 0.3 s."""
    with pytest.raises(FormationRuntimeError) as info:
        Formation("wf").add_map("nap", nap, max_workers=1, timeout=0.3).run([1, 2, 3, 4])
    assert info.value.node == "nap" and "timed out after 0.3s" in str(info.value)


def test_a_per_item_timeout_is_a_timeout_on_the_node_of_a_mapped_formation() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_serialization
    (a timeout per subtask): the inner node's own ``timeout`` bounds each item's run."""
    each = Formation("each").add_function("nap", nap, timeout=1.5)
    assert Formation("wf").add_map("m", formation=each, max_workers=1).run([1, 2, 3, 4]).output == [1, 2, 3, 4]


@pytest.mark.parametrize("timeout", ["foo", -1, 0])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_refused_naming_the_node(timeout: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_timeout_override_invalid_value
    (``with_overrides(timeout="foo")`` raises naming what a timeout must be)."""
    with pytest.raises(FormationSetupError, match=r"node 't1': timeout must be a number of seconds > 0"):
        Formation("wf").add_function("t1", t1, timeout=timeout)
