"""A formation node (``add_formation``) or a map over a formation (``add_map(name,
formation=...)``) cut short — by its own ``timeout``, by the run's, by a cancel, by a
``join="any"`` it lost, or by its inner run failing elsewhere — closes the events of the
inner nodes it cut: each inner node that was running gets ``node_skipped`` with
``cancelled: True`` (its trace says ``cancelled``), as a ``join="any"`` loser does, before
the outer node's own end and the run's ``run_failed`` / ``run_cancelled`` /
``run_finished``. ``unfinished`` names the outer run's own nodes only.

Found porting Prompt flow's batch tests (``test_batch_timeout.py``: a line cut by the batch
timeout): a consumer tracking node state from events (the live view, the run viewer's
stream) saw the cut line's nodes, ``lines/2/b``, running for ever."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.peers import Gate, local_ray, until  # noqa: F401  (local_ray: a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent, FormationEventType

E = FormationEventType
_CLOSING = (E.NODE_FINISHED, E.NODE_FAILED, E.NODE_SKIPPED, E.NODE_RETRY)
_RUN_ENDS = (E.RUN_FINISHED, E.RUN_FAILED, E.RUN_CANCELLED)


class Seen:
    """The events of a run, in order (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[FormationEvent] = []

    def __call__(self, event: FormationEvent) -> None:
        with self.lock:
            self.events.append(event)

    def at(self, type: FormationEventType, node: str | None = None) -> int:
        """The index of the first event of ``type`` about ``node`` (run events: None)."""
        with self.lock:
            return next(i for i, e in enumerate(self.events) if e.type is type and e.node == node)

    def end(self) -> FormationEvent:
        with self.lock:
            return next(e for e in self.events if e.type in _RUN_ENDS)

    def left_open(self) -> list[str]:
        """The inner paths (``"sub/wait"``) whose last node event is ``node_started``:
        running for ever, for a consumer of the events."""
        last: dict[str, FormationEventType] = {}
        with self.lock:
            for e in self.events:
                if e.node is not None and "/" in e.node and (e.type is E.NODE_STARTED or e.type in _CLOSING):
                    last[e.node] = e.type
        return sorted(p for p, t in last.items() if t is E.NODE_STARTED)

    def closed_before(self, path: str, later: int) -> FormationEvent:
        """The ``node_skipped`` that closed ``path``, checked to come before event ``later``."""
        i = self.at(E.NODE_SKIPPED, path)
        assert self.at(E.NODE_STARTED, path) < i < later
        event = self.events[i]
        assert event.data["cancelled"] is True and "cancelled" in event.data["reason"]
        return event


def sub(held: Gate) -> Formation:
    return Formation("sub").add_function("a", str.strip).add_function("wait", held).connect("a", "wait")


def lines(held: Gate) -> Formation:
    """A line formation whose ``b`` holds on item 2 only."""
    return (Formation("line").add_function("a", lambda x: x)
            .add_function("b", lambda x: held(x) if x == 2 else x).connect("a", "b"))


def test_a_formation_node_cut_by_its_timeout_closes_its_running_inner_node_before_its_own_end(held: Gate) -> None:
    seen = Seen()
    outer = Formation("outer").add_formation("sub", sub(held), timeout=1.0)
    with pytest.raises(FormationRuntimeError) as caught:
        outer.run(" x ", on_event=seen)
    seen.closed_before("sub/wait", seen.at(E.NODE_FAILED, "sub"))
    assert seen.at(E.NODE_FINISHED, "sub/a") < seen.at(E.NODE_FAILED, "sub")
    assert seen.left_open() == []
    assert caught.value.nodes["sub/wait"].status == "cancelled"


def test_a_formation_node_cut_by_the_runs_timeout_closes_its_inner_node_before_run_failed(held: Gate) -> None:
    seen = Seen()
    outer = Formation("outer").add_function("first", str.upper).add_formation("sub", sub(held)).connect("first", "sub")
    with pytest.raises(FormationRuntimeError, match="timed out"):
        outer.run(" x ", timeout=1.0, on_event=seen)
    seen.closed_before("sub/wait", seen.at(E.RUN_FAILED))
    assert seen.left_open() == []
    assert seen.end().data["unfinished"] == ["sub"]  # the outer run's own nodes, as before


def test_a_cancelled_run_closes_the_inner_node_of_its_formation_node_before_run_cancelled(held: Gate) -> None:
    seen = Seen()
    with Formation("outer").add_formation("sub", sub(held)).start(on_event=seen) as running:
        future = running.submit(" x ")
        assert held.reached.wait(3)
        assert running.cancel(future.run_id) is True
    event = seen.closed_before("sub/wait", seen.at(E.RUN_CANCELLED))
    assert event.run_id == future.run_id
    assert seen.left_open() == []
    cancelled = seen.end()
    assert cancelled.data["unfinished"] == ["sub"]
    assert cancelled.data["nodes"]["sub/wait"].status == "cancelled"


def test_a_formation_node_that_lost_a_join_any_race_closes_its_inner_node_before_run_finished(held: Gate) -> None:
    seen = Seen()

    def quick(x: str) -> str:
        assert held.reached.wait(5)  # wins once the loser's inner node is working
        return "quick"

    outer = (Formation("race").add_function("s", lambda x: x).add_function("quick", quick)
             .add_formation("sub", sub(held)).add_function("j", lambda d: d, join="any")
             .connect("s", "quick").connect("s", "sub").connect("quick", "j").connect("sub", "j"))
    result = outer.run(" x ", on_event=seen)
    assert result.output == {"quick": "quick"}
    seen.closed_before("sub/wait", seen.at(E.RUN_FINISHED))
    assert seen.at(E.NODE_SKIPPED, "sub/wait") < seen.at(E.NODE_SKIPPED, "sub")  # the inner first, then the node
    assert seen.left_open() == []


def test_an_inner_run_failing_closes_its_sibling_inner_node_before_the_formation_node_fails(held: Gate) -> None:
    seen = Seen()

    def boom(x: str) -> str:
        assert held.reached.wait(5)
        raise ValueError("no luck")

    inner = (Formation("sub").add_function("a", str.strip).add_function("boom", boom).add_function("wait", held)
             .connect("a", "boom").connect("a", "wait"))
    with pytest.raises(FormationRuntimeError, match="no luck"):
        Formation("outer").add_formation("sub", inner).run(" x ", on_event=seen)
    seen.closed_before("sub/wait", seen.at(E.NODE_FAILED, "sub"))
    assert seen.at(E.NODE_FAILED, "sub/boom") < seen.at(E.NODE_FAILED, "sub")
    assert seen.left_open() == []


def test_a_formation_node_two_deep_cut_closes_the_deepest_node_then_the_middle_one(held: Gate) -> None:
    seen = Seen()
    mid = Formation("mid").add_function("m", str.strip).add_formation("sub", sub(held)).connect("m", "sub")
    with pytest.raises(FormationRuntimeError):
        Formation("outer").add_formation("top", mid, timeout=1.0).run(" x ", on_event=seen)
    deepest = seen.closed_before("top/sub/wait", seen.at(E.NODE_SKIPPED, "top/sub"))
    assert deepest.node == "top/sub/wait"
    seen.closed_before("top/sub", seen.at(E.NODE_FAILED, "top"))
    assert seen.left_open() == []


def test_a_map_over_a_formation_cut_by_its_timeout_closes_the_cut_items_inner_node(held: Gate) -> None:
    """From Prompt flow's test_batch_timeout.py::test_batch_with_line_timeout (a line past its
    time ends; the batch's other lines complete): the cut line's node closes."""
    seen = Seen()
    f = Formation("batch").add_map("lines", formation=lines(held), timeout=1.0)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run([0, 1, 2], on_event=seen)
    seen.closed_before("lines/2/b", seen.at(E.NODE_FAILED, "lines"))
    assert seen.at(E.NODE_FINISHED, "lines/1/b") < seen.at(E.NODE_FAILED, "lines")
    assert seen.left_open() == []
    assert caught.value.nodes["lines/b"].status == "cancelled"


def test_a_map_over_a_formation_cut_by_the_runs_timeout_closes_the_cut_items_node_before_run_failed(
    held: Gate,
) -> None:
    """From Prompt flow's test_batch_timeout.py::test_batch_timeout (``batch_timeout_sec``
    ends the batch with a line still running)."""
    seen = Seen()
    f = Formation("batch").add_map("lines", formation=lines(held)).add_function("total", sum).connect("lines", "total")
    with pytest.raises(FormationRuntimeError, match="timed out"):
        f.run([0, 1, 2], timeout=1.0, on_event=seen)
    seen.closed_before("lines/2/b", seen.at(E.RUN_FAILED))
    assert seen.left_open() == []
    assert seen.end().data["unfinished"] == ["lines"]


def test_a_cancelled_run_closes_the_inner_nodes_of_the_maps_items_in_flight(held: Gate) -> None:
    seen = Seen()
    with Formation("batch").add_map("lines", formation=lines(held)).start(on_event=seen) as running:
        future = running.submit([0, 1, 2])
        assert held.reached.wait(3)
        assert until(lambda: any(e.node == "lines/1/b" and e.type is E.NODE_FINISHED for e in list(seen.events)), within=10)
        assert running.cancel(future.run_id) is True
    seen.closed_before("lines/2/b", seen.at(E.RUN_CANCELLED))
    assert seen.left_open() == []
    assert seen.end().data["unfinished"] == ["lines"]


def test_a_map_over_a_formation_that_lost_a_join_any_race_closes_its_items_inner_node(held: Gate) -> None:
    seen = Seen()

    def quick(x: Any) -> str:
        assert held.reached.wait(5)
        return "quick"

    outer = (Formation("race").add_function("s", lambda x: x).add_function("quick", quick)
             .add_map("lines", formation=lines(held)).add_function("j", lambda d: d, join="any")
             .connect("s", "quick").connect("s", "lines").connect("quick", "j").connect("lines", "j"))
    assert outer.run([0, 1, 2], on_event=seen).output == {"quick": "quick"}
    seen.closed_before("lines/2/b", seen.at(E.RUN_FINISHED))
    assert seen.at(E.NODE_SKIPPED, "lines/2/b") < seen.at(E.NODE_SKIPPED, "lines")
    assert seen.left_open() == []


def _hangs_on_2(x: int) -> int:
    if x == 2:
        time.sleep(20)  # stands for a line that hangs (its Ray actor is abandoned)
    return x


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_cancelled_run_on_ray_closes_the_inner_node_of_the_maps_item_it_cut() -> None:
    seen = Seen()
    line = Formation("line").add_function("a", lambda x: x).add_function("b", _hangs_on_2).connect("a", "b")
    with Formation("batch").add_map("lines", formation=line).start(backend="ray", on_event=seen) as running:
        future = running.submit([0, 1, 2])
        assert until(lambda: any(e.node == "lines/2/b" and e.type is E.NODE_STARTED for e in list(seen.events)),
                     within=50)
        assert running.cancel(future.run_id) is True
    seen.closed_before("lines/2/b", seen.at(E.RUN_CANCELLED))
    assert seen.left_open() == []
