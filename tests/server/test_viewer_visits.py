"""The viewer's visits of a journalled run: each visit's input as the run gave it, in loops
too (the journal holds outputs only: an input it cannot tell is left out, never a wrong
one), its times, and the visits that failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import Formation, NodeFailure
from wingman_actors.server._viewer_store import create_store_viewer


def add_one(n: int) -> int:
    return n + 1


def below_three(n: int) -> bool:
    return n < 3


def reached_three(n: int) -> bool:
    return n >= 3


def shown(n: int) -> str:
    return f"got {n}"


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_store_viewer(tmp_path / "runs.sqlite"), base_url="http://127.0.0.1") as client:
        yield client


def visits(viewer: TestClient, run_id: str, node: str) -> list[dict[str, Any]]:
    doc = viewer.get(f"/ui/api/runs/{run_id}").json()
    return [v for v in doc["visits"] if v["node"] == node]


def test_each_visit_of_a_loop_node_shows_the_value_its_back_edge_brought(viewer: TestClient, tmp_path: Path) -> None:
    formation = (Formation("loop").add_function("start", add_one).add_function("count", add_one)
                 .add_function("done", shown).connect("start", "count").connect("count", "count", when=below_three)
                 .connect("count", "done", when=reached_three))
    result = formation.run(-1, store=tmp_path / "runs.sqlite")
    assert result.nodes["count"].outputs == [1, 2, 3]
    assert [v["input"] for v in visits(viewer, result.run_id, "count")] == [0, 1, 2]
    (done,) = visits(viewer, result.run_id, "done")
    assert done.get("input", 3) == 3  # 3, or left out: never an earlier iteration's value


def test_a_source_looping_on_itself_shows_the_run_input_then_its_own_outputs(viewer: TestClient,
                                                                             tmp_path: Path) -> None:
    formation = (Formation("self").add_function("count", add_one).add_function("done", shown)
                 .connect("count", "count", when=below_three).connect("count", "done", when=reached_three))
    result = formation.run(0, store=tmp_path / "runs.sqlite")
    assert [v["input"] for v in visits(viewer, result.run_id, "count")] == [0, 1, 2]


def test_a_chain_s_visits_show_their_predecessor_s_output(viewer: TestClient, tmp_path: Path) -> None:
    formation = Formation("chain").add_function("a", str.strip).add_function("b", str.upper).connect("a", "b")
    result = formation.run(" x ", store=tmp_path / "runs.sqlite")
    assert [v["input"] for v in visits(viewer, result.run_id, "a")] == [" x "]
    assert [v["input"] for v in visits(viewer, result.run_id, "b")] == ["x"]


def test_each_journalled_visit_carries_its_times(viewer: TestClient, tmp_path: Path) -> None:
    formation = (Formation("self").add_function("count", add_one).add_function("done", shown)
                 .connect("count", "count", when=below_three).connect("count", "done", when=reached_three))
    result = formation.run(0, store=tmp_path / "runs.sqlite")
    times = [(v["started"], v["finished"]) for v in visits(viewer, result.run_id, "count")]
    assert len(times) == 3 and all(started and finished and started <= finished for started, finished in times)
    assert times[0][1] <= times[1][0] and times[1][1] <= times[2][0]  # one after the other


def broken(text: str) -> str:
    raise RuntimeError(f"cannot read {text!r}")


def handled(failure: NodeFailure) -> str:
    return f"handled {failure.node}"


def test_the_visit_a_failed_run_failed_in_is_listed_failed_with_its_input_error_and_times(
        viewer: TestClient, tmp_path: Path) -> None:
    formation = Formation("failing").add_function("clean", str.strip).add_function("parse", broken)
    formation.connect("clean", "parse")
    with pytest.raises(FormationRuntimeError) as failed:
        formation.run(" x ", store=tmp_path / "runs.sqlite")
    (visit,) = visits(viewer, str(failed.value.run_id), "parse")
    assert (visit["visit"], visit["status"], visit["input"], visit["attempts"]) == (1, "failed", "x", 1)
    assert "cannot read 'x'" in visit["error"] and visit["started"] and visit["finished"]
    assert "output" not in visit


def test_a_visit_that_failed_into_an_error_edge_is_listed_failed_without_an_output(
        viewer: TestClient, tmp_path: Path) -> None:
    formation = (Formation("routed").add_function("parse", broken).add_function("fallback", handled)
                 .connect("parse", "fallback", on_error=True))
    result = formation.run("x", store=tmp_path / "runs.sqlite")
    (visit,) = visits(viewer, result.run_id, "parse")
    assert (visit["status"], visit["attempts"], "output" in visit) == ("failed", 1, False)
    assert "cannot read 'x'" in visit["error"]


def test_a_run_whose_output_holds_a_lone_surrogate_is_served_escaped_not_as_a_500(
        viewer: TestClient, tmp_path: Path) -> None:
    """Found by the port of LangGraph's checkpoint savers' tests: the store journals text with a
    lone surrogate (a file name decoded with surrogateescape), but the viewer's JSON responses
    failed on it with a 500. It is now sent as a JSON escape, read back as the same text."""
    name = "file-\udcff.txt"
    run_id = Formation("f").add_function("a", lambda x: name).run(1, store=tmp_path / "runs.sqlite").run_id
    response = viewer.get(f"/ui/api/runs/{run_id}")
    assert response.status_code == 200
    assert b"\\udcff" in response.content
    assert [v["output"] for v in response.json()["visits"] if v["node"] == "a"] == [name]


def test_an_agent_node_that_failed_its_run_shows_no_journalled_failure_among_its_steps(
        viewer: TestClient, tmp_path: Path) -> None:
    """The record with which the run journals the visit that failed it (for ``RunStore.history``)
    is a progress value of the node: no model response, so not one of the agent's steps."""
    from wingman_actors import Agent
    from wingman_actors.errors import AgentError, ErrorKind
    from wingman_actors.testing import ScriptedProvider

    agent = Agent("writer", provider=ScriptedProvider([AgentError("model down", kind=ErrorKind.AGENT)]))
    formation = Formation("writing").add_function("clean", str.strip).add_agent("writer", agent)
    with pytest.raises(FormationRuntimeError) as failed:
        formation.connect("clean", "writer").run(" x ", store=tmp_path / "runs.sqlite")
    doc = viewer.get(f"/ui/api/runs/{failed.value.run_id}").json()
    assert [v["status"] for v in doc["visits"] if v["node"] == "writer"] == ["failed"]
    assert doc["steps"].get("writer", []) == []
