"""Prompt flow's batch runs on ``backend="ray"``, ported from microsoft/promptflow
``src/promptflow/tests/executor/e2etests/test_batch_engine.py`` and ``test_batch_timeout.py``:
the declarations of ``test_peer_promptflow_batch.py`` with every node replica a Ray actor, so
the lines' outputs, failures and traces cross process boundaries."""

from __future__ import annotations

import time

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def tool_1(inputs: dict[str, int]) -> int:
    if inputs["idx"] % inputs["mod"] == 0:
        raise Exception("Failed")
    return inputs["idx"]


def tool_2(inputs: dict[str, int], tool_1: int) -> int:
    if tool_1 % inputs["mod_2"] == 0:
        raise Exception("Failed")
    return tool_1


def identity(x: int) -> int:
    return x


def inputs(x: dict[str, int]) -> dict[str, int]:
    return x


def with_failed_line(x: int) -> int:
    if x == 2:
        time.sleep(20)  # stands for a line that hangs (its Ray actor is abandoned)
    return x


def test_failed_lines_fail_alone_on_ray() -> None:
    """From test_batch_engine.py::test_batch_with_partial_failure (lines 3 and 5 of 1..5 fail,
    in tool_1 and tool_2; the others complete)."""
    f = (Formation("python_tool_partial_failure").add_function("inputs", inputs)
         .add_function("tool_1", tool_1).add_function("tool_2", tool_2)
         .connect("inputs", "tool_1", "tool_2").connect("inputs", "tool_2"))
    outcome: list[object] = []
    with f.start(backend="ray") as running:
        futures = [running.submit({"idx": i, "mod": 3, "mod_2": 5}) for i in range(1, 6)]
        for future in futures:
            try:
                outcome.append(future.result(60).output)
            except FormationRuntimeError as err:
                outcome.append((err.node, str(err.__cause__)))
    assert outcome == [1, 2, ("tool_1", "Failed"), 4, ("tool_2", "Failed")]


def test_a_batch_timeout_on_ray_keeps_the_traces_of_the_cut_line() -> None:
    """From test_batch_timeout.py::test_batch_timeout (lines 0 and 1 completed, line 2
    canceled), on Ray: the map node's timeout keeps the traces of every line as it was when
    cut, so they agree with the events the lines sent (whenever the Ray actors came up)."""
    line = (Formation("line").add_function("my_python_tool", identity)
            .add_function("my_python_tool_with_failed_line", with_failed_line)
            .connect("my_python_tool", "my_python_tool_with_failed_line"))
    f = Formation("batch").add_map("lines", formation=line, max_workers=3, timeout=10)
    events: list[FormationEvent] = []
    with pytest.raises(FormationRuntimeError, match=r"timed out after 10s") as info:
        f.run([0, 1, 2], backend="ray", on_event=events.append)
    nodes = info.value.nodes
    for inner in ("my_python_tool", "my_python_tool_with_failed_line"):
        started = [e.node for e in events if e.type.value == "node_started" and (e.node or "").endswith(f"/{inner}")]
        finished = sorted((e.node, e.data["output"]) for e in events
                          if e.type.value == "node_finished" and (e.node or "").endswith(f"/{inner}"))
        trace = nodes[f"lines/{inner}"]
        assert trace.visits == len(started) and trace.outputs == [output for _, output in finished]
        cut = len(started) > len(finished)
        assert trace.status == ("cancelled" if cut else "succeeded" if started else "skipped")
    assert not any(e.node == "lines/2/my_python_tool_with_failed_line" for e in events
                   if e.type.value == "node_finished")
