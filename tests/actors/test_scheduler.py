"""The timer thread of a running formation (``actors._scheduler``): cancelled timers let go."""

from __future__ import annotations

import functools
import gc
import weakref

from wingman_actors.actors._scheduler import Scheduler


class _Run:
    """Stands for what a timer's callback refers to (a run's state)."""


def test_a_cancelled_timer_no_longer_holds_what_its_callback_refers_to() -> None:
    scheduler = Scheduler()
    try:
        run = _Run()
        handle = scheduler.call_later(300, functools.partial(print, run))
        held = weakref.ref(run)
        handle.cancel()
        del run
        gc.collect()
        assert held() is None
    finally:
        scheduler.stop()


def test_timers_cancelled_before_their_time_do_not_pile_up_in_the_scheduler() -> None:
    scheduler = Scheduler()
    try:
        for _ in range(100_000):  # e.g. every run's timeout, each run done long before it
            scheduler.call_later(300, lambda: None).cancel()
        assert scheduler.pending <= 4096
    finally:
        scheduler.stop()


def test_a_timer_not_cancelled_still_fires_after_others_were_cleared_away() -> None:
    import threading

    scheduler = Scheduler()
    fired = threading.Event()
    try:
        scheduler.call_later(0.2, fired.set)
        for _ in range(10_000):
            scheduler.call_later(300, lambda: None).cancel()
        assert fired.wait(5)
    finally:
        scheduler.stop()
