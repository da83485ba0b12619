"""Nested formations on both backends: on Ray the formation node stays in the driver
and its inner formation's nodes are Ray actors; results, events by path, traces,
retries, interrupts and resumes behave as on threads."""

from __future__ import annotations

from pathlib import Path

from wingman_actors import Formation, interrupt
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.store import RunStore


def _inc(x: int) -> int:
    return x + 1


def _double(x: int) -> int:
    return x * 2


def _ask(x: int) -> str:
    return f"{x}: {interrupt({'ok?': x})}"


def _inner() -> Formation:
    return Formation("inner").add_function("inc", _inc).add_function("double", _double).connect("inc", "double")


def test_a_nested_formation_runs_and_reports_its_inner_nodes_on_each_backend(backend: str) -> None:
    outer = Formation("outer").add_function("src", _inc).add_formation("sub", _inner()).add_function("out", _inc)
    events: list[FormationEvent] = []
    result = outer.connect("src", "sub", "out").run(1, backend=backend, on_event=events.append)
    assert result.output == 7
    assert [e.node for e in events if e.type is FormationEventType.NODE_FINISHED] == [
        "src", "sub/inc", "sub/double", "sub", "out"]
    assert list(result.nodes) == ["src", "sub", "sub/inc", "sub/double", "out"]


def test_a_map_over_a_formation_runs_on_each_backend(backend: str) -> None:
    outer = Formation("outer").add_map("each", formation=_inner(), max_workers=2)
    assert outer.run([1, 2, 3], backend=backend).output == [4, 6, 8]


def test_a_map_over_a_formation_without_max_workers_starts_promptly_on_each_backend(backend: str) -> None:
    # max_workers=0 gives each inner node one replica per item run at once: up to 100 on
    # threads, but as many as the cluster's CPUs on Ray, where each replica is a process
    # (100 processes per inner node took minutes to start: past the suite's 60 s timeout)
    outer = Formation("outer").add_map("each", formation=_inner())
    assert outer.run([1, 2, 3], backend=backend).output == [4, 6, 8]


def test_an_interrupt_inside_a_nested_formation_suspends_and_resumes_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    outer = Formation("outer").add_formation("sub", Formation("inner").add_function("ask", _ask))
    with RunStore(tmp_path / "runs.sqlite") as store:
        suspended = outer.run(5, store=store, backend=backend)
        assert suspended.interrupt == {"node": "sub/ask", "payload": {"ok?": 5}}
        assert outer.resume(suspended.run_id, store=store, answer="yes", backend=backend).output == "5: yes"


def _refuse(x: int) -> int:
    raise ValueError(f"no {x}")


def _describe(failure: NodeFailure) -> str:
    return f"{failure.node} {type(failure.error).__name__} {failure.input} {failure.attempts}"


def test_an_error_edge_from_a_formation_node_hands_its_handler_the_failure_on_each_backend(backend: str) -> None:
    # on Ray the handler is an actor in another process: the NestedRunError travels to it
    outer = (Formation("outer").add_formation("sub", Formation("inner").add_function("refuse", _refuse))
             .add_function("handler", _describe).connect("sub", "handler", on_error=True))
    result = outer.run(5, backend=backend)
    assert result.outputs == {"handler": "sub NestedRunError 5 1"}


def _failed_inner_nodes(failure: NodeFailure) -> dict[str, str]:
    return {name: f"{trace.status.value} {trace.error}" for name, trace in failure.error.nodes.items()}  # type: ignore[attr-defined]


def test_the_failure_of_a_formation_node_carries_the_inner_traces_to_its_handler_on_each_backend(
    backend: str,
) -> None:
    # on Ray the handler runs in another process: the NestedRunError's traces travel with it
    inner = Formation("inner").add_function("inc", _inc).add_function("refuse", _refuse).connect("inc", "refuse")
    outer = (Formation("outer").add_formation("sub", inner).add_function("handler", _failed_inner_nodes)
             .connect("sub", "handler", on_error=True))
    result = outer.run(5, backend=backend)
    assert result.outputs["handler"] == {"sub/inc": "succeeded None", "sub/refuse": "failed ValueError: no 6"}
    assert result.nodes["sub/refuse"].error == "ValueError: no 6"
