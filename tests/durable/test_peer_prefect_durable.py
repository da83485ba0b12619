"""Flow retries over persisted results, ported from Prefect's own test suite
(PrefectHQ/prefect, ``tests/test_flows.py::TestFlowRetries`` and ``TestFlowResults``):
Prefect's ``persist_result=True`` plus a flow retry is a journalled run (a ``RunStore``,
SQLite or PostgreSQL) continued with ``resume``: the visits the journal holds are not
run again, what failed runs again. (``tests/formation/test_peer_prefect.py``'s module
docstring maps the rest of Prefect onto formations.)

Deliberately different: a Prefect flow retries itself (``@flow(retries=1)``), in the
same call; a failed run of ours is continued by an explicit ``resume`` (DESIGN "Durable
runs"), in this process or any other, and a formation node's ``retries`` rerun its
inner run without a journal.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pydantic
import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, NoStoreError
from wingman_actors.store import RunStore


class FlowInput(pydantic.BaseModel):
    x: int


class ParameterTestClass:
    """A plain class: the journal cannot store it as data."""

    def __init__(self, v: int) -> None:
        self.v = v


def counted(counter: Counter, name: str, fail_while: list[bool] | None = None) -> Any:
    """A node that counts its calls and raises ValueError while ``fail_while[0]`` is True."""

    def node(x: Any) -> Any:
        counter.hit(name)
        if fail_while is not None and fail_while[0]:
            raise ValueError(f"{name} fails")
        return f"{x}{name}"

    node.__name__ = name
    return node


def test_resuming_a_failed_run_does_not_run_its_persisted_task_again(location: str) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_successful_task."""
    counter, broken = Counter(), [True]
    f = (Formation("foo").add_function("my_task", counted(counter, "my_task"))
         .add_function("flow_body", counted(counter, "flow_body", broken)).connect("my_task", "flow_body"))
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'flow_body'") as info:
            f.run("hello:", store=store)
        broken[0] = False
        assert f.resume(info.value.run_id, store=store).output == "hello:my_taskflow_body"
    assert counter.calls == {"my_task": 1, "flow_body": 2}


def test_resuming_runs_the_task_that_failed_again(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_no_error_in_flow_and_one_failed_task
    ("Task should be reset and run again")."""
    counter, broken = Counter(), [True]
    f = Formation("foo").add_function("my_task", counted(counter, "my_task", broken))
    with pytest.raises(FormationRuntimeError) as info:
        f.run("x", store=store)
    broken[0] = False
    assert f.resume(info.value.run_id, store=store).output == "xmy_task"
    assert counter.count("my_task") == 2


def test_resuming_does_not_run_a_finished_subflow_again(location: str) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_one_successful_child_flow
    ("Child flow should not run again")."""
    counter, broken = Counter(), [True]
    child = Formation("child_flow").add_function("child", counted(counter, "child"))
    f = (Formation("parent_flow").add_formation("child_flow", child)
         .add_function("after", counted(counter, "after", broken)).connect("child_flow", "after"))
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'after'") as info:
            f.run("hello:", store=store)
        broken[0] = False
        assert f.resume(info.value.run_id, store=store).output == "hello:childafter"
    assert counter.calls == {"child": 1, "after": 2}


def test_resuming_runs_a_failed_subflow_again_but_not_its_finished_tasks(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_one_failed_child_flow
    ("Child flow should run again"): the inner visits journalled before the failure are
    not repeated (DESIGN "Nested formations": a resume does not repeat them)."""
    counter, broken = Counter(), [True]
    child = (Formation("child_flow").add_function("first", counted(counter, "first"))
             .add_function("child", counted(counter, "child", broken)).connect("first", "child"))
    f = Formation("parent_flow").add_formation("child_flow", child)
    with pytest.raises(FormationRuntimeError, match=r"child_flow/child") as info:
        f.run("hello:", store=store)
    broken[0] = False
    assert f.resume(info.value.run_id, store=store).output == "hello:firstchild"
    assert counter.calls == {"first": 1, "child": 2}


def test_a_journalled_subflows_retry_does_not_rerun_the_inner_tasks_that_finished(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_failed_child_flow_with_failed_task
    with persisted results. Without a store, a subflow's retry reruns its whole inner run
    (``test_peer_prefect_subflows.py``), as Prefect's does; in a journalled run the retry
    resumes the inner run (docs: "A visit that runs again (a retry, or a resume...)
    resumes that inner run"), as Prefect reuses persisted task results."""
    counter = Counter()

    def child_task(x: str) -> str:
        if counter.hit("child_task") == 1:
            raise ValueError()
        return x + "hello"

    child = (Formation("child_flow").add_function("first", counted(counter, "first"))
             .add_function("child_task", child_task).connect("first", "child_task"))
    f = Formation("parent_flow").add_formation("child_flow", child, retries=1, backoff=0)
    result = f.run("", store=store)
    assert (result.output, result.nodes["child_flow"].attempts) == ("firsthello", 2)
    assert counter.calls == {"first": 1, "child_task": 2}


def test_a_skipped_subflow_stays_skipped_on_resume_without_running_again(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_one_successful_child_flow,
    the child flow's one task failing into ``on_error="skip"`` (so the child has no
    result): the resume does not run the child again, and what depends on it stays skipped."""
    counter, broken = Counter(), [True]

    def child(_: Any) -> str:
        counter.hit("child")
        raise ValueError("no result")

    skipped = threading.Event()  # 'other' fails the run once the skip is journalled (it is, before the event)

    def other(x: str) -> str:
        skipped.wait(5)
        return counted(counter, "other", broken)(x)

    f = (Formation("parent_flow")
         .add_formation("child_flow", Formation("c").add_function("child", child, on_error="skip"))
         .add_function("after", counted(counter, "after")).add_function("other", other)
         .connect("child_flow", "after"))
    with pytest.raises(FormationRuntimeError, match=r"node 'other'") as info:
        f.run("x", store=store, on_event=lambda e: skipped.set() if (e.type, e.node) == ("node_skipped", "child_flow")
              else None)
    broken[0] = False
    result = f.resume(info.value.run_id, store=store)
    assert result.outputs == {"other": "xother"}
    assert (result.nodes["child_flow"].status, result.nodes["after"].status) == ("skipped", "skipped")
    assert counter.calls == {"child": 1, "other": 2}


def test_a_resumed_node_gets_its_retries_again(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_one_failed_task_with_retries
    ("Task should use all of its retries every time")."""
    counter = Counter()

    def my_task(x: str) -> str:
        n = counter.hit("my_task")
        if n in (1, 2, 3):  # both attempts of the first run, the first of the resumed one
            raise ValueError(f"fail {n}")
        return x + "hello"

    f = Formation("foo").add_function("my_task", my_task, retries=1, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"after 2 attempt") as info:
        f.run("", store=store)
    result = f.resume(info.value.run_id, store=store)
    assert (result.output, result.nodes["my_task"].attempts, counter.count("my_task")) == ("hello", 2, 4)


def test_a_resumed_node_that_keeps_failing_spends_its_retries_again_and_fails(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_one_failed_task_with_retries_cannot_exceed_retries."""
    counter = Counter()

    def my_task(_: Any) -> None:
        counter.hit("my_task")
        raise ValueError("This task always fails")

    f = Formation("my_flow").add_function("my_task", my_task, retries=2, backoff=0)
    with pytest.raises(FormationRuntimeError) as info:
        f.run(None, store=store)
    with pytest.raises(FormationRuntimeError, match=r"This task always fails") as again:
        f.resume(info.value.run_id, store=store)
    assert again.value.run_id == info.value.run_id and counter.count("my_task") == 6
    assert store.get(info.value.run_id).status == "failed"


def test_resuming_a_failed_map_runs_only_the_items_that_failed(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_successful_task
    over a mapped task: the mapped runs whose results were persisted are not run again."""
    counter, broken = Counter(), [True]

    def item(x: int) -> int:
        counter.hit(x)
        if x == 2 and broken[0]:
            raise ValueError("two")
        return x * 10

    f = Formation("f").add_map("m", item)
    with pytest.raises(FormationRuntimeError, match=r"item 1: ValueError: two") as info:
        f.run([1, 2, 3], store=store)
    broken[0] = False
    assert f.resume(info.value.run_id, store=store).output == [10, 20, 30]
    assert counter.calls == {1: 1, 2: 2, 3: 1}


def test_a_finished_runs_result_is_persisted_in_the_store(location: str) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowResults::test_flow_results_default_to_temporary_directory
    (the flow's result is stored and can be read back): the journal holds each visit's output."""
    f = Formation("foo").add_function("six", lambda _: 6).add_function("double", lambda x: x * 2).connect("six", "double")
    with RunStore(location) as store:
        result = f.run(None, store=store)
        record = store.get(result.run_id)
        loaded = store.load(result.run_id)
        assert (record.status, record.formation) == ("succeeded", "foo")
        assert (loaded.visits["six"], loaded.visits["double"]) == ({1: 6}, {1: 12})


def test_an_async_run_resumes_from_an_async_caller_without_rerunning_what_finished(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowRetries::test_flow_retry_with_error_in_flow_and_successful_task
    with async tasks in an async flow (``arun`` / ``aresume``)."""
    counter, broken = Counter(), [True]

    async def my_task(x: str) -> str:
        counter.hit("my_task")
        await asyncio.sleep(0)
        return x + "hello"

    async def flow_body(x: str) -> str:
        counter.hit("flow_body")
        if broken[0]:
            raise ValueError()
        return x + "!"

    f = Formation("foo").add_function("my_task", my_task).add_function("flow_body", flow_body)
    f.connect("my_task", "flow_body")

    async def main() -> Any:
        try:
            await f.arun("", store=store)
        except FormationRuntimeError as err:
            broken[0] = False
            return (await f.aresume(err.run_id or "", store=store)).output
        raise AssertionError("the first run should fail")

    assert asyncio.run(main()) == "hello!"
    assert counter.calls == {"my_task": 1, "flow_body": 2}



def test_a_result_of_a_plain_class_is_refused_by_the_journal_unless_pickling_is_allowed(tmp_path: Path) -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowParameterTypes::test_flow_parameters_can_be_unserializable_types
    with ``persist_result=True`` (Prefect pickles results by default). Ours journals JSON-like
    data and says how to store anything else: ``RunStore(path, allow_pickle=True)``,
    with which a resumed run gets the object back."""
    f = Formation("my_flow").add_function("make", lambda _: ParameterTestClass(1))
    with RunStore(tmp_path / "plain.sqlite") as store, pytest.raises(
            FormationRuntimeError, match=r"cannot journal.*RunStore\(path, allow_pickle=True\)"):
        f.run(None, store=store)
    broken = [True]

    def after(x: ParameterTestClass) -> int:
        if broken[0]:
            raise ValueError("once")
        return x.v

    f.add_function("after", after).connect("make", "after")
    with RunStore(tmp_path / "pickled.sqlite", allow_pickle=True) as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'after'") as info:
            f.run(None, store=store)
        broken[0] = False
        assert f.resume(info.value.run_id, store=store).output == 1


# --- pause_flow_run / suspend_flow_run: interrupt() -------------------------------------


def test_a_suspended_run_returns_at_once_without_running_what_follows(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flow_engine.py::TestSuspendFlowRun::test_suspended_flow_runs_do_not_block_execution
    and TestPauseFlowRun::test_paused_flows_block_execution_in_async_flows ("only two tasks
    should have completed")."""
    counter = Counter()

    def pause(x: str) -> str:
        counter.hit("pause")
        return x + str(interrupt({"wait_for_input": "x"}))

    f = (Formation("pausing_flow").add_function("foo", counted(counter, "foo")).add_function("pause", pause)
         .add_function("after", counted(counter, "after")).connect("foo", "pause", "after"))
    started = time.monotonic()
    result = f.run("", store=store)
    assert time.monotonic() - started < 5
    assert (result.status, result.interrupt) == ("suspended", {"node": "pause", "payload": {"wait_for_input": "x"}})
    assert counter.calls == {"foo": 1, "pause": 1} and store.get(result.run_id).status == "suspended"


def test_a_suspended_run_resumes_with_the_answer_as_its_input_without_repeating_what_ran(location: str) -> None:
    """Ported from PrefectHQ/prefect tests/test_flow_engine.py::TestPauseFlowRun::test_paused_flows_can_receive_input
    (``resume_flow_run(id, run_input={"x": 42})`` gives the flow a validated FlowInput) and
    ::test_paused_flows_can_be_resumed (the tasks before the pause are not repeated)."""
    counter = Counter()

    def pausing_flow(_: Any) -> FlowInput:
        counter.hit("pausing_flow")
        return FlowInput.model_validate(interrupt({"schema": FlowInput.model_json_schema()}))

    f = (Formation("f").add_function("foo", counted(counter, "foo")).add_function("pausing_flow", pausing_flow)
         .connect("foo", "pausing_flow"))
    with RunStore(location) as store:
        paused = f.run("", store=store)
        assert paused.interrupt is not None and paused.interrupt["payload"]["schema"]["title"] == "FlowInput"
        done = f.resume(paused.run_id, store=store, answer={"x": 42})
    assert done.output == FlowInput(x=42)
    assert counter.calls == {"foo": 1, "pausing_flow": 2}  # the paused visit runs again up to its interrupt()


def test_a_pause_inside_a_subflow_suspends_the_parent_run(store: RunStore) -> None:
    """Ported from PrefectHQ/prefect tests/test_flow_engine.py::TestSuspendFlowRun::test_suspending_sub_flow_run_fails.
    Prefect refuses to suspend a subflow; ours suspends the whole run (DESIGN "Nested
    formations": an ``interrupt()`` inside suspends the outer run), and resume continues it."""
    inner = Formation("suspending_flow").add_function("ask", lambda x: f"{x} {interrupt('ok?')}")
    f = Formation("main_flow").add_formation("suspending_flow", inner)
    paused = f.run("go", store=store)
    assert (paused.status, paused.interrupt) == ("suspended", {"node": "suspending_flow/ask", "payload": "ok?"})
    assert f.resume(paused.run_id, store=store, answer="yes").output == "go yes"


def test_a_pause_without_a_store_fails_naming_the_fix() -> None:
    """Ported from PrefectHQ/prefect tests/test_flow_engine.py::TestSuspendFlowRun::test_suspending_flow_run_without_deployment_fails
    ("Cannot suspend flows without a deployment"): ours cannot suspend a run no store
    journals, and is never retried."""
    f = Formation("suspending_flow").add_function("ask", lambda x: interrupt("ok?"), retries=2)
    with pytest.raises(FormationRuntimeError, match=r"store") as info:
        f.run("go")
    assert isinstance(info.value.__cause__, NoStoreError) and info.value.attempts == 1
