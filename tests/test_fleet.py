"""Fleets: many tasks, one fresh session each, driven by the scripted provider."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from wingman_actors import Agent, tool
from wingman_actors._cancel import current_token
from wingman_actors.agents._fleet import DEFAULT_MAX_WORKERS, Fleet, FleetResult, Task
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


def first_text(request: InferenceRequest) -> str:
    return request.messages[0].text


def echo(request: InferenceRequest) -> str:
    return f"echo {first_text(request)}"


def agent_with(*replies: object, latency_s: float = 0.0, cycle: bool = True, **kw: object) -> Agent:
    provider = ScriptedProvider(replies, latency_s=latency_s, cycle=cycle)  # type: ignore[arg-type]
    return Agent("w", provider=provider, **kw)  # type: ignore[arg-type]


def provider_of(agent: Agent) -> ScriptedProvider:
    assert isinstance(agent.provider, ScriptedProvider)
    return agent.provider


class Meter:
    """A reply that tracks how many calls run at once."""

    def __init__(self, hold_s: float = 0.05) -> None:
        self.hold_s = hold_s
        self.lock = threading.Lock()
        self.current = 0
        self.peak = 0

    def __call__(self, request: InferenceRequest) -> str:
        with self.lock:
            self.current += 1
            self.peak = max(self.peak, self.current)
        time.sleep(self.hold_s)
        with self.lock:
            self.current -= 1
        return "ok"


def wait_for_cancel(request: InferenceRequest) -> str:
    """A reply that waits (cancellably) when the task says "slow"."""
    if first_text(request) == "slow":
        token = current_token()
        assert token is not None
        token.sleep(5.0)
    return "done"


# -- results ------------------------------------------------------------------------


def test_run_returns_one_result_per_task_in_task_order() -> None:
    fleet = Fleet(agent_with(echo, latency_s=0.02), [Task(f"t{i}", data={"n": i}) for i in range(5)])
    results = fleet.run()
    assert [r.task_index for r in results] == [0, 1, 2, 3, 4]
    assert [r.worker_name for r in results] == [f"w-{i}" for i in range(5)]
    assert [r.data for r in results] == [{"n": i} for i in range(5)]
    assert [r.response for r in results] == [f"echo t{i}" for i in range(5)]
    assert all(r.ok and r.error is None for r in results)


def test_string_tasks_are_accepted() -> None:
    results = Fleet(agent_with(echo), ["a", "b"]).run()
    assert [(r.response, r.data) for r in results] == [("echo a", None), ("echo b", None)]


def test_an_empty_fleet_returns_no_results() -> None:
    fleet = Fleet(agent_with("unused"), [])
    assert fleet.run() == []
    assert list(fleet.run_stream()) == []


def test_run_stream_yields_results_in_completion_order() -> None:
    # Task i finishes only once the stream has yielded task i + 1: events fix the order,
    # not sleeps (a stream in task order would leave task 0 waiting, then failing).
    yielded = [threading.Event() for _ in range(3)]

    def after_the_next_task(request: InferenceRequest) -> str:
        index = int(first_text(request)[1:])
        if index < 2 and not yielded[index + 1].wait(10):
            raise AssertionError(f"task {index + 1} was not yielded before task {index} finished")
        return "ok"

    fleet = Fleet(agent_with(after_the_next_task), ["t0", "t1", "t2"])
    order = []
    for result in fleet.run_stream():
        assert result.ok, result.error
        order.append(result.task_index)
        yielded[result.task_index].set()
    assert order == [2, 1, 0]


def test_a_result_records_the_task_duration() -> None:
    [result] = Fleet(agent_with("ok", latency_s=0.05), ["x"]).run()
    assert result.duration_s >= 0.05


def test_a_failed_result_has_an_empty_response() -> None:
    result = FleetResult(0, "w-0", None, RuntimeError("boom"))
    assert (result.ok, result.response) == (False, "")


# -- per-task configuration ---------------------------------------------------------


def test_per_task_instructions_reach_the_provider() -> None:
    agent = agent_with("ok", latency_s=0.02, instructions="default")
    Fleet(agent, [Task("a", instructions="Be brief."), Task("b"), Task("c", instructions="Be bold.")]).run()
    seen = {first_text(r): r.instructions for r in provider_of(agent).requests}
    assert seen == {"a": "Be brief.", "b": "default", "c": "Be bold."}


def test_per_task_work_dir_reaches_the_session(tmp_path: Path) -> None:
    @tool
    def where(ctx: ToolContext) -> str:
        """Report the working directory."""
        return str(ctx.work_dir)

    def call_then_report(request: InferenceRequest) -> str | InferenceResponse:
        if len(request.messages) == 1:
            return InferenceResponse.of_tool_calls([("c1", "where", {})])
        return request.messages[-1].content[0].content or ""

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    agent = agent_with(call_then_report, tools=[where])
    tasks = [Task("one", work_dir=tmp_path / "a"), Task("two", work_dir=str(tmp_path / "b"))]
    results = Fleet(agent, tasks).run()
    assert [r.response for r in results] == [str((tmp_path / d).resolve()) for d in ("a", "b")]


def test_each_task_session_is_closed_afterwards() -> None:
    closed: list[str] = []

    @tool
    def remember(ctx: ToolContext) -> str:
        """Register a closer."""
        ctx.on_close(lambda: closed.append("closed"))
        return "ok"

    def call_then_answer(request: InferenceRequest) -> str | InferenceResponse:
        if len(request.messages) == 1:
            return InferenceResponse.of_tool_calls([("c1", "remember", {})])
        return "done"

    Fleet(agent_with(call_then_answer, tools=[remember]), ["a", "b", "c"]).run()
    assert closed == ["closed"] * 3


def test_a_task_timeout_fails_only_that_task() -> None:
    fleet = Fleet(agent_with(wait_for_cancel), ["fast", "slow"], timeout=0.2)
    fast, slow = fleet.run()
    assert fast.ok
    assert isinstance(slow.error, AgentError) and slow.error.kind is ErrorKind.TIMEOUT


# -- concurrency --------------------------------------------------------------------


def test_max_workers_is_a_hard_cap() -> None:
    meter = Meter()
    results = Fleet(agent_with(meter), [f"t{i}" for i in range(20)], max_workers=3).run()
    assert len(results) == 20
    assert meter.peak == 3


def test_max_workers_zero_runs_every_task_at_once_for_small_fleets() -> None:
    barrier = threading.Barrier(5, timeout=5)
    meter = Meter(hold_s=0.0)

    def meet(request: InferenceRequest) -> str:
        barrier.wait()  # would time out if fewer than five ran at once
        return meter(request)

    fleet = Fleet(agent_with(meet), [f"t{i}" for i in range(5)])
    assert fleet.cap == 5
    assert all(r.ok for r in fleet.run())


def test_max_workers_zero_is_capped_at_the_default_for_large_fleets() -> None:
    fleet = Fleet(agent_with("ok"), ["t"] * (DEFAULT_MAX_WORKERS + 5))
    assert fleet.cap == DEFAULT_MAX_WORKERS


def test_an_external_executor_is_used_and_left_running() -> None:
    threads: set[str] = set()

    def record(request: InferenceRequest) -> str:
        threads.add(threading.current_thread().name)
        return "ok"

    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="actor-pool")
    try:
        results = Fleet(agent_with(record), ["a", "b", "c"], executor=pool).run()
        assert all(r.ok for r in results)
        assert threads and all(name.startswith("actor-pool") for name in threads)
        assert pool.submit(lambda: 42).result(timeout=5) == 42  # still accepts work
    finally:
        pool.shutdown(wait=True)


def test_an_external_executor_never_holds_more_than_max_workers_tasks() -> None:
    meter = Meter(hold_s=0.03)
    pool = ThreadPoolExecutor(max_workers=8)
    try:
        results = Fleet(agent_with(meter), [f"t{i}" for i in range(12)], max_workers=2, executor=pool).run()
        assert len(results) == 12
        assert meter.peak == 2
    finally:
        pool.shutdown(wait=True)


def test_closing_run_stream_early_leaks_no_thread_and_starts_no_more_tasks() -> None:
    agent = agent_with("ok", latency_s=0.05)
    stream = Fleet(agent, [f"t{i}" for i in range(10)], max_workers=2).run_stream()
    first = next(stream)
    stream.close()  # type: ignore[attr-defined]
    calls_at_close = provider_of(agent).calls
    assert first.ok
    assert calls_at_close <= 4  # two at first; each worker may have taken one more before the close
    time.sleep(0.1)
    assert provider_of(agent).calls == calls_at_close  # nothing starts after the close
    assert not [t for t in threading.enumerate() if t.name.startswith("wingman-fleet-")]


# -- failures -----------------------------------------------------------------------


def test_a_failing_task_yields_an_error_result_and_the_others_succeed() -> None:
    def fail_b(request: InferenceRequest) -> str:
        if first_text(request) == "b":
            raise AgentError("model overloaded", kind=ErrorKind.AGENT)
        return "ok"

    results = Fleet(agent_with(fail_b, latency_s=0.02), ["a", "b", "c"]).run()
    assert [r.ok for r in results] == [True, False, True]
    failed = results[1]
    assert failed.result is None and failed.response == ""
    assert isinstance(failed.error, AgentError) and failed.error.message == "model overloaded"


def test_any_exception_from_a_task_is_captured() -> None:
    results = Fleet(agent_with(RuntimeError("boom"), "ok", cycle=False), ["a", "b"], max_workers=1).run()
    assert isinstance(results[0].error, RuntimeError)
    assert results[1].response == "ok"


def test_a_missing_work_dir_fails_only_that_task(tmp_path: Path) -> None:
    tasks = [Task("a", work_dir=tmp_path / "missing"), Task("b", work_dir=tmp_path)]
    missing, present = Fleet(agent_with("ok"), tasks).run()
    assert isinstance(missing.error, ValueError) and "missing" in str(missing.error)
    assert present.ok


def test_a_thousand_tasks_with_ten_percent_failures_give_a_thousand_results_in_order() -> None:
    def fail_every_tenth(request: InferenceRequest) -> str:
        index = int(first_text(request).removeprefix("task-"))
        if index % 10 == 0:
            raise AgentError(f"task {index} failed", kind=ErrorKind.AGENT)
        return f"done {index}"

    tasks = [Task(f"task-{i}", data=i) for i in range(1000)]
    results = Fleet(agent_with(fail_every_tenth), tasks, max_workers=20).run()
    assert len(results) == 1000
    assert [r.task_index for r in results] == list(range(1000))
    assert [r.data for r in results] == list(range(1000))
    assert sum(1 for r in results if not r.ok) == 100
    assert all(r.ok == (r.task_index % 10 != 0) for r in results)


# -- cancellation -------------------------------------------------------------------


def test_cancel_makes_unstarted_tasks_fail_with_kind_cancelled() -> None:
    fleet = Fleet(agent_with("ok", latency_s=0.2), [f"t{i}" for i in range(6)], max_workers=1)
    stream = fleet.run_stream()
    first = next(stream)
    fleet.cancel("user pressed stop")
    rest = list(stream)
    assert first.ok
    assert len(rest) == 5
    for r in rest:
        assert isinstance(r.error, AgentError) and r.error.kind is ErrorKind.CANCELLED
        assert "user pressed stop" in str(r.error)


def test_cancel_stops_running_sessions() -> None:
    fleet = Fleet(agent_with(wait_for_cancel), ["fast", "slow"])
    stream = fleet.run_stream()
    started = time.monotonic()
    assert next(stream).response == "done"
    fleet.cancel()
    [slow] = list(stream)
    assert isinstance(slow.error, AgentError) and slow.error.kind is ErrorKind.CANCELLED
    assert time.monotonic() - started < 5


def test_a_cancelled_fleet_runs_nothing() -> None:
    agent = agent_with("ok")
    fleet = Fleet(agent, ["a", "b"])
    fleet.cancel()
    assert fleet.cancelled
    assert all(isinstance(r.error, AgentError) and r.error.kind is ErrorKind.CANCELLED for r in fleet.run())
    assert provider_of(agent).calls == 0


# -- arguments ----------------------------------------------------------------------


def test_a_negative_max_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="max_workers"):
        Fleet(agent_with("ok"), ["a"], max_workers=-1)


def test_a_task_that_is_neither_task_nor_str_is_refused_by_position() -> None:
    with pytest.raises(TypeError, match="task 1 must be a Task or a str, got int"):
        Fleet(agent_with("ok"), ["a", 7])  # type: ignore[list-item]


def test_a_non_agent_is_refused() -> None:
    with pytest.raises(TypeError, match="Fleet needs an Agent, got str"):
        Fleet("agent", ["a"])  # type: ignore[arg-type]


def test_a_bare_string_as_tasks_is_refused() -> None:
    with pytest.raises(TypeError, match="list of Task or str, got str"):
        Fleet(agent_with("ok"), "abc")


def test_a_non_positive_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        Fleet(agent_with("ok"), ["a"], timeout=0)


def test_a_task_message_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="Task message must be a str, got int"):
        Task(3)  # type: ignore[arg-type]


def test_len_and_repr_describe_the_fleet() -> None:
    fleet = Fleet(agent_with("ok"), ["a", "b", "c"], max_workers=2, timeout=1.5)
    assert len(fleet) == 3
    assert repr(fleet) == "Fleet(agent='w', tasks=3, max_workers=2, timeout=1.5, executor=own)"


def _refuse_fleet_threads_after(monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
    """Make Thread.start fail, as an exhausted system does, for fleet workers past ``allowed``."""
    real_start = threading.Thread.start
    started = [0]

    def start(self: threading.Thread) -> None:
        if self.name.startswith("wingman-fleet-"):
            if started[0] >= allowed:
                raise RuntimeError("can't start new thread")
            started[0] += 1
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)


def test_when_the_system_refuses_more_threads_the_started_workers_run_every_task(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _refuse_fleet_threads_after(monkeypatch, 2)
    results = Fleet(agent_with(echo), [f"t{i}" for i in range(7)], max_workers=5).run()

    assert [r.response for r in results] == [f"echo t{i}" for i in range(7)]
    assert [r.worker_name for r in results] == [f"w-{i}" for i in range(7)]
    assert "started only 2 of 5 workers" in caplog.text


def test_a_fleet_that_cannot_start_any_worker_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_fleet_threads_after(monkeypatch, 0)
    with pytest.raises(RuntimeError, match="fleet 'w' could not start any worker: can't start new thread"):
        Fleet(agent_with(echo), ["a", "b"], max_workers=2).run()


def test_a_shut_down_executor_is_reported_not_waited_on() -> None:
    pool = ThreadPoolExecutor(2)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="could not start any worker"):
        Fleet(agent_with(echo), ["a"], executor=pool).run()


# --- lazily rendered tasks -----------------------------------------------------------


def test_render_builds_each_task_in_the_worker_that_runs_it() -> None:
    threads: dict[int, str] = {}

    def render(item: int) -> Task:
        threads[item] = threading.current_thread().name
        return Task(f"item {item}", data={"item": item})

    results = Fleet(agent_with(echo), [3, 1, 2], max_workers=2, render=render).run()

    assert [(r.response, r.data) for r in results] == [
        ("echo item 3", {"item": 3}), ("echo item 1", {"item": 1}), ("echo item 2", {"item": 2}),
    ]
    assert sorted(threads) == [1, 2, 3]
    assert all(name.startswith("wingman-fleet-w-") for name in threads.values()), threads


def test_an_item_slow_to_render_does_not_hold_back_the_others() -> None:
    second_rendered = threading.Event()
    waited: list[bool] = []

    def render(item: str) -> str:
        if item == "first":
            waited.append(second_rendered.wait(5))  # rendering up front, in order, would time out
        else:
            second_rendered.set()
        return item

    results = Fleet(agent_with(echo), ["first", "second"], max_workers=2, render=render).run()

    assert waited == [True]
    assert [r.response for r in results] == ["echo first", "echo second"]


def test_a_render_that_raises_fails_only_its_item() -> None:
    def render(item: int) -> str:
        if item == 1:
            raise KeyError("topic")
        return f"item {item}"

    results = Fleet(agent_with(echo), [0, 1, 2], render=render).run()

    assert [r.ok for r in results] == [True, False, True]
    assert isinstance(results[1].error, KeyError) and results[1].result is None


def test_a_render_returning_neither_task_nor_str_fails_its_item_clearly() -> None:
    results = Fleet(agent_with(echo), [7], render=lambda item: item).run()
    assert isinstance(results[0].error, TypeError)
    assert str(results[0].error) == "Fleet render must return a Task or a str, got int for item 0"


def test_render_works_with_run_stream_and_tasks() -> None:
    fleet = Fleet(agent_with(echo), [{"n": 1}, {"n": 2}], render=lambda item: f"n={item['n']}")
    assert sorted(r.response for r in fleet.run_stream()) == ["echo n=1", "echo n=2"]
    assert [t.message for t in fleet.tasks] == ["n=1", "n=2"]
    assert len(fleet) == 2


def test_a_non_callable_render_is_refused() -> None:
    with pytest.raises(TypeError, match="render must be a function of one item, got str"):
        Fleet(agent_with("ok"), [1], render="{input}")  # type: ignore[arg-type]


def test_a_fleet_that_cannot_start_any_worker_lets_go_of_its_run_token(monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors._cancel import CancelToken, cancel_scope

    _refuse_fleet_threads_after(monkeypatch, 0)
    outer = CancelToken()
    fleet = Fleet(agent_with(echo), ["a"], max_workers=1)
    with cancel_scope(outer), pytest.raises(RuntimeError, match="could not start any worker"):
        fleet.run()
    assert not outer._children and not fleet._tokens


def test_a_fleet_task_result_is_the_dataclass_its_constructor_makes() -> None:
    import dataclasses

    from wingman_actors.agents._fleet import _fleet_result

    error = ValueError("x")
    made = _fleet_result(3, "a-3", None, error, {"id": 3}, 0.5)
    assert made == FleetResult(3, "a-3", None, error, {"id": 3}, 0.5)
    assert repr(made) == repr(FleetResult(3, "a-3", None, error, {"id": 3}, 0.5))
    assert [f.name for f in dataclasses.fields(FleetResult)] == [
        "task_index", "worker_name", "result", "error", "data", "duration_s", "usage"
    ]  # _fleet_result sets each of these: a new field must be set there too
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.data = None  # type: ignore[misc]
