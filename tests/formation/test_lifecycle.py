"""A started formation's life: stop, a forgotten one at interpreter exit, backends."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError


def _script(body: str, warnings: str = "always::ResourceWarning") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", warnings, "-c", textwrap.dedent(body)],
        capture_output=True, text=True, timeout=30,
    )


def test_a_formation_started_and_never_stopped_does_not_keep_the_interpreter_alive() -> None:
    started = time.perf_counter()
    proc = _script("""
        from wingman_actors import Formation
        running = Formation("forgotten").add_function("inc", lambda x: x + 1).start()
        print(running.submit(1).result(timeout=5).output)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"
    assert "ResourceWarning" in proc.stderr and "'forgotten' was started and never stopped" in proc.stderr
    assert time.perf_counter() - started < 20


def test_an_unreferenced_forgotten_formation_is_stopped_even_when_warnings_are_errors() -> None:
    proc = _script("""
        from wingman_actors import Formation
        Formation("dropped").add_function("inc", lambda x: x + 1).start()
    """, warnings="error::ResourceWarning")
    assert proc.returncode == 0, proc.stderr
    assert "'dropped' was started and never stopped" in proc.stderr


def test_a_forgotten_formation_with_a_stuck_function_still_exits() -> None:
    proc = _script("""
        import threading, time
        from wingman_actors import Formation
        entered = threading.Event()
        def stuck(x):
            entered.set()
            time.sleep(60)
        running = Formation("stuck").add_function("stuck", stuck).start()
        running.submit(1)
        entered.wait(5)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "never stopped" in proc.stderr


def test_the_threads_backend_is_accepted_by_start_and_run() -> None:
    formation = Formation("b").add_function("inc", lambda x: x + 1)
    assert formation.run(1, backend="threads").output == 2
    with formation.start(backend="threads") as running:
        assert running.backend == "threads"


@pytest.mark.parametrize("name", ["rays", "processes"])
def test_an_unknown_backend_is_a_setup_error_listing_the_backends(name: str) -> None:
    formation = Formation("b").add_function("inc", lambda x: x + 1)
    with pytest.raises(FormationSetupError, match=r"unknown backend .*available backends: 'ray', 'threads'"):
        formation.start(backend=name)
    with pytest.raises(FormationSetupError, match="unknown backend"):
        formation.run(1, backend=name)


def test_a_process_exits_promptly_after_cancelling_a_run_stuck_in_a_function() -> None:
    started = time.perf_counter()
    proc = _script("""
        import threading, time
        from wingman_actors import Formation
        entered = threading.Event()
        def stuck(x):
            entered.set()
            time.sleep(60)          # never returns in this process's life
        with Formation("c").add_function("stuck", stuck).start() as running:
            future = running.submit(1)
            entered.wait(5)
            print(future.cancel(), future.cancelled())
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]
    assert "never stopped" not in proc.stderr
    assert time.perf_counter() - started < 20


def test_stop_waits_at_most_its_grace_for_a_function_still_running(caplog: pytest.LogCaptureFixture) -> None:
    import threading

    release, entered = threading.Event(), threading.Event()

    def busy(x: int) -> int:
        entered.set()
        release.wait(10)
        return x

    running = Formation("s").add_function("busy", busy).start()
    try:
        future = running.submit(1)
        assert entered.wait(3)
        started = time.perf_counter()
        running.stop()
        assert time.perf_counter() - started < 1.0 + 0.6  # the 1 s grace, not the 10 s the code takes
        assert future.exception(timeout=1) is not None  # the run failed: "stopped before run ... finished"
        assert any("still busy" in r.getMessage() for r in caplog.records)
    finally:
        release.set()


def test_a_forgotten_formation_with_a_nested_one_is_warned_about_once_and_stops_both() -> None:
    proc = _script("""
        from wingman_actors import Formation
        inner = Formation("inner").add_function("inc", lambda x: x + 1)
        running = Formation("outer").add_formation("sub", inner).start()
        print(running.submit(1).result(timeout=5).output)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"
    assert "'outer' was started and never stopped" in proc.stderr
    assert "'inner' was started" not in proc.stderr


def _supervisor_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("wingman-supervisor-lazy")]


def test_a_formation_whose_runs_all_succeed_never_starts_its_supervisor() -> None:
    with Formation("lazy").add_function("inc", lambda x: x + 1).start() as running:
        assert running.submit(1).result(5).output == 2
        assert _supervisor_threads() == []


def test_the_supervisor_starts_with_the_first_failure_and_stops_with_the_formation() -> None:
    tries: list[int] = []

    def flaky(x: int) -> int:
        tries.append(x)
        if len(tries) == 1:
            raise RuntimeError("once")
        return x + 1

    with Formation("lazy").add_function("flaky", flaky, retries=1, backoff=0).start() as running:
        assert running.submit(1).result(5).output == 2  # retried by the supervisor
        assert _supervisor_threads() == ["wingman-supervisor-lazy"]
    assert _supervisor_threads() == []


@pytest.mark.parametrize(("grace", "error"), [("1", TypeError), (True, TypeError), (-1, ValueError),
                                              (float("nan"), ValueError)])
def test_stop_refuses_a_bad_grace_before_stopping_anything(grace: object, error: type[Exception]) -> None:
    # a bad grace raised halfway through stop() (or was taken as none), leaving the
    # formation marked stopped with its actors half stopped
    running = Formation("s").add_function("inc", lambda x: x + 1).start()
    try:
        with pytest.raises(error, match=r"stop\(timeout\) must be a number of seconds >= 0"):
            running.stop(grace)  # type: ignore[arg-type]
        assert running.submit(1).result(timeout=3).output == 2  # still running
    finally:
        running.stop()
