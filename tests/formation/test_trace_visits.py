"""A node trace's ``visits`` counts the visits the node ran, failed ones included, the same
whether or not anyone listens to the run's events."""

from __future__ import annotations

import pytest

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
