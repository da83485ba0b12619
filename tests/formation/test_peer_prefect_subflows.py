"""Subflows, async flows, concurrency and ``backend="ray"``, ported from Prefect's own test
suite (PrefectHQ/prefect, ``tests/test_flows.py``: ``TestSubflowCalls``,
``TestFlowTimeouts``, ``TestFlowRetries``, ``TestFlowParameterTypes``; ``tests/test_tasks.py``).
A subflow is a formation node (``add_formation``): its input is the inner run's input,
its output the inner sink's, its events named by path (``"child/compute"``), and its
``retries``/``timeout`` apply to the inner run as a whole. (``test_peer_prefect.py``'s
module docstring maps the rest of Prefect onto formations.)

Deliberately different (DESIGN.md "Nested formations" documents ours):
- A Prefect flow may call itself recursively; a formation may not contain itself,
  directly or through another: refused at declaration or validation.
- A failed subflow raises its own exception in the parent; ours fails the formation
  node with a ``NestedRunError`` naming the inner node by path, the run with a
  ``FormationRuntimeError`` naming the outer node.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray, sleeps_until_cancelled  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError, PayloadError
from wingman_actors.formation import NestedRunError, NodeFailure
from wingman_actors.formation.events import FormationEvent

SLACK = 1.5  # what a loaded machine may add to a time limit (measured: < 0.05 s); stuck code runs 4 s or more


def xyz(v: dict[str, int]) -> int:
    return v["x"] + v["y"] + v["z"]


def child_flow(counter: Counter, fail_on: set[int] | None = None, name: str = "child_flow") -> Formation:
    """A subflow of one node that counts its calls and fails on the calls in ``fail_on``."""

    def child(_: Any) -> str:
        if counter.hit(name) in (fail_on or set()):
            raise ValueError(f"call {counter.count(name)}")
        return "hello"

    return Formation(name).add_function("child", child)


# --- calls and results ----------------------------------------------------------------


def test_a_subflows_output_is_its_formation_nodes_output() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_subflow_call_with_no_tasks."""
    child = Formation("child").add_function("compute", xyz)
    parent = (Formation("parent").add_function("args", lambda x: {"x": x, "y": 2, "z": 3})
              .add_formation("child", child).connect("args", "child"))
    assert parent.run(1).output == 6


def test_a_subflow_returns_what_its_last_task_returned() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_subflow_call_with_returned_task."""
    child = (Formation("child").add_function("start", lambda v: v).add_function("compute", xyz)
             .connect("start", "compute"))
    result = Formation("parent").add_formation("child", child).run({"x": 1, "y": 2, "z": 3})
    assert result.output == 6
    assert (result.nodes["child"].output, result.nodes["child/compute"].output) == (6, 6)


def test_an_async_subflow_with_an_async_task_is_awaited_by_an_async_caller() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_async_flow_with_async_subflow_and_async_task
    and ::test_async_flow_with_sync_subflow_and_sync_task."""

    async def compute_async(v: dict[str, int]) -> int:
        await asyncio.sleep(0)
        return xyz(v)

    async def main() -> tuple[Any, Any]:
        a = await Formation("parent").add_formation("child", Formation("c").add_function("compute", compute_async)).arun(
            {"x": 1, "y": 2, "z": 3})
        b = await Formation("parent").add_formation("child", Formation("c").add_function("compute", xyz)).arun(
            {"x": 1, "y": 2, "z": 3})
        return a.output, b.output

    assert asyncio.run(main()) == (6, 6)


def test_a_subflows_events_reach_the_parents_listener_named_by_path() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowRunLogs::test_subflow_logs_are_written_correctly
    (the child's records carry the child run's id): ours carry the path ``child/compute``."""
    seen: list[tuple[str, str | None]] = []

    def listen(event: FormationEvent) -> None:
        if event.type in ("node_started", "node_finished"):
            seen.append((event.type.value, event.node))

    child = Formation("child").add_function("compute", lambda x: x + 1)
    Formation("parent").add_function("hello", lambda x: x).add_formation("child", child).connect("hello", "child").run(
        1, on_event=listen)
    assert ("node_started", "child/compute") in seen and ("node_finished", "child/compute") in seen
    assert seen.index(("node_finished", "hello")) < seen.index(("node_started", "child/compute"))


def test_concurrent_runs_of_an_async_formation_each_give_their_own_result() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_concurrent_async_subflow
    (five child flows gathered)."""

    async def test_task(i: int) -> int:
        await asyncio.sleep(0.01)
        return i

    f = Formation("parent").add_formation("child", Formation("child").add_function("test_task", test_task))

    async def main() -> list[Any]:
        async with f.astart() as running:
            results = await asyncio.gather(*(running.asubmit(i) for i in range(5)))
        return [r.output for r in results]

    assert asyncio.run(main()) == list(range(5))


def test_a_formation_nested_in_itself_is_refused() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_recursive_sync_subflow.
    Prefect recurses at run time; a formation is a static graph and may not contain itself."""
    f = Formation("recurse").add_function("test_task", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"cannot be nested in itself"):
        f.add_formation("recurse", f)


def test_two_formations_nested_in_each_other_are_refused_at_validation() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_recursive_async_subflow (mutual nesting)."""
    a = Formation("a").add_function("x", lambda v: v)
    b = Formation("b").add_formation("a", a)
    a.add_formation("b", b)
    with pytest.raises(FormationSetupError, match=r"'a'|'b'"):
        a.validate()


def test_a_subflow_passes_objects_that_cannot_be_serialised() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowParameterTypes::test_subflow_parameters_can_be_unserializable_types
    and ::test_flow_parameters_can_be_unserializable_types_that_raise_value_error."""

    class Holder:
        def __init__(self) -> None:
            self.lock = threading.Lock()

    f = Formation("my_flow").add_formation("my_subflow", Formation("s").add_function("x", lambda x: x))
    assert isinstance(f.run(Holder()).output, Holder)
    assert f.run(Exception).output is Exception


# --- failures -------------------------------------------------------------------------


def test_a_failing_subflow_fails_the_parent_naming_the_inner_node() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowCall::test_flow_state_default_handles_nested_failures
    (a failed task in a failed subflow fails the parent)."""

    def fail_task(_: Any) -> None:
        raise ValueError("foo")

    wrapper = Formation("fail_flow").add_function("fail_task", fail_task)
    with pytest.raises(FormationRuntimeError, match=r"failed at node fail_flow/fail_task") as info:
        Formation("foo").add_formation("fail_flow", wrapper).run(None)
    assert info.value.node == "fail_flow" and isinstance(info.value.__cause__, NestedRunError)
    assert {n: t.status for n, t in info.value.nodes.items()} == {"fail_flow": "failed", "fail_flow/fail_task": "failed"}
    assert info.value.nodes["fail_flow/fail_task"].error == "ValueError: foo"


def test_a_subflow_given_an_invalid_parameter_fails_with_a_payload_error_naming_the_inner_node() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_subflow_with_invalid_parameters_is_failed."""

    def child(x: int) -> int:
        return x

    with pytest.raises(FormationRuntimeError, match=r"child/child.*PayloadError: edge 'input' → 'child'") as info:
        Formation("parent").add_formation("child", Formation("child").add_function("child", child), retries=2).run("foo")
    assert info.value.attempts == 1  # a payload that does not fit fails again: not retried
    inner = info.value.__cause__
    assert isinstance(inner, NestedRunError) and isinstance(inner.inner.__cause__, PayloadError)


def test_one_invalid_subflow_beside_a_valid_one_shows_which_failed() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_subflow_with_invalid_parameters_fails_parent
    ("1/2 states failed"): skipped, the run ends and the traces say which one failed."""

    def child(x: int) -> int:
        return x

    f = (Formation("parent").add_function("foo", lambda _: "foo").add_function("one", lambda _: 1)
         .add_formation("bad", Formation("child").add_function("child", child), on_error="skip")
         .add_formation("good", Formation("child").add_function("child", child))
         .connect("foo", "bad").connect("one", "good"))
    result = f.run(None)
    assert result.outputs == {"good": 1}
    assert (result.nodes["bad"].status, result.nodes["good"].status) == ("skipped", "succeeded")
    assert "PayloadError" in (result.nodes["bad/child"].error or "")


def test_an_error_edge_after_a_subflow_gets_the_inner_failure() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowTaskInputs::test_subflow_with_one_upstream_task_future_and_allow_failure
    (the failure reaches the next flow through ``allow_failure``)."""

    def child_task(_: Any) -> None:
        raise ValueError()

    def handler(failure: NodeFailure) -> str:
        return type(failure.error).__name__ + ":" + failure.node

    f = (Formation("parent_flow").add_formation("child", Formation("c").add_function("child_task", child_task))
         .add_function("child_flow", handler).connect("child", "child_flow", on_error=True))
    assert f.run(None).outputs == {"child_flow": "NestedRunError:child"}


def test_a_subflow_whose_only_result_was_skipped_is_skipped_with_what_depends_on_it() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_downstream_does_not_run_if_upstream_fails,
    the upstream a subflow: its task failed into ``on_error="skip"``, so the subflow has
    no result. The formation node handed None on as its output, and the typed node after
    it failed the run with a PayloadError, though the failure was declared skippable
    (a top-level run whose sink is skipped has no output either: ``outputs == {}``). The
    formation node is now skipped, and so is what depends only on it."""
    counter = Counter()

    def child(x: int) -> int:
        raise ValueError("no result")

    def after(x: int) -> int:
        counter.hit("after")
        return x

    seen: list[tuple[str, str | None]] = []
    f = (Formation("parent").add_formation("subflow", Formation("s").add_function("child", child, on_error="skip"))
         .add_function("after", after).add_function("other", lambda x: x + 1)
         .connect("subflow", "after"))
    result = f.run(1, on_event=lambda e: seen.append((e.type.value, e.node)))
    assert result.outputs == {"other": 2} and counter.count("after") == 0
    assert {n: t.status for n, t in result.nodes.items()} == {
        "subflow": "skipped", "subflow/child": "skipped", "after": "skipped", "other": "succeeded"}
    assert ("node_skipped", "subflow") in seen and ("node_finished", "subflow") not in seen


def test_a_subflow_with_several_results_gives_those_it_has() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowCall::test_flow_state_reflects_returned_multiple_task_run_states
    (a subflow returning several results, one of them failed): the dict of the inner
    sinks that gave a value, as a top-level run's ``outputs``."""

    def boom(x: int) -> int:
        raise ValueError("x")

    inner = (Formation("s").add_function("ok", lambda x: x).add_function("bad", boom, on_error="skip"))
    assert Formation("parent").add_formation("subflow", inner).run(1).output == {"ok": 1}


# --- retries of subflows --------------------------------------------------------------


def test_a_subflows_retry_runs_the_whole_inner_formation_again() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_no_error_in_flow_and_one_failed_child_flow."""
    counter = Counter()
    result = Formation("parent_flow").add_formation("child_flow", child_flow(counter, {1}), retries=1, backoff=0).run(None)
    assert (result.output, result.nodes["child_flow"].attempts, counter.count("child_flow")) == ("hello", 2, 2)


def test_a_subflow_retry_reruns_the_tasks_that_succeeded_in_the_failed_attempt() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_failed_child_flow_with_failed_task
    ("child tasks should run again with child flow")."""
    counter = Counter()

    def first(x: Any) -> Any:
        counter.hit("first")
        return x

    def child_task(_: Any) -> str:
        if counter.hit("child_task") == 1:
            raise ValueError()
        return "hello"

    child = Formation("child_flow").add_function("first", first).add_function("child_task", child_task)
    child.connect("first", "child_task")
    assert Formation("parent_flow").add_formation("child_flow", child, retries=1, backoff=0).run(None).output == "hello"
    assert counter.calls == {"first": 2, "child_task": 2}


def test_an_inner_nodes_retries_recover_without_retrying_the_subflow() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_with_failed_child_flow_with_retries."""
    counter = Counter()

    def child(_: Any) -> str:
        if counter.hit("child") == 1:
            raise ValueError()
        return "hello"

    inner = Formation("child_flow").add_function("child", child, retries=1, backoff=0)
    result = Formation("parent_flow").add_formation("child_flow", inner).run(None)
    assert (result.output, result.nodes["child_flow"].attempts, result.nodes["child_flow/child"].attempts) == (
        "hello", 1, 2)


def test_a_subflow_retry_gives_the_inner_node_its_retries_again() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_parent_flow_retries_failed_child_flow_with_retries
    ("child flow should run 2 times for each parent run")."""
    counter = Counter()

    def child(_: Any) -> str:
        if counter.hit("child") < 4:
            raise ValueError()
        return "hello"

    inner = Formation("child_flow").add_function("child", child, retries=1, backoff=0)
    result = Formation("parent_flow").add_formation("child_flow", inner, retries=1, backoff=0).run(None)
    assert (result.output, result.nodes["child_flow"].attempts, counter.count("child")) == ("hello", 2, 4)


# --- subflow timeouts -----------------------------------------------------------------


def test_a_subflow_timeout_cancels_its_async_work_and_reaches_an_error_edge() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_timeout_stops_execution_in_async_subflows
    (the parent goes on, holding the subflow's timed-out state)."""
    cancelled = threading.Event()
    inner = Formation("my_subflow").add_function("sleep", sleeps_until_cancelled(cancelled))
    f = (Formation("my_flow").add_formation("my_subflow", inner, timeout=0.1)
         .add_function("after", lambda failure: type(failure.error).__name__)
         .connect("my_subflow", "after", on_error=True))
    started = time.monotonic()
    assert f.run(None).outputs == {"after": "NodeTimeoutError"}
    assert time.monotonic() - started < 0.1 + SLACK
    assert cancelled.wait(2)


def test_a_sync_subflow_timeout_fails_at_the_limit_and_the_next_inner_node_never_runs() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_timeout_stops_execution_in_sync_subflows."""
    counter = Counter()
    release = threading.Event()

    def sleepy(x: Any) -> Any:
        release.wait(4)
        return x

    def timeout_noticing_task(x: Any) -> Any:
        counter.hit("after")
        return x

    inner = (Formation("my_subflow").add_function("sleepy", sleepy)
             .add_function("timeout_noticing_task", timeout_noticing_task).connect("sleepy", "timeout_noticing_task"))
    started = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError) as info:
            Formation("my_flow").add_formation("my_subflow", inner, timeout=0.1).run(None)
        assert time.monotonic() - started < 0.1 + SLACK
        assert isinstance(info.value.__cause__, NodeTimeoutError) and info.value.node == "my_subflow"
    finally:
        release.set()
    time.sleep(0.05)
    assert counter.count("after") == 0


def test_a_subflow_timeout_does_not_count_the_wait_for_its_upstream() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_subflow_timeout_waits_until_execution_starts."""
    completed = Counter()

    async def sleep_task(n: float) -> float:
        await asyncio.sleep(n)
        return n

    def downstream(_: Any) -> bool:
        completed.hit("downstream")
        return True

    f = (Formation("my_flow").add_map("sleepers", sleep_task)
         .add_formation("downstream_flow", Formation("d").add_function("downstream", downstream), timeout=1.0)
         .connect("sleepers", "downstream_flow"))
    assert f.run([0.3, 1.2]).output is True and completed.count("downstream") == 1


# --- concurrency ----------------------------------------------------------------------


def test_a_nodes_concurrency_bounds_the_runs_in_it_at_once() -> None:
    """Ported from PrefectHQ/prefect tests/test_task_runners.py (a ThreadPoolTaskRunner of
    ``max_workers`` bounds the submitted tasks in flight): ``concurrency=2`` runs two inputs
    at once, never three."""
    lock = threading.Lock()
    running = [0, 0]

    def work(x: int) -> int:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        return x

    with Formation("f").add_function("work", work, concurrency=2).start() as started:
        futures = [started.submit(i) for i in range(6)]
        assert [fut.result(timeout=10).output for fut in futures] == list(range(6))
    assert running[1] == 2


# --- backend="ray" --------------------------------------------------------------------


def _add_one(x: int) -> int:
    return x + 1


def _flaky_on_first_item(x: int) -> int:
    # state across attempts lives in the item: Ray replicas are processes
    if x < 0:
        raise ValueError("negative")
    return x * 10


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_map_on_ray_keeps_item_order() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_simple_map on backend="ray"."""
    f = Formation("my_flow").add_map("add_one", _add_one, max_workers=2)
    assert f.run([1, 2, 3], backend="ray", timeout=120).output == [2, 3, 4]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_failing_item_on_ray_fails_the_node_naming_the_item() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_allow_failure_chained_mapped_tasks on backend="ray"."""
    f = Formation("test_flow").add_map("fails", _flaky_on_first_item)
    with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 1: ValueError: negative"):
        f.run([1, -2, 3], backend="ray", timeout=120)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_subflow_on_ray_gives_its_output_and_path_traces() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestSubflowCalls::test_subflow_call_with_returned_task on backend="ray"."""
    child = Formation("child").add_function("compute", xyz)
    result = Formation("parent").add_formation("child", child).run({"x": 1, "y": 2, "z": 3}, backend="ray", timeout=120)
    assert result.output == 6 and result.nodes["child/compute"].status == "succeeded"
