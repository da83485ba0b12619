"""A run suspended while a parallel branch fails (a branch that goes on: ``on_error="skip"``
or an error edge) shows that branch failed, with its error, in its result and in what it
journals (``runs show``), the same in both, whatever the supervisor had done with the
failure when the run suspended.

The orderings are forced with events: a listener that holds the supervisor's thread in a
``node_failed`` event (until the run has suspended) keeps it from finishing with a
failure, or from taking the next one, before the suspension.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tests.support.suspension import until_asked
from wingman_actors import Formation, interrupt
from wingman_actors._launcher.run_show import run_document
from wingman_actors.formation import NodeFailure
from wingman_actors.formation._result import FormationResult
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.store import RunStore

WAIT = 5.0  # seconds an event may take before the test gives up (it never should)


class Gates:
    """The events a run's nodes and its listener wait on, and the listener."""

    def __init__(self, hold: str) -> None:
        self.hold = hold  # the node whose node_failed event holds the supervisor till the run suspends
        self.held = threading.Event()
        self.raising = threading.Event()
        self.suspended = threading.Event()
        self.skipped: dict[str, threading.Event] = {}

    def __call__(self, event: FormationEvent) -> None:
        if event.type is FormationEventType.NODE_FAILED and event.node == self.hold:
            self.held.set()
            assert self.suspended.wait(WAIT)
        elif event.type is FormationEventType.RUN_FINISHED:
            self.suspended.set()
        elif event.type is FormationEventType.NODE_SKIPPED and event.node is not None:
            self.skipped.setdefault(event.node, threading.Event()).set()

    def was_skipped(self, node: str) -> threading.Event:
        return self.skipped.setdefault(node, threading.Event())


def boom(x: int) -> int:
    raise ValueError(f"broken branch {x}")


def describe(failure: NodeFailure) -> str:
    return f"handled {failure.node}"


def seen(result: FormationResult, store: RunStore) -> tuple[dict[str, Any], dict[str, Any]]:
    """The nodes' statuses and errors as the result has them, and as ``runs show`` does."""
    shown = run_document(store, result.run_id)["nodes"]
    return ({name: (t.status.value, t.error) for name, t in result.nodes.items()},
            {name: (n["status"], n["error"]) for name, n in shown.items()})


def given_up_then_suspended(gates: Gates, error_edge: bool) -> Formation:
    """src -> ask (interrupts once boom's failure is given up) and src -> boom (fails;
    skipped, or into an error edge to ``handler``)."""

    def ask(x: int) -> int:
        assert gates.held.wait(WAIT)
        return int(interrupt({"go?": x}))

    f = (Formation("given_up").add_function("src", int).add_function("ask", ask)
         .add_function("boom", boom, on_error="fail" if error_edge else "skip")
         .connect("src", "ask").connect("src", "boom"))
    if error_edge:
        f.add_function("handler", describe).connect("boom", "handler", on_error=True)
    return f


def test_a_branch_given_up_before_the_run_suspended_is_failed_in_the_result_and_in_runs_show(
    store: RunStore,
) -> None:
    gates = Gates(hold="boom")
    result = given_up_then_suspended(gates, error_edge=False).run(1, store=store, on_event=gates)
    assert gates.was_skipped("boom").wait(WAIT)  # what the supervisor did after the suspension is in too
    in_result, in_show = seen(result, store)
    assert in_result["boom"] == ("failed", "ValueError: broken branch 1")
    assert in_show == in_result


def test_a_branch_given_up_into_an_error_edge_before_the_run_suspended_shows_the_same_in_runs_show(
    store: RunStore,
) -> None:
    gates = Gates(hold="boom")
    result = given_up_then_suspended(gates, error_edge=True).run(1, store=store, on_event=gates)
    in_result, in_show = seen(result, store)
    assert in_result == {"src": ("succeeded", None), "ask": ("suspended", None),
                         "boom": ("failed", "ValueError: broken branch 1"), "handler": ("pending", None)}
    assert in_show == in_result


def reported_then_suspended(gates: Gates, error_edge: bool) -> Formation:
    """src -> first (fails at once; its node_failed holds the supervisor), src -> boom
    (fails once the supervisor is held), src -> ask (interrupts once boom raised)."""

    def fail_later(x: int) -> int:
        assert gates.held.wait(WAIT)
        gates.raising.set()
        raise ValueError(f"broken branch {x}")

    def ask(x: int) -> int:
        assert gates.raising.wait(WAIT)
        return int(interrupt({"go?": x}))

    f = (Formation("reported").add_function("src", int).add_function("ask", ask)
         .add_function("first", boom, on_error="skip")
         .add_function("boom", fail_later, on_error="fail" if error_edge else "skip")
         .connect("src", "ask").connect("src", "first").connect("src", "boom"))
    if error_edge:
        f.add_function("handler", describe).connect("boom", "handler", on_error=True)
    return f


def test_a_branch_that_failed_before_the_run_suspended_is_failed_though_the_supervisor_had_not_seen_it(
    store: RunStore,
) -> None:
    gates = Gates(hold="first")
    result = reported_then_suspended(gates, error_edge=False).run(1, store=store, on_event=gates)
    in_result, in_show = seen(result, store)
    assert in_result["boom"] == in_result["first"] == ("failed", "ValueError: broken branch 1")
    assert in_show == in_result


def test_a_branch_with_an_error_edge_that_failed_before_the_run_suspended_is_failed_and_its_handler_pending(
    store: RunStore,
) -> None:
    gates = Gates(hold="first")
    result = reported_then_suspended(gates, error_edge=True).run(1, store=store, on_event=gates)
    in_result, in_show = seen(result, store)
    assert in_result["boom"] == ("failed", "ValueError: broken branch 1")
    assert in_result["handler"] == ("pending", None)
    assert in_show == in_result


def test_a_resume_runs_the_branch_whose_failure_the_suspension_cut_short(path: Path) -> None:
    gates = Gates(hold="first")
    f = reported_then_suspended(gates, error_edge=True)
    with RunStore(path) as store:
        suspended = f.run(1, store=store, on_event=gates)
        resumed = f.resume(suspended.run_id, store=store, answer=7)
    assert resumed.outputs == {"ask": 7, "handler": "handled boom"}
    assert resumed.nodes["boom"].status.value == "failed"


def test_a_branch_failing_while_the_run_suspends_is_failed_in_the_result_and_runs_again_on_resume(
    store: RunStore,
) -> None:
    # The run waits for late's attempt in flight before it suspends; the attempt fails
    # meanwhile. Its trace says so, but it is not given up (on_error="skip" would journal
    # a skip): it runs again on resume, as a failure the suspension cut short does.
    calls: list[int] = []

    def late(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            until_asked(store, "r-late", WAIT)  # ask's interrupt is journalled
            time.sleep(0.2)  # and the run is waiting for this attempt to suspend
            raise ValueError("failed while the run suspends")
        return x * 10

    def ask(x: int) -> int:
        return int(interrupt({"go?": x}))

    f = (Formation("late").add_function("src", int).add_function("ask", ask)
         .add_function("late", late, on_error="skip").connect("src", "ask").connect("src", "late"))
    result = f.run(1, store=store, run_id="r-late")
    assert result.status == "suspended"
    in_result, in_show = seen(result, store)
    assert in_result["late"] == ("failed", "ValueError: failed while the run suspends")
    assert in_show == in_result
    resumed = f.resume("r-late", store=store, answer=7)
    assert resumed.outputs == {"ask": 7, "late": 10}
    assert calls == [1, 1]
