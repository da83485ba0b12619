"""Behaviours of Ray core's actor fault-tolerance tests (ray-project/ray ``python/ray/tests/``:
test_actor_failures.py, test_actor_retry_1.py, test_failure*.py) ported to formations on threads:
a Ray actor with ``max_restarts`` and ``max_task_retries`` is a node with ``retries`` (per visit:
one budget for errors and time-outs), an actor killed mid-task is a node attempt abandoned by its
``timeout`` (Python cannot kill a thread; the Ray backend's own versions, with processes killed, are
in test_peer_rayactors_ray.py), and ``RayActorError`` is the ``FormationRuntimeError`` naming the
node."""

from __future__ import annotations

import threading
from concurrent.futures import wait

import pykka
import pytest

from tests.support.peers import Counter, until
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation.events import FormationEvent


class MyError(Exception):
    pass


def test_runs_queued_behind_an_attempt_cut_short_all_run_once_in_order_and_the_cut_one_is_retried(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From ray tests/test_actor_failures.py::test_actor_restart_with_retry (an actor killed while
    100 calls are queued: with ``max_task_retries=-1`` none of them fails, all run in order
    before and after the restart). Differs in one point: Ray resends the killed call first, in
    its place; our retry joins the node's queue behind what was already waiting (as a retry
    with a backoff would), so a failing input never holds up the others."""
    entered, release = gate
    executed: list[int] = []
    lock = threading.Lock()

    def increase(x: int) -> int:
        with lock:
            executed.append(x)
            first = len(executed) == 1
        if first:
            entered.set()
            release.wait(10)  # the "killed" attempt: its time limit abandons it
        return x + 100

    f = Formation("restart").add_function("increase", increase, timeout=0.5, retries=1, backoff=0)
    with f.start() as running:
        futures = [running.submit(i) for i in range(20)]
        assert entered.wait(10)
        outputs = [future.result(20) for future in futures]
    assert [r.output for r in outputs] == [i + 100 for i in range(20)]
    assert [r.nodes["increase"].attempts for r in outputs] == [2] + [1] * 19
    assert executed == [0, *range(1, 20), 0]  # the queued ran in the order submitted, then the retry


def test_without_retries_only_the_run_in_the_cut_attempt_fails_and_the_queued_ones_succeed(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From ray tests/test_actor_failures.py::test_actor_restart (``max_restarts=1`` and no task
    retries: the call running when the actor died fails with ``RayActorError``, the ones after
    the restart succeed)."""
    entered, release = gate

    def work(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        return x * 2

    f = Formation("restart").add_function("work", work, timeout=0.3)
    with f.start() as running:
        futures = [running.submit(i) for i in range(6)]
        assert entered.wait(10)
        wait(futures, timeout=20)
    err = futures[0].exception(0)
    assert isinstance(err, FormationRuntimeError) and isinstance(err.__cause__, NodeTimeoutError)
    assert (err.node, err.attempts, err.run_id) == ("work", 1, futures[0].run_id)
    assert [fut.result(0).output for fut in futures[1:]] == [2, 4, 6, 8, 10]


def test_errors_and_time_outs_share_one_retry_budget() -> None:
    """From ray tests/test_actor_retry_1.py::test_method_exit_no_over_retry_max_restarts (``raise``,
    then ``exit``, then a value: each failure spends a retry, whatever its kind)."""
    calls = Counter()
    release = threading.Event()

    def raise_or_hang(x: int) -> int:
        n = calls.hit("call")
        if n == 1:
            raise MyError("raise")
        if n == 2:
            release.wait(10)  # stands for the process exit: the time limit cuts it
        return n

    events: list[FormationEvent] = []
    f = Formation("mixed").add_function("trouble", raise_or_hang, retries=2, backoff=0, timeout=0.3)
    try:
        result = f.run(1, timeout=20, on_event=events.append)
    finally:
        release.set()
    assert result.output == 3 and result.nodes["trouble"].attempts == 3
    errors = [e.data["error"] for e in events if e.type.value == "node_retry"]
    assert len(errors) == 2 and "MyError" in errors[0] and "NodeTimeoutError" in errors[1]


def test_a_retry_budget_spent_on_errors_and_a_time_out_fails_without_an_extra_attempt() -> None:
    """From ray tests/test_actor_retry_1.py::test_method_raise_no_over_retry and
    test_exit_only_no_over_retry (the count of calls is exactly the budget, never one more)."""
    calls = Counter()
    release = threading.Event()

    def always(x: int) -> int:
        if calls.hit("call") == 2:
            release.wait(10)
        raise MyError("again")

    f = Formation("mixed").add_function("trouble", always, retries=2, backoff=0, timeout=0.3)
    try:
        with pytest.raises(FormationRuntimeError) as info:
            f.run(1, timeout=20)
    finally:
        release.set()
    assert calls.count("call") == 3 and info.value.attempts == 3
    assert isinstance(info.value.__cause__, MyError)


def test_a_node_that_failed_for_good_on_one_run_still_serves_the_next_runs() -> None:
    """From ray tests/test_actor_failures.py::test_actor_restart (after ``max_restarts`` is spent
    every later call fails with ``RayActorError``). Differs: our ``retries`` are per visit, not
    a lifetime budget of the actor; the supervisor starts a fresh actor for the next input
    whatever failed before, so one bad input never takes a node down for the other runs."""
    def picky(x: int) -> int:
        if x < 0:
            raise MyError(f"negative {x}")
        return x

    f = Formation("picky").add_function("picky", picky, retries=1, backoff=0)
    with f.start() as running:
        for bad in (-1, -2, -3):
            with pytest.raises(FormationRuntimeError, match=r"node 'picky' failed after 2 attempt"):
                running.submit(bad).result(10)
        assert [running.submit(i).result(10).output for i in range(3)] == [0, 1, 2]


def test_a_node_object_keeps_its_state_across_a_restart_on_threads() -> None:
    """From ray tests/test_actor_failures.py::test_actor_restart (the restarted actor's state starts
    over: ``increase`` counts from 1 again). Differs on threads: the fresh actor calls the same
    node object, so state it keeps (a counter here) goes on; on Ray the node is unpickled
    afresh in a new process. Keep state that must survive in a store or a blackboard."""
    class Counting:
        def __init__(self) -> None:
            self.value = 0

        def __call__(self, fail: bool) -> int:
            self.value += 1
            if fail and self.value == 2:
                raise MyError("die once")
            return self.value

    f = Formation("state").add_function("count", Counting(), retries=1, backoff=0)
    with f.start() as running:
        assert running.submit(False).result(10).output == 1
        result = running.submit(True).result(10)
        assert running.submit(False).result(10).output == 4
    assert (result.output, result.nodes["count"].attempts) == (3, 2)


def test_a_downstream_node_is_not_restarted_when_its_caller_is() -> None:
    """From ray tests/test_actor_failures.py::test_caller_actor_restart (the actor called by a
    restarted actor keeps its state: ``increase`` answers 4 after three calls and a restart):
    only the failing node's actor is replaced."""
    calls = Counter()
    seen: list[str] = []

    def caller(x: int) -> int:
        if calls.hit("caller") == 3:
            raise ConnectionError("caller killed")
        return x

    def callee(x: int) -> int:
        seen.append(threading.current_thread().name)
        return calls.hit("callee")

    f = (Formation("calls").add_function("caller", caller, retries=1, backoff=0).add_function("callee", callee)
         .connect("caller", "callee"))
    with f.start() as running:
        before = {ref.actor_urn for ref in pykka.ActorRegistry.get_all()}
        outputs = [running.submit(i).result(10).output for i in range(4)]
        after = {ref.actor_urn for ref in pykka.ActorRegistry.get_all()}
    assert outputs == [1, 2, 3, 4]
    assert len(set(seen)) == 1  # one callee thread throughout
    assert len(before - after) == 1  # the caller's actor alone was replaced


def test_the_error_of_a_node_that_failed_names_the_node_the_run_and_the_cause() -> None:
    """From ray tests/test_failure.py::test_failed_task (the error raised by ``ray.get`` names the
    function and carries the remote traceback) and test_actor_failures.py's ``RayActorError``
    naming the dead actor: one line says which node, after how many attempts, in which run,
    with which error, and the cause is the node's own exception."""
    def load(x: int) -> int:
        raise MyError(f"row {x} is bad")

    f = Formation("etl").add_function("extract", lambda x: x).add_function("load", load, retries=1, backoff=0)
    f.connect("extract", "load")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(7, timeout=20)
    err = info.value
    text = str(err)
    assert "node 'load'" in text and "2 attempt" in text and str(err.run_id) in text and "MyError: row 7 is bad" in text
    assert isinstance(err.__cause__, MyError) and err.outputs == {"extract": 7}


def test_many_runs_with_mixed_fates_each_get_their_own_outcome_from_the_supervisor() -> None:
    """From ray tests/test_actor_failures.py::test_multiple_actor_restart (many actors, many calls,
    restarts in between: every result checked): successes, retried successes and failures
    interleaved in one started formation, every future answered with its own."""
    tries = Counter()

    def fate(x: int) -> int:
        n = tries.hit(x)
        if x % 3 == 1 and n == 1:
            raise ConnectionError("transient")
        if x % 3 == 2:
            raise MyError(f"permanent {x}")
        return x * 10

    f = Formation("fates").add_function("fate", fate, retries=1, backoff=0, concurrency=3)
    with f.start() as running:
        futures = {i: running.submit(i) for i in range(30)}
        assert not wait(futures.values(), timeout=30).not_done
    for i, future in futures.items():
        if i % 3 == 2:
            err = future.exception(0)
            assert isinstance(err, FormationRuntimeError) and err.run_id == future.run_id
            assert f"permanent {i}" in str(err)
        else:
            result = future.result(0)
            assert result.output == i * 10 and result.nodes["fate"].attempts == (2 if i % 3 == 1 else 1)
    assert until(lambda: pykka.ActorRegistry.get_all() == [], within=5)


def test_a_node_in_a_replica_pool_whose_attempt_is_cut_leaves_the_other_replicas_working(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From ray tests/test_actor_failures.py::test_ray_wait_dead_actor (the calls of the actors
    still alive complete while one is dead): one replica's attempt is cut by its time limit;
    the other replica goes on with the queue meanwhile."""
    entered, release = gate
    done: list[int] = []

    def work(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        done.append(x)
        return x

    f = Formation("pool").add_function("work", work, concurrency=2, timeout=5.0)
    with f.start() as running:
        first = running.submit(0)
        assert entered.wait(10)
        others = [running.submit(i) for i in range(1, 6)]
        assert [fut.result(10).output for fut in others] == [1, 2, 3, 4, 5]
        assert not first.done()  # still in its attempt while the other replica served the rest
        release.set()
        assert first.result(10).output == 0
    assert sorted(done) == [0, 1, 2, 3, 4, 5]


def test_an_actor_argument_that_never_arrives_fails_only_the_runs_waiting_on_it(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From ray tests/test_actor_failures.py::test_actor_owner_worker_dies_before_dependency_ready
    (a call whose argument comes from a task that died fails, the actor lives on): a join whose
    branch times out fails that run; runs after it join normally."""
    entered, release = gate

    def slow(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        return x

    f = (Formation("dep").add_function("fast", lambda x: x + 1).add_function("slow", slow, timeout=0.3)
         .add_function("join", lambda fast, slow: fast + slow)
         .connect("fast", "join").connect("slow", "join"))
    with f.start() as running:
        with pytest.raises(FormationRuntimeError, match=r"node 'slow'"):
            running.submit(0).result(20)
        assert running.submit(5).result(20).output == 11


def test_an_agent_node_that_cannot_start_fails_at_once_saying_how_to_fix_it_whatever_its_retries() -> None:
    """From ray tests/test_actor_failures.py (an actor whose ``__init__`` raises: every call
    fails with the constructor's error) and Thespian's ``NonStarter``: an agent with no
    provider is an invalid request, not retried, and the error says what to pass."""
    f = Formation("nostart").add_agent("writer", Agent("writer"), retries=3, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"node 'writer' failed after 1 attempt.*agent 'writer' has no "
                                                     r"provider: pass provider=new_provider\(\.\.\.\)"):
        f.run("hi", timeout=20)
