"""A formation node whose inner run failed shows that run as a succeeded one does: which
inner node failed with what, and the inner nodes that succeeded before it, on the
``NestedRunError`` (``nodes``, named by path) and in the outer result's traces."""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation._nesting import NestedRunError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.formation.events import FormationEvent, FormationEventType


def inc(x: int) -> int:
    return x + 1


def boom(x: int) -> int:
    raise ValueError(f"no luck with {x}")


def failing(name: str = "inner") -> Formation:
    """inc -> boom -> after (never reached)."""
    return (Formation(name).add_function("inc", inc).add_function("boom", boom).add_function("after", inc)
            .connect("inc", "boom", "after"))


def nested(inner: Formation, **policies: object) -> Formation:
    """src -> sub (inner) -> show."""
    return (Formation("outer").add_function("src", inc).add_formation("sub", inner, **policies)
            .add_function("show", str).connect("src", "sub", "show"))


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Released when the test ends: a node stuck on it leaves no thread behind."""
    event = threading.Event()
    yield event
    event.set()


def statuses(nodes: dict[str, object]) -> dict[str, str]:
    return {name: trace.status.value for name, trace in nodes.items()}  # type: ignore[attr-defined]


def nested_error(outer: Formation, input: object = 1) -> NestedRunError:
    with pytest.raises(FormationRuntimeError) as caught:
        outer.run(input)
    cause = caught.value.__cause__
    assert isinstance(cause, NestedRunError)
    return cause


def test_the_nested_run_error_has_the_inner_traces_named_by_path() -> None:
    error = nested_error(nested(failing()))
    assert statuses(error.nodes) == {"sub/inc": "succeeded", "sub/boom": "failed", "sub/after": "skipped"}
    assert {trace.parent for trace in error.nodes.values()} == {"sub"}


def test_the_nested_run_error_says_which_inner_node_failed_with_what() -> None:
    failed = nested_error(nested(failing())).nodes["sub/boom"]
    assert failed.error == "ValueError: no luck with 3" and failed.attempts == 1


def test_the_nested_run_error_keeps_the_outputs_of_the_inner_nodes_that_succeeded() -> None:
    assert nested_error(nested(failing())).nodes["sub/inc"].outputs == [3]


def test_a_skipped_formation_node_keeps_its_failed_inner_run_in_the_outer_result() -> None:
    result = nested(failing(), on_error="skip").run(1)
    assert statuses(result.nodes) == {"src": "succeeded", "sub": "skipped", "sub/inc": "succeeded",
                                      "sub/boom": "failed", "sub/after": "skipped", "show": "skipped"}
    assert result.nodes["sub/boom"].error == "ValueError: no luck with 3"
    assert result.nodes["sub/boom"].parent == "sub"


def test_an_error_edge_handler_sees_the_failed_inner_run_on_the_failure() -> None:
    def handler(failure: NodeFailure) -> str:
        assert isinstance(failure.error, NestedRunError)
        return failure.error.nodes["sub/boom"].error or ""

    outer = (Formation("outer").add_formation("sub", failing()).add_function("handler", handler)
             .connect("sub", "handler", on_error=True))
    result = outer.run(1)
    assert result.outputs["handler"] == "ValueError: no luck with 2"
    assert result.nodes["sub"].status is NodeStatus.FAILED
    assert result.nodes["sub/boom"].status is NodeStatus.FAILED
    assert result.nodes["sub/inc"].output == 2


def test_a_formation_nested_two_deep_names_the_failed_node_by_its_whole_path() -> None:
    middle = Formation("middle").add_function("first", inc).add_formation("deep", failing()).connect("first", "deep")
    error = nested_error(Formation("outer").add_formation("mid", middle))
    assert statuses(error.nodes) == {"mid/first": "succeeded", "mid/deep": "failed", "mid/deep/inc": "succeeded",
                                     "mid/deep/boom": "failed", "mid/deep/after": "skipped"}
    assert error.nodes["mid/deep/boom"].parent == "mid"


def test_a_failed_item_of_a_map_over_a_formation_has_the_items_inner_traces() -> None:
    def picky(x: int) -> int:
        if x == 2:
            raise ValueError("two")
        return x

    per_item = Formation("per_item").add_function("inc", inc).add_function("picky", picky).connect("inc", "picky")
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("mapped").add_map("each", formation=per_item).run([0, 1, 5])
    items = caught.value.__cause__
    assert isinstance(items, MapItemsError)
    error = items.errors[1]
    assert isinstance(error, NestedRunError)
    assert statuses(error.nodes) == {"each/1/inc": "succeeded", "each/1/picky": "failed"}
    assert error.nodes["each/1/picky"].parent == "each"


def test_a_retry_that_succeeds_leaves_the_succeeded_inner_run_in_the_traces() -> None:
    calls: list[int] = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise ConnectionError("hiccup")
        return x

    inner = Formation("inner").add_function("inc", inc).add_function("flaky", flaky).connect("inc", "flaky")
    result = nested(inner, retries=1, backoff=0).run(1)
    assert statuses(result.nodes) == {"src": "succeeded", "sub": "succeeded", "sub/inc": "succeeded",
                                      "sub/flaky": "succeeded", "show": "succeeded"}
    assert result.nodes["sub"].attempts == 2


def test_the_nested_run_error_pickles_with_its_inner_traces() -> None:
    # what an error edge ships to a handler in another process (the Ray backend)
    error = nested_error(nested(failing()))
    again = pickle.loads(pickle.dumps(error))
    assert statuses(again.nodes) == statuses(error.nodes)
    assert again.nodes["sub/boom"].error == error.nodes["sub/boom"].error


def test_a_nested_run_error_built_by_hand_has_no_inner_traces() -> None:
    error = NestedRunError("sub", "inner", FormationRuntimeError("node 'x' failed", node="x"))
    assert error.nodes == {}


def test_a_formation_node_that_timed_out_keeps_the_inner_nodes_that_ran_and_the_one_cut_short(
    release: threading.Event,
) -> None:
    def stuck(x: int) -> int:
        release.wait(5)
        return x

    inner = Formation("inner").add_function("inc", inc).add_function("stuck", stuck).connect("inc", "stuck")
    result = nested(inner, timeout=0.2, on_error="skip").run(1)
    assert statuses(result.nodes) == {"src": "succeeded", "sub": "skipped", "sub/inc": "succeeded",
                                      "sub/stuck": "cancelled", "show": "skipped"}
    assert "timed out" in (result.nodes["sub"].error or "")


def test_a_failed_inner_runs_events_reach_the_outer_listeners_by_path() -> None:
    events: list[FormationEvent] = []
    nested(failing(), on_error="skip").run(1, on_event=events.append)
    failed = [(e.node, e.data["error"]) for e in events if e.type is FormationEventType.NODE_FAILED]
    assert failed[0] == ("sub/boom", "ValueError: no luck with 3")
    assert [node for node, _ in failed] == ["sub/boom", "sub"]
