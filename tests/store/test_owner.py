"""Which runs count as running: a process is told apart from a later one reusing its pid."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from wingman_actors.store._owner import ProcessIdentity, is_alive


def test_this_process_is_alive() -> None:
    here = ProcessIdentity.current()
    assert is_alive(here, here)


def test_a_process_that_exited_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    here = ProcessIdentity.current()
    assert not is_alive(dataclasses.replace(here, pid=child.pid, started="1"), here)


def test_a_live_pid_started_at_another_time_is_another_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        here = ProcessIdentity.current()
        owner = dataclasses.replace(here, pid=child.pid, started="1")  # the pid, reused by a later process
        if here.started:  # start times are known (Linux)
            assert not is_alive(owner, here)
        assert is_alive(dataclasses.replace(owner, started=""), here)  # unknown start time: the pid decides
    finally:
        child.communicate(timeout=30)


def test_another_boot_is_dead_and_another_host_is_left_alone() -> None:
    here = ProcessIdentity.current()
    if here.boot:  # the boot id is known (Linux)
        assert not is_alive(dataclasses.replace(here, boot="another-boot"), here)
    assert is_alive(dataclasses.replace(here, host="elsewhere", pid=1, started="1"), here)
