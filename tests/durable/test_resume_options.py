"""``Formation.resume`` and ``resume_stream`` take the run-time options ``run`` takes:
``timeout``, ``backend``, ``backend_options`` and ``blackboard``."""

from __future__ import annotations

import threading

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation.events import FormationEventType
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunStore


def failed_run(store: RunStore, state: dict[str, bool]) -> tuple[Formation, str]:
    """A run of a two-node formation that failed at 'note', a node that reads the board."""

    def note(x: str, blackboard: Blackboard) -> str:
        if state["down"]:
            raise RuntimeError("outage")
        return f"{x} in a {blackboard.get('tone', 'plain')} tone"

    f = Formation("board").add_function("shout", str.upper).add_function("note", note).connect("shout", "note")
    with pytest.raises(FormationRuntimeError) as info:
        f.run("hi", store=store, blackboard=Blackboard())
    state["down"] = False
    return f, info.value.run_id or ""


def test_resume_shares_the_blackboard_it_is_given_with_the_resumed_nodes(store: RunStore) -> None:
    f, run_id = failed_run(store, {"down": True})
    board = Blackboard()
    board.set("tone", "calm")
    result = f.resume(run_id, store=store, blackboard=board)
    assert (result.status, result.output) == ("succeeded", "HI in a calm tone")


def test_resume_stream_shares_the_blackboard_it_is_given(store: RunStore) -> None:
    f, run_id = failed_run(store, {"down": True})
    board = Blackboard()
    board.set("tone", "dry")
    events = list(f.resume_stream(run_id, store=store, blackboard=board))
    assert events[-1].type is FormationEventType.RUN_FINISHED
    assert events[-1].data["result"].output == "HI in a dry tone"


def test_resume_without_the_board_a_node_needs_is_refused_and_the_run_stays_resumable(store: RunStore) -> None:
    f, run_id = failed_run(store, {"down": True})
    with pytest.raises(FormationSetupError, match="blackboard"):
        f.resume(run_id, store=store)
    assert store.get(run_id).status == "failed"
    assert f.resume(run_id, store=store, blackboard=Blackboard()).output == "HI in a plain tone"


def test_resume_passes_backend_and_backend_options_on(store: RunStore) -> None:
    f = Formation("one").add_function("a", lambda x: x + 1)
    state = {"down": True}

    def b(x: int) -> int:
        if state["down"]:
            raise RuntimeError("outage")
        return x

    f.add_function("b", b).connect("a", "b")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    run_id = info.value.run_id or ""
    with pytest.raises(FormationSetupError, match="no-such-backend"):
        f.resume(run_id, store=store, backend="no-such-backend")
    with pytest.raises(FormationSetupError, match="takes no backend_options"):
        f.resume(run_id, store=store, backend="threads", backend_options={"address": "auto"})
    with pytest.raises(FormationSetupError, match="no-such-backend"):
        next(iter(f.resume_stream(run_id, store=store, backend="no-such-backend")))
    state["down"] = False
    assert f.resume(run_id, store=store, backend="threads").output == 2


def test_resume_timeout_bounds_the_resumed_run_and_leaves_it_resumable(store: RunStore) -> None:
    release = threading.Event()
    state = {"down": True}

    def slow(x: int) -> int:
        if state["down"]:
            raise RuntimeError("outage")
        release.wait(5)
        return x * 3

    f = Formation("slow").add_function("a", lambda x: x + 1).add_function("b", slow).connect("a", "b")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    run_id = info.value.run_id or ""
    state["down"] = False
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0\.2s"):
            f.resume(run_id, store=store, timeout=0.2)
    finally:
        release.set()
    assert f.resume(run_id, store=store).output == 6
