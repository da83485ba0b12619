"""Ray core's actor fault-tolerance tests (ray-project/ray ``python/ray/tests/test_actor_failures.py``,
``test_actor_retry_1.py``, ``test_failure.py``) on ``backend="ray"``, where every node replica is a
Ray actor in a process of its own and a process can really die mid-task (``os._exit``). The thread
versions, and where we differ, are in test_peer_rayactors.py. Node functions run in other
processes, so they log their calls to files."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def logged(log: Path, line: str) -> int:
    """Append ``line`` to ``log``; how many lines it holds now."""
    with log.open("a") as out:
        out.write(f"{line}\n")
    return len(log.read_text().split())


def lines(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


class MyError(Exception):
    pass


def test_a_raise_then_a_process_exit_then_a_value_on_ray_spends_two_retries_and_gives_the_value(tmp_path: Path) -> None:
    """From ray tests/test_actor_retry_1.py::test_method_exit_no_over_retry_max_restarts and
    test_exit_only_no_over_retry (``raise_or_exit`` with ``["raise", "exit"]``: an exception and a
    dead process each spend one retry; three calls in all)."""
    log = tmp_path / "calls"

    def raise_or_exit(x: int) -> int:
        n = logged(log, str(os.getpid()))
        if n == 1:
            raise MyError("raise")
        if n == 2:
            os._exit(1)
        return n

    result = Formation("trouble").add_function("trouble", raise_or_exit, retries=2, backoff=0).run(
        1, backend="ray", timeout=120)
    assert result.output == 3 and result.nodes["trouble"].attempts == 3
    pids = lines(log)
    assert len(pids) == 3 and pids[2] != pids[1]  # the third call ran in a fresh process


def test_a_retry_on_that_names_only_the_node_s_error_does_not_retry_a_process_that_died(tmp_path: Path) -> None:
    """From ray tests/test_actor_retry_1.py::test_method_exit_no_over_retry_max_restarts, whose
    method has ``retry_exceptions=[MyError]`` and is still retried after its process exits: Ray
    retries a dead process whatever ``retry_exceptions`` says. Differs (an open question): a
    process death reaches ``retry_on`` as a ``RuntimeError`` saying the process died, so
    ``retry_on=MyError`` gives up on it at once, as the docs say of any error it does not name."""
    log = tmp_path / "calls"

    def raise_or_exit(x: int) -> int:
        n = logged(log, str(os.getpid()))
        if n == 1:
            raise MyError("raise")
        if n == 2:
            os._exit(1)
        return n

    f = Formation("trouble").add_function("trouble", raise_or_exit, retries=2, backoff=0, retry_on=MyError)
    with pytest.raises(FormationRuntimeError, match=r"node 'trouble' failed after 2 attempt.*process died") as info:
        f.run(1, backend="ray", timeout=120)
    assert isinstance(info.value.__cause__, RuntimeError) and len(lines(log)) == 2


def test_runs_queued_behind_a_replica_whose_process_died_all_run_once_on_ray(tmp_path: Path) -> None:
    """From ray tests/test_actor_failures.py::test_actor_restart_with_retry (an actor process killed
    with calls queued: with task retries none fails, each runs once after the restart)."""
    log = tmp_path / "calls"

    def increase(x: int) -> int:
        if logged(log, str(x)) == 1:
            os._exit(1)  # the first call kills its process
        return x + 100

    f = Formation("restart").add_function("increase", increase, retries=1, backoff=0)
    with f.start(backend="ray") as running:
        futures = [running.submit(i) for i in range(6)]
        outputs = [future.result(120) for future in futures]
    assert [r.output for r in outputs] == [i + 100 for i in range(6)]
    assert [r.nodes["increase"].attempts for r in outputs] == [2, 1, 1, 1, 1, 1]
    assert sorted(lines(log)) == sorted(["0", *[str(i) for i in range(6)]])


def test_an_intentional_exit_on_ray_is_not_retried_as_on_threads(tmp_path: Path) -> None:
    """From ray tests/test_actor_failures.py (an actor that calls ``exit_actor()`` / ``sys.exit``
    on purpose is not restarted, whatever ``max_restarts`` says): ``SystemExit`` in a node fails
    its run at once on Ray too, not as a dead process that ``retries`` would rerun."""
    log = tmp_path / "calls"

    def leaves(x: int) -> int:
        logged(log, "call")
        sys.exit(3)

    with pytest.raises(FormationRuntimeError, match=r"node 'leaves' failed after 1 attempt.*SystemExit: 3"):
        Formation("exit").add_function("leaves", leaves, retries=2, backoff=0).run(1, backend="ray", timeout=120)
    assert lines(log) == ["call"]


def test_an_exception_that_cannot_be_pickled_fails_its_run_on_ray_naming_the_node_and_the_fix() -> None:
    """From ray tests/test_failure.py (a task raising an exception Ray cannot serialize still
    fails ``ray.get`` with an error that says so, rather than hanging)."""
    class Unpicklable(Exception):
        def __init__(self) -> None:
            super().__init__("holds a lock")
            self.lock = threading.Lock()

    def raises(_: Any) -> None:
        raise Unpicklable()

    with pytest.raises(FormationRuntimeError, match=r"node 'raises'.*raised Unpicklable: holds a lock, which cannot "
                                                     r"be pickled back.*return plain data"):
        Formation("unp").add_function("raises", raises).run(1, backend="ray", timeout=120)
