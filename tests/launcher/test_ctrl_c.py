"""Ctrl-C (or SIGTERM) during ``wingman-actors run``: the formation stops, the run is
journalled as interrupted in the default store, stderr ends with the ``resume`` command,
the exit code is 130 (143); that command, pasted, finishes the run without running
journalled nodes again."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wingman_actors._launcher.stores import default_store_path
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")]

SLOW = """
import os, time
from wingman_actors import Formation

LOG = os.environ["SLOW_LOG"]

def note(line: str) -> None:
    with open(LOG, "a") as log:
        log.write(line + "\\n")

def first(x: str) -> str:
    note("first")
    return x.upper()

def second(x: str) -> str:
    note("second")
    deadline = time.monotonic() + 30
    while not os.path.exists(LOG + ".go") and time.monotonic() < deadline:
        time.sleep(0.02)
    return x + "!"

formation = Formation("slow").add_function("first", first).add_function("second", second)
formation.connect("first", "second")
"""

# A shell started in the background may hand its children SIGINT ignored, and Python then
# leaves it ignored: the launcher under test gets Python's usual Ctrl-C handler back.
LAUNCHER = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from wingman_actors.cli import main; sys.exit(main(sys.argv[1:]))")


def launcher(*args: str) -> list[str]:
    return [sys.executable, "-c", LAUNCHER, *args]


def wait_for(path: Path, text: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never said {text!r}")


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated (SIGTERM)")],
                         ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_journals_the_run_as_interrupted_and_the_printed_command_resumes_it(
        tmp_path: Path, sig: signal.Signals, code: int, said: str) -> None:
    module = tmp_path / "slow.py"
    module.write_text(SLOW)
    log = tmp_path / "calls.log"
    env = {**os.environ, "SLOW_LOG": str(log)}
    child = subprocess.Popen(launcher("run", str(module), "--input", "hi"), env=env, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(log, "second")  # 'first' is journalled, 'second' is in flight
        child.send_signal(sig)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == code, err
    assert f"wingman-actors: {said}; run " in err
    assert out == ""  # stdout is for outputs only
    line = err.strip().splitlines()[-1]
    assert line.startswith("continue it with: wingman-actors resume "), err
    command = shlex.split(line.split(": ", 1)[1])
    run_id = command[2]
    assert command == ["wingman-actors", "resume", run_id]  # the default store: no --store needed
    assert f"run {run_id} is journalled (status interrupted)" in err
    with RunStore(default_store_path()) as store:
        assert store.get(run_id).status == "interrupted"

    Path(f"{log}.go").touch()
    resumed = subprocess.run(launcher(*command[1:]), env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=30)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "HI!\n"
    assert log.read_text().splitlines() == ["first", "second", "second"]  # 'first' ran once
    with RunStore(default_store_path()) as store:
        assert store.get(run_id).status == "succeeded"
