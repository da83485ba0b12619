"""Behaviours ported from Dask's own tests of its schedulers and futures (dask/dask
``dask/tests/test_threaded.py``, ``test_local.py``, ``test_callbacks.py``; dask/distributed
``distributed/tests/test_client.py``, ``test_as_completed.py``), mapped onto a started
formation's run futures: ``client.submit(fn, x)`` is ``running.submit(x)`` on a formation
of ``fn``, ``dask.threaded.get(dsk, key)`` is ``Formation.run``, and Dask's callbacks are
``on_event``. ``test_peer_dask_graphs.py`` takes the graphs (``dask.delayed``, networkx),
map nodes and supervision; ``test_peer_dask_async.py`` asyncio and Ray.

Deliberately different (each test that touches one says so):
- Dask resolves a future given as an argument (``client.submit(inc, future)``) to its
  value; a run's input is data, passed as it is, so a run future given to ``submit`` reaches
  the node as the future object (chain runs on ``future.result()`` or a done callback).
- Dask raises a task's own exception from ``future.result()``/``get``; a run raises
  ``FormationRuntimeError`` naming the node, its attempts and the run, with the node's own
  exception (its attributes and traceback) as ``__cause__``.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import traceback
from concurrent.futures import CancelledError, Future, as_completed, wait
from typing import Any

import pytest

from tests.support.peers import Counter, Gate, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent


def inc(x: int) -> int:
    return x + 1


def add(x: int, y: int) -> int:
    return x + y


def throws(x: Any) -> Any:
    raise RuntimeError("hello!")


class MyException(Exception):
    """test_local.py's exception: positional attributes and its own ``__str__``."""

    def __init__(self, a: int, b: int) -> None:
        self.a = a
        self.b = b

    def __str__(self) -> str:
        return "My Exception!"


def incs_or_throws(x: Any) -> Any:
    """``inc``, or ``throws`` on the input ``"bad"``."""
    if x == "bad":
        raise RuntimeError("hello!")
    return x + 1


# -- submit, map, gather (test_client.py) -----------------------------------------------


def test_submit_returns_a_future_whose_result_is_the_functions_value() -> None:
    """From dask/distributed test_client.py::test_submit."""
    with Formation("inc").add_function("inc", inc).start() as running:
        x = running.submit(10)
        assert isinstance(x, Future)
        assert x.result(timeout=10).output == 11
        assert x.done()


def test_each_submit_of_the_same_input_is_its_own_run_with_its_own_id() -> None:
    """From dask/distributed test_client.py::test_submit_naming (``pure=False``: two calls on one
    input are two tasks). A run is never deduplicated: both run the node."""
    calls = Counter()

    def counted(x: int) -> int:
        calls.hit(x)
        return x + 1

    with Formation("inc").add_function("inc", counted).start() as running:
        a, b = running.submit(1), running.submit(1)
        assert a.run_id != b.run_id
        assert a.result(timeout=10).output == b.result(timeout=10).output == 2
    assert calls.count(1) == 2


def test_futures_of_many_submits_gather_their_results_in_submission_order() -> None:
    """From dask/distributed test_client.py::test_map and test_gather (``client.gather(client.map(inc,
    range(10)))`` is ``list(map(inc, range(10)))``)."""
    with Formation("inc").add_function("inc", inc).start() as running:
        futures = [running.submit(i) for i in range(30)]
        assert [f.result(timeout=10).output for f in futures] == [inc(i) for i in range(30)]


def test_a_run_on_a_formation_of_one_function_of_a_constant_returns_it() -> None:
    """From dask/dask test_threaded.py::test_get_without_computation (``get({"x": 1}, "x") == 1``)."""
    assert Formation("x").add_function("x", lambda _: 1).run(None).output == 1


def test_a_started_formation_is_reused_for_run_after_run() -> None:
    """From dask/dask test_threaded.py::test_reuse_pool (one pool, two ``get`` calls)."""
    with Formation("inc").add_function("inc", inc).start() as running:
        assert running.submit(1).result(timeout=10).output == 2
        assert running.submit(1).result(timeout=10).output == 2


def test_a_future_given_as_input_reaches_the_node_as_it_is_not_as_its_value() -> None:
    """From dask/distributed test_client.py::test_submit_quotes / test_future_as_argument
    (``client.submit(inc, x)`` with ``x`` a future runs ``inc`` on ``x``'s value). Deliberately
    different: a run's input is data, passed as it is; chaining runs is done on ``result()``."""
    seen: list[Any] = []

    def keep(x: Any) -> str:
        seen.append(x)
        return type(x).__name__

    with Formation("keep").add_function("keep", keep).start() as running:
        first = running.submit(1)
        second = running.submit(first)
        assert second.result(timeout=10).output != "int"
        assert seen[-1] is first
        chained = running.submit(first.result(timeout=10).output)
        assert chained.result(timeout=10).output == "str"


def test_a_done_callback_may_submit_the_next_run_with_the_result_of_its_own() -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_add (``ac.add(client.submit(add,
    future, 10))`` as results arrive): each finished run's value is fed to a new run."""
    chained: list[Future[Any]] = []
    done = threading.Event()
    with Formation("inc").add_function("inc", inc).start() as running:

        def next_run(future: Future[Any]) -> None:
            value = future.result().output
            if value < 5:
                follow = running.submit(value)
                chained.append(follow)
                follow.add_done_callback(next_run)
            else:
                done.set()

        running.submit(0).add_done_callback(next_run)
        assert done.wait(10)
        assert [f.result(timeout=10).output for f in chained] == [2, 3, 4, 5]


# -- errors and tracebacks (test_client.py, test_local.py, test_threaded.py) ------------


def test_a_failed_runs_result_raises_naming_the_node_with_the_functions_error_as_cause() -> None:
    """From dask/distributed test_client.py::test_get_with_error / test_exceptions (``x.result()``
    raises the task's error). Deliberately different: the error is a FormationRuntimeError naming
    the node; the function's own error is its ``__cause__``."""
    with Formation("throws").add_function("throws", throws).start() as running:
        x = running.submit(1)
        with pytest.raises(FormationRuntimeError, match="hello!") as info:
            x.result(timeout=10)
        assert info.value.node == "throws"
        assert isinstance(info.value.__cause__, RuntimeError)
        assert isinstance(x.exception(timeout=1), FormationRuntimeError)


def test_the_cause_keeps_the_exceptions_own_attributes_and_str() -> None:
    """From dask/dask test_local.py::test_exceptions_propagate (``e.a == 1``, ``e.b == 2``, ``"My
    Exception!" in str(e)``)."""

    def f(_: Any) -> None:
        raise MyException(1, 2)

    with pytest.raises(FormationRuntimeError, match="My Exception!") as info:
        Formation("f").add_function("f", f).run(None)
    cause = info.value.__cause__
    assert isinstance(cause, MyException)
    assert (cause.a, cause.b) == (1, 2)


def test_the_causes_traceback_shows_the_line_of_the_function_that_raised() -> None:
    """From dask/distributed test_client.py::test_traceback / test_traceback_sync (the traceback of
    a failed future walks into the user's function)."""

    def deep_in_user_code(_: Any) -> None:
        raise ZeroDivisionError("divided by zero in user code")

    with Formation("f").add_function("f", deep_in_user_code).start() as running:
        error = running.submit(1).exception(timeout=10)
    assert error is not None and error.__cause__ is not None
    frames = traceback.extract_tb(error.__cause__.__traceback__)
    assert any(frame.name == "deep_in_user_code" for frame in frames)
    assert "deep_in_user_code" in "".join(traceback.format_exception(error))


def test_an_error_deep_in_a_chain_rises_to_the_top_and_what_follows_never_runs() -> None:
    """From dask/dask test_threaded.py::test_exceptions_rise_to_top and dask/distributed
    test_client.py::test_exception_on_exception (``y = submit(inc, x)`` with ``x`` failed fails
    with ``x``'s error)."""
    calls = Counter()

    def after(x: Any) -> Any:
        calls.hit("after")
        return x

    f = Formation("chain").add_function("one", inc).add_function("bad", throws).add_function("after", after)
    f.connect("one", "bad").connect("bad", "after")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    assert info.value.node == "bad"
    assert info.value.outputs.get("one") == 2
    assert calls.count("after") == 0


def test_failed_runs_do_not_block_the_good_ones_submitted_beside_them() -> None:
    """From dask/distributed test_client.py::test_errors_dont_block."""
    with Formation("f").add_function("f", incs_or_throws).start() as running:
        futures = [running.submit(x) for x in (1, "bad", 2, "bad", 3)]
        _, not_done = wait(futures, timeout=10)
        assert not not_done
        assert [f.exception() is None for f in futures] == [True, False, True, False, True]
        assert [f.result().output for f in futures if f.exception() is None] == [2, 3, 4]


def test_a_long_error_message_is_carried_whole_by_the_cause() -> None:
    """From dask/distributed test_client.py::test_long_error (a 1e6-character message does not
    break the client)."""
    message = "x" * 100_000

    def long_error(_: Any) -> None:
        raise ValueError(message)

    with Formation("long").add_function("long", long_error).start() as running:
        error = running.submit(1).exception(timeout=10)
    assert isinstance(error, FormationRuntimeError)
    assert str(error.__cause__) == message


# -- cancel (test_client.py) ---------------------------------------------------------------


def test_cancelling_several_runs_at_once_leaves_the_other_runs_to_finish(held: Gate) -> None:
    """From dask/distributed test_client.py::test_cancel_collection / test_cancel_multi_client."""
    with Formation("held").add_function("held", held, concurrency=4).start() as running:
        futures = [running.submit(i) for i in range(4)]
        assert held.reached.wait(5)
        assert all(f.cancel() for f in futures[:2])
        held.opened.set()
        assert [f.result(timeout=10).output for f in futures[2:]] == [2, 3]
        for f in futures[:2]:
            with pytest.raises(CancelledError):
                f.result(timeout=1)


def test_the_same_input_submitted_again_after_a_cancel_runs_anew(held: Gate) -> None:
    """From dask/distributed test_client.py::test_cancel_then_resubmit (submitting the key again after
    ``cancel`` computes it again)."""
    with Formation("held").add_function("held", held).start() as running:
        first = running.submit(7)
        assert held.reached.wait(5)
        assert first.cancel()
        held.opened.set()
        again = running.submit(7)
        assert again.result(timeout=10).output == 7
        assert first.cancelled()


def test_resuming_a_failed_run_of_a_started_formation_reruns_only_what_failed(tmp_path: Any) -> None:
    """From dask/distributed test_client.py::test_retry (``x.retry()`` after ``x.result()`` raised
    computes it again): with a store, ``running.resume(run_id)`` gives a new future of the same run;
    the node that finished before the failure is not run again."""
    calls = Counter()

    def first(x: int) -> int:
        calls.hit("first")
        return x + 1

    def flaky(x: int) -> int:
        if calls.hit("flaky") == 1:
            raise ZeroDivisionError("one")
        return x * 10

    f = Formation("retry").add_function("first", first).add_function("flaky", flaky).connect("first", "flaky")
    with f.start(store=tmp_path / "runs.db") as running:
        x = running.submit(1)
        with pytest.raises(FormationRuntimeError, match="one"):
            x.result(timeout=10)
        again = running.resume(x.run_id)
        assert again.run_id == x.run_id
        assert again.result(timeout=10).output == 20
    assert (calls.count("first"), calls.count("flaky")) == (1, 2)


# -- as_completed over run futures (test_as_completed.py) ------------------------------------


def test_as_completed_yields_every_run_once_whether_it_failed_or_succeeded() -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_error (``set(ac) == {x, y}``, x
    in error, y finished)."""
    with Formation("f").add_function("f", incs_or_throws).start() as running:
        x, y = running.submit("bad"), running.submit(1)
        seen = list(as_completed([x, y], timeout=10))
        assert sorted(map(id, seen)) == sorted(map(id, [x, y]))
        assert isinstance(x.exception(), FormationRuntimeError)
        assert y.result().output == 2


def test_as_completed_over_a_failed_a_cancelled_and_a_good_run_gives_each_outcome(held: Gate) -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_with_results_no_raise (``x`` in
    error, ``y`` cancelled, ``z`` finished, each yielded once)."""
    with Formation("f").add_function("f", incs_or_throws).start() as fast, \
            Formation("held").add_function("held", held).start() as slow:
        x, y, z = fast.submit("bad"), slow.submit(5), fast.submit(1)
        assert held.reached.wait(5)
        assert y.cancel()
        outcomes = {}
        for f in as_completed([x, y, z], timeout=10):
            outcomes[id(f)] = "cancelled" if f.cancelled() else "error" if f.exception() else f.result().output
        assert outcomes == {id(x): "error", id(y): "cancelled", id(z): 2}


def test_as_completed_raises_timeout_error_while_a_run_is_still_in_flight(held: Gate) -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_timeout_sync (two yielded, the
    third raises ``TimeoutError``)."""
    with Formation("inc").add_function("inc", inc).start() as fast, \
            Formation("held").add_function("held", held).start() as slow:
        seq = as_completed([fast.submit(1), fast.submit(1), slow.submit(2)], timeout=3)
        next(seq)
        next(seq)
        with pytest.raises(TimeoutError):
            next(seq)


def test_as_completed_of_no_futures_yields_nothing() -> None:
    """From dask/distributed test_as_completed.py::test_as_completed_sync (``list(as_completed([])) ==
    []``)."""
    assert list(as_completed([])) == []


# -- threads (test_threaded.py) --------------------------------------------------------------


def test_runs_of_one_formation_from_twenty_threads_at_once_each_get_their_answer() -> None:
    """From dask/dask test_threaded.py::test_thread_safety (20 threads call ``get`` on one graph)."""
    f = Formation("safe").add_function("x", lambda _: 0.0).add_function("y", lambda _: 1).connect("x", "y")
    answers: list[int] = []
    lock = threading.Lock()

    def run() -> None:
        out = f.run(None, timeout=30).output
        with lock:
            answers.append(out)

    threads = [threading.Thread(target=run) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    assert answers == [1] * 20


def test_a_node_may_run_another_formation_to_its_end_from_its_own_thread() -> None:
    """From dask/dask test_threaded.py::test_threaded_within_thread (``get`` called from a thread
    that is not the main one, twenty times)."""
    inner = Formation("inner").add_function("one", lambda _: 1)
    outer = Formation("outer").add_function("calls", lambda _: inner.run(None, timeout=10).output)
    with outer.start() as running:
        assert [running.submit(i).result(timeout=20).output for i in range(20)] == [1] * 20


def test_running_a_formation_twenty_times_leaves_no_thread_behind() -> None:
    """From dask/dask test_threaded.py::test_dont_spawn_too_many_threads (``get`` twenty times leaves
    at most a few threads more)."""
    f = Formation("wide")
    for i in range(10):
        f.add_function(f"x{i}", lambda _, i=i: i)
    f.add_function("total", lambda **kw: sum(kw.values()))
    for i in range(10):
        f.connect(f"x{i}", "total")
    before = threading.active_count()
    for _ in range(20):
        assert f.run(None, timeout=30).output == 45
    assert until(lambda: threading.active_count() <= before, within=10), threading.enumerate()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
def test_ctrl_c_during_run_raises_keyboard_interrupt_within_the_stop_grace(held: Gate) -> None:
    """From dask/dask test_threaded.py::test_interrupt (SIGINT to the main thread while ``get`` waits
    on twenty five-second tasks: KeyboardInterrupt within 4 s). The run's stuck attempts are
    abandoned after the stop grace (at most 1 s), and their threads end when their code returns."""
    f = Formation("big").add_function("total", len)
    for i in range(4):
        f.add_function(f"x{i}", held).connect(f"x{i}", "total")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    assert main is not None
    interrupter = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    started = time.monotonic()
    try:
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            f.run(None)
    finally:
        interrupter.join()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 5  # Dask: 4 s; the grace is 1 s, the rest is margin for a busy machine
    held.opened.set()
    assert until(lambda: not any(t.name.startswith("wingman-node-x") for t in threading.enumerate()), within=10)


# -- callbacks (test_callbacks.py, test_local.py) ------------------------------------------


def test_the_run_start_event_comes_first_and_the_finish_event_last() -> None:
    """From dask/dask test_callbacks.py::test_start_callback and test_local.py::test_callback
    (``start_callback`` before the task, ``end_callback`` with its value)."""
    events: list[FormationEvent] = []
    Formation("a").add_function("a", inc).run(1, on_event=events.append)
    kinds = [e.type.value for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    finished = [e for e in events if e.type.value == "node_finished"]
    assert [(e.node, e.data["output"]) for e in finished] == [("a", 2)]


def test_the_run_failed_event_is_always_sent_when_a_node_raises() -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called (``_finish`` called with
    ``errored`` when the task raised ZeroDivisionError)."""
    events: list[FormationEvent] = []
    with pytest.raises(FormationRuntimeError) as info:
        Formation("x").add_function("x", lambda _: 1 / 0).run(None, on_event=events.append)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert events[-1].type.value == "run_failed"


def test_a_done_callback_calling_sys_exit_is_logged_and_the_formations_go_on(caplog: pytest.LogCaptureFixture) -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called (user callback code around a
    computation; a ``KeyboardInterrupt`` in it ends only that computation): a done callback that
    calls ``sys.exit`` when its run failed. It used to end the node actor that resolved the run
    (Pykka then stops every actor): every later run, of this formation or another, waited for
    good."""

    def exit_on_failure(future: Future[Any]) -> None:
        if future.exception() is not None:
            sys.exit(1)

    opened = threading.Event()

    def fails_once_opened(x: Any) -> Any:
        if x == "bad":
            opened.wait(5)  # the callback is added before the run ends: it runs on the formation's thread
            raise RuntimeError("hello!")
        return x + 1

    f = Formation("f").add_function("f", fails_once_opened).add_function("g", inc).connect("f", "g")
    with f.start() as running, Formation("other").add_function("inc", inc).start() as other:
        failing = running.submit("bad")
        failing.add_done_callback(exit_on_failure)
        opened.set()
        assert isinstance(failing.exception(timeout=10), FormationRuntimeError)
        assert [running.submit(i).result(timeout=10).output for i in range(3)] == [2, 3, 4]
        assert other.submit(1).result(timeout=10).output == 2
    assert until(lambda: "a done callback of run" in caplog.text)


def test_an_event_listener_raising_keyboard_interrupt_on_a_nodes_thread_is_logged_and_the_run_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called (a ``KeyboardInterrupt`` inside
    the computation still ends it, and ``_finish`` is called). It used to end the node actor that
    emitted the event: the run never resolved."""
    kinds: list[str] = []

    def listener(event: FormationEvent) -> None:
        kinds.append(event.type.value)
        if event.type.value == "node_started":
            raise KeyboardInterrupt

    with Formation("a").add_function("a", inc).start(on_event=listener) as running:
        assert running.submit(1).result(timeout=10).output == 2
        assert running.submit(2).result(timeout=10).output == 3
    assert kinds.count("run_finished") == 2
    assert "event listener failed on node_started" in caplog.text
