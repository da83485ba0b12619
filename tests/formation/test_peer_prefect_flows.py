"""Flow timeouts, submitted runs' futures and flow parameters validated against their
annotations, ported from Prefect's own test suite (PrefectHQ/prefect,
``tests/test_flows.py::TestFlowTimeouts``, ``TestFlowCall``, ``TestFlowParameterTypes``;
``tests/test_tasks.py::TestTaskFutures``). A flow's ``timeout_seconds`` is the run's
``timeout``; a flow's parameters are the run's input, checked against the first node's
annotations. (Split from ``test_peer_prefect.py``, whose module docstring maps Prefect
onto formations.)

Deliberately different: Prefect's ParameterTypeError is our PayloadError (never retried),
the cause of the run's FormationRuntimeError; a run's result is a copy of a mutable
input, not the caller's object (DESIGN "Payloads are isolated").
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any

import pydantic
import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, PayloadError

SLACK = 1.5  # what a loaded machine may add to a time limit (measured: < 0.05 s); a run that waits for stuck code (4 s) exceeds it


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: stuck node code waits on it (up to 4 s), so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def fails(message: str = "Test") -> Any:
    def node(_: Any) -> Any:
        raise ValueError(message)

    return node


# --- flow timeouts ---------------------------------------------------------------------


def test_a_run_timeout_fails_the_run_without_waiting_for_the_stuck_node(release: threading.Event) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_flows_fail_with_timeout
    and ::test_timeout_does_not_wait_for_completion_for_sync_flows. Prefect's state says
    "exceeded timeout of 0.1 second(s)"; ours "timed out after 0.1s", naming what was unfinished."""
    completed = threading.Event()

    def my_flow(_: Any) -> None:
        release.wait(4)
        completed.set()

    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.1s; unfinished: my_flow") as info:
        Formation("f").add_function("my_flow", my_flow).run(None, timeout=0.1)
    assert time.monotonic() - started < 0.1 + SLACK
    assert not completed.is_set() and info.value.node is None


def test_a_run_timeout_only_applies_when_exceeded() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_timeout_only_applies_if_exceeded."""

    def my_flow(_: Any) -> str:
        time.sleep(0.05)
        return "done"

    assert Formation("f").add_function("my_flow", my_flow).run(None, timeout=10).status == "succeeded"


def test_after_a_run_timeout_the_next_node_never_runs_even_when_the_stuck_one_returns() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_timeout_stops_execution_at_next_task_for_sync_flows."""
    counter = Counter()
    began, returned = threading.Event(), threading.Event()

    def slow(x: int) -> int:
        began.set()
        time.sleep(0.4)
        returned.set()
        return x

    def my_task(x: int) -> int:
        counter.hit("my_task")
        return x

    f = Formation("f").add_function("slow", slow).add_function("my_task", my_task).connect("slow", "my_task")
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.1s"):
        f.run(1, timeout=0.1)
    if began.is_set():  # (a loaded machine may spend the 0.1 s starting the formation: then it never ran)
        assert returned.wait(4)  # the abandoned attempt came back: its value goes nowhere
    time.sleep(0.05)
    assert counter.count("my_task") == 0


def test_a_run_timeout_cancels_an_async_node_at_its_next_await() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_async_flows_fail_with_timeout
    and ::test_timeout_stops_execution_after_await_for_async_flows."""
    cancelled = threading.Event()
    completed = threading.Event()

    async def my_flow(_: Any) -> None:
        try:
            for _ in range(100):
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        completed.set()

    with Formation("f").add_function("my_flow", my_flow).start() as running:  # started: the limit is the run's own
        started = time.monotonic()
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.3s"):
            running.submit(None, timeout=0.3).result(timeout=10)
        assert time.monotonic() - started < 0.3 + SLACK
    assert cancelled.wait(2) and not completed.is_set()


# --- submitted runs and their futures --------------------------------------------------


def test_a_submitted_runs_future_times_out_while_the_run_is_in_flight_then_gives_the_result() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskFutures::test_result_raises_with_timeout_exceeded
    and ::test_result_returns_data_with_timeout_not_exceeded."""
    go = threading.Event()

    def foo(_: Any) -> int:
        go.wait(4)
        return 1

    with Formation("my_flow").add_function("foo", foo).start() as running:
        future = running.submit(None)
        with pytest.raises(FutureTimeoutError):
            future.result(timeout=0.01)
        go.set()
        assert future.result(timeout=5).output == 1


def test_a_submitted_runs_future_raises_the_runs_failure() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskFutures::test_result_raises_exception_from_task
    and ::test_result_returns_exception_from_task_if_asked (``exception()`` gives it without raising)."""
    with Formation("my_flow").add_function("foo", fails()).start() as running:
        future = running.submit(None)
        with pytest.raises(FormationRuntimeError) as info:
            future.result(timeout=5)
        assert isinstance(info.value.__cause__, ValueError)
        assert future.exception(timeout=5) is info.value


# --- flow parameters --------------------------------------------------------------------


class ParameterTestModel(pydantic.BaseModel):
    data: int


class ParameterTestClass:
    pass


def test_an_input_that_does_not_fit_the_annotation_fails_with_a_payload_error_naming_the_node() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowCall::test_fails_but_does_not_raise_on_incompatible_parameter_types
    and TestSubflowCalls::test_subflow_with_invalid_parameters_is_failed (ParameterTypeError
    "invalid parameters"); ours is a PayloadError naming the edge and node, never retried."""

    def child(x: int) -> int:
        return x

    with pytest.raises(FormationRuntimeError, match=r"edge 'input' → 'child'.*int") as info:
        Formation("parent").add_function("child", child, retries=3).run("foo")
    assert isinstance(info.value.__cause__, PayloadError) and info.value.attempts == 1


def test_inputs_are_coerced_to_the_annotated_types() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowCall::test_call_coerces_parameter_types
    (``foo(x="1", y=["2", "3"], zt=CustomType(z=4).model_dump())`` gives 10)."""

    def foo(x: int, y: list[int], zt: ParameterTestModel) -> int:
        return x + sum(y) + zt.data

    f = (Formation("f").add_function("x", lambda v: v["x"]).add_function("y", lambda v: v["y"])
         .add_function("zt", lambda v: v["zt"]).add_function("foo", foo)
         .connect("x", "foo").connect("y", "foo").connect("zt", "foo"))
    assert f.run({"x": "1", "y": ["2", "3"], "zt": ParameterTestModel(data=4).model_dump()}).output == 10


def test_an_annotation_of_a_plain_class_accepts_its_instances() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowParameterTypes::test_flow_parameter_annotations_can_be_non_pydantic_classes.
    Prefect returns the caller's own object; ours a copy (DESIGN "Payloads are isolated":
    a mutable value kept in the result is copied), of the same class."""
    instance = ParameterTestClass()

    def my_flow(i: ParameterTestClass) -> ParameterTestClass:
        return i

    out = Formation("f").add_function("my_flow", my_flow).run(instance).output
    assert isinstance(out, ParameterTestClass) and out is not instance


def test_a_container_annotation_checks_its_items() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowParameterTypes::test_type_container_flow_inputs."""

    def type_container_input_flow(arg1: list[str]) -> str:
        return ",".join(arg1)

    f = Formation("f").add_function("type_container_input_flow", type_container_input_flow)
    assert f.run(["a", "b", "c"]).output == "a,b,c"
    with pytest.raises(FormationRuntimeError, match=r"list\[str\]") as info:
        f.run([1, 2])
    assert isinstance(info.value.__cause__, PayloadError)
