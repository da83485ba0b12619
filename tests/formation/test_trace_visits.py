"""A node trace's ``visits`` counts the visits the node ran, failed ones included, the same
whether or not anyone listens to the run's events."""

from __future__ import annotations

from pathlib import Path

import pytest

from wingman_actors import interrupt
from wingman_actors.formation import Formation, NodeFailure
from wingman_actors.formation.events import FormationEvent


def broken(text: str) -> str:
    raise RuntimeError(f"cannot read {text!r}")


def handle(failure: NodeFailure) -> str:
    return f"handled {failure.node}"


def skipping() -> Formation:
    return (Formation("skipping").add_function("read", str.strip)
            .add_function("parse", broken, on_error="skip", retries=1, backoff=0.001).connect("read", "parse"))


def quiet(event: FormationEvent) -> None:
    del event


@pytest.mark.parametrize("listening", [False, True], ids=["without listeners", "with a listener"])
def test_a_node_skipped_after_failing_counts_its_visit(listening: bool) -> None:
    result = skipping().run(" x ", on_event=quiet if listening else None)
    trace = result.nodes["parse"]
    assert (trace.status, trace.attempts, trace.visits) == ("skipped", 2, 1)


def test_a_failed_node_whose_error_edge_took_over_counts_its_visit() -> None:
    formation = (Formation("routed").add_function("parse", broken).add_function("fallback", handle)
                 .connect("parse", "fallback", on_error=True))
    result = formation.run("x")
    assert (result.nodes["parse"].status, result.nodes["parse"].visits) == ("failed", 1)
    assert result.nodes["fallback"].visits == 1


def ask(text: str) -> str:
    return f"{text}: {interrupt({'question': 'publish?'})}"


def asking() -> Formation:
    return Formation("asking").add_function("clean", str.strip).add_function("ask", ask).connect("clean", "ask")


def test_a_node_suspended_by_its_interrupt_counts_the_visit_and_attempt_it_is_in(tmp_path: Path) -> None:
    result = asking().run(" draft ", store=tmp_path / "runs.sqlite")
    trace = result.nodes["ask"]
    assert (trace.status, trace.visits, trace.attempts) == ("suspended", 1, 1)


def test_the_suspended_visit_is_counted_once_after_the_resume_runs_it(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    suspended = asking().run(" draft ", store=store)
    result = asking().resume(suspended.run_id, store=store, answer="yes")
    assert (result.nodes["ask"].visits, result.nodes["ask"].outputs) == (1, ["draft: yes"])


def test_a_node_a_breakpoint_stopped_before_has_not_run(tmp_path: Path) -> None:
    result = asking().run(" draft ", store=tmp_path / "runs.sqlite", break_before=["ask"])
    trace = result.nodes["ask"]
    assert (trace.status, trace.visits, trace.attempts) == ("suspended", 0, 0)


def add_one(n: int) -> int:
    return n + 1


def below_three(n: int) -> bool:
    return n < 3


def reached_three(n: int) -> bool:
    return n >= 3


def ask_count(n: int) -> str:
    return f"{n}: {interrupt({'question': 'publish?'})}"


def test_a_node_after_a_loop_s_suspended_node_is_pending_not_skipped(tmp_path: Path) -> None:
    formation = (Formation("looping").add_function("count", add_one).add_function("ask", ask_count)
                 .add_function("publish", str.upper).connect("count", "count", when=below_three)
                 .connect("count", "ask", when=reached_three).connect("ask", "publish"))
    store = tmp_path / "runs.sqlite"
    suspended = formation.run(0, store=store)
    assert suspended.nodes["count"].outputs == [1, 2, 3]
    assert suspended.nodes["publish"].status == "pending"
    assert formation.resume(suspended.run_id, store=store, answer="yes").nodes["publish"].outputs == ["3: YES"]
