"""How long this process's threads have waited for a CPU, for timing checks that must not
count a loaded machine's scheduling against the code under test."""

from __future__ import annotations

import os

__all__ = ["cpu_wait"]


def cpu_wait() -> float:
    """Seconds the threads of this process have spent runnable but waiting for a CPU.

    From Linux's per-thread schedstat (its second field); 0 where there is none, so a check
    that subtracts the increase counts the whole wall time there. Waiting for the GIL
    while the thread holding it waits for a CPU shows up as that thread's wait.
    """
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0.0
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended meanwhile
    return total / 1e9
