"""Time travel over HTTP: ``GET /runs/{id}/history`` lists a formation run's visits in order;
``POST /runs/{id}/fork`` starts a new run from the journal before one visit, with its output
replaced or its input changed, leaving the original unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import functions_fixture as fx
from tests.server.harness import FUNCTIONS_MODULE, running
from wingman_actors.server import ServerConfig

PIPELINE = {"name": "pipeline", "nodes": [{"name": "counted", "kind": "function", "function": "counted"},
                                          {"name": "shout", "kind": "function", "function": "shout"}],
            "edges": [{"from": "counted", "to": "shout"}]}


def _run(client: httpx.Client, declaration: dict[str, Any] = PIPELINE, input: Any = "hi") -> dict[str, Any]:
    fid = client.post("/formations", json=declaration).json()["id"]
    run = client.post(f"/formations/{fid}/run", json={"input": input})
    assert run.status_code == 200, run.text
    return dict(run.json())


def test_history_lists_a_runs_visits_in_the_order_they_finished(client: httpx.Client) -> None:
    run = _run(client)
    visits = client.get(f"/runs/{run['id']}/history")
    assert visits.status_code == 200, visits.text
    assert [(v["node"], v["visit"], v["status"], v["output"]) for v in visits.json()] == [
        ("counted", 1, "succeeded", "hi"), ("shout", 1, "succeeded", "HI")]
    first, second = visits.json()
    assert first["started"] <= first["finished"] <= second["finished"]
    assert first["finished"].endswith("Z")


def test_history_shows_a_suspended_visit_with_its_interrupt_payload(client: httpx.Client) -> None:
    asking = {"name": "asking", "nodes": [{"name": "ask", "kind": "function", "function": "ask"}]}
    run = _run(client, asking, "the post")
    assert run["status"] == "suspended"
    (visit,) = client.get(f"/runs/{run['id']}/history").json()
    assert {k: visit[k] for k in ("node", "visit", "status", "output")} == {
        "node": "ask", "visit": 1, "status": "suspended", "output": {"question": "publish 'the post'?"}}
    assert visit["finished"] is not None


def test_history_of_a_failed_run_ends_with_the_visit_that_failed_it_and_its_error(client: httpx.Client) -> None:
    failing = {"name": "failing", "nodes": [{"name": "counted", "kind": "function", "function": "counted"},
                                            {"name": "explode", "kind": "function", "function": "explode"}],
               "edges": [{"from": "counted", "to": "explode"}]}
    fid = client.post("/formations", json=failing).json()["id"]
    answer = client.post(f"/formations/{fid}/run", json={"input": "hi"})
    assert answer.status_code == 500, answer.text
    visits = client.get(f"/runs/{answer.json()['run_id']}/history").json()
    assert [(v["node"], v["status"], v["error"], v["attempts"]) for v in visits] == [
        ("counted", "succeeded", None, None), ("explode", "failed", "ValueError: cannot handle 'hi'", 1)]
    assert visits[1]["output"] == "failed after 1 attempt(s), which failed the run: ValueError: cannot handle 'hi'"
    assert visits[1]["finished"].endswith("Z")


def test_a_fork_with_a_new_output_continues_from_that_visit_and_leaves_the_original(client: httpx.Client) -> None:
    run = _run(client)
    before = client.get(f"/runs/{run['id']}/history").json()
    calls = fx.CALLS["counted"]
    forked = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "output": "custom"})
    assert forked.status_code == 201, forked.text
    new = forked.json()
    assert forked.headers["Location"] == f"/runs/{new['id']}"
    assert (new["status"], new["output"], new["formation_id"]) == ("succeeded", "custom", run["formation_id"])
    assert new["id"] != run["id"] and new["input"] == "hi"
    assert fx.CALLS["counted"] == calls  # journalled before the fork point: not run again
    assert client.get(f"/runs/{run['id']}").json()["output"] == "HI"
    assert client.get(f"/runs/{run['id']}/history").json() == before
    assert [(v["node"], v["output"]) for v in client.get(f"/runs/{new['id']}/history").json()] == [
        ("counted", "hi"), ("shout", "custom")]


def test_a_fork_at_a_source_with_a_new_input_runs_it_again_with_that_input(client: httpx.Client) -> None:
    run = _run(client)
    calls = fx.CALLS["counted"]
    new = client.post(f"/runs/{run['id']}/fork", json={"at": ["counted", 1], "input": "bye"}).json()
    assert (new["status"], new["input"], new["output"]) == ("succeeded", "bye", "BYE")
    assert fx.CALLS["counted"] == calls + 1


def test_a_fork_with_a_new_input_for_a_node_fed_by_one_predecessor_reruns_it(client: httpx.Client) -> None:
    run = _run(client)
    calls = fx.CALLS["counted"]
    new = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "input": "other"}).json()
    assert (new["status"], new["input"], new["output"]) == ("succeeded", "hi", "OTHER")
    assert fx.CALLS["counted"] == calls


FAN = {"name": "fan", "nodes": [{"name": n, "kind": "function", "function": f} for n, f in (
    ("counted", "counted"), ("shout", "shout"), ("clean", "clean"), ("joined", "joined"))],
       "edges": [{"from": "counted", "to": "shout"}, {"from": "counted", "to": "clean"},
                 {"from": "shout", "to": "joined"}, {"from": "clean", "to": "joined"}]}


def test_a_fork_at_a_join_with_a_new_input_runs_it_once_with_that_input(client: httpx.Client) -> None:
    run = _run(client, FAN, " hi ")
    assert run["output"] == " HI |hi"
    counted, joined = fx.CALLS["counted"], fx.CALLS["joined"]
    forked = client.post(f"/runs/{run['id']}/fork", json={"at": "joined", "input": {"shout": "A", "clean": "b"}})
    assert forked.status_code == 201, forked.text
    assert (forked.json()["status"], forked.json()["output"]) == ("succeeded", "A|b")
    assert (fx.CALLS["counted"], fx.CALLS["joined"]) == (counted, joined + 1)
    assert client.get(f"/runs/{run['id']}").json()["output"] == " HI |hi"


def test_a_fork_at_a_node_whose_predecessor_feeds_another_runs_it_with_the_new_input(client: httpx.Client) -> None:
    run = _run(client, FAN, " hi ")
    counted = fx.CALLS["counted"]
    new = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "input": "yo"}).json()
    assert (new["status"], new["input"], new["output"]) == ("succeeded", " hi ", "YO|hi")
    assert fx.CALLS["counted"] == counted


def test_a_fork_with_an_input_that_does_not_fit_the_node_is_a_400_on_input(client: httpx.Client) -> None:
    run = _run(client, FAN, " hi ")
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": "joined", "input": {"shout": "A", "clean": 2}})
    assert (answer.status_code, answer.json()["fields"]) == (400, ["input"])
    assert answer.json()["error"].startswith("input: input= for node 'joined' does not fit its parameter 'clean' of "
                                             "type str")
    assert len(client.get("/runs", params={"formation_id": run["formation_id"]}).json()) == 1


def test_a_fork_with_an_output_that_does_not_fit_the_nodes_output_type_is_a_400_on_output(
        client: httpx.Client) -> None:
    run = _run(client)
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": "counted", "output": 5})
    assert (answer.status_code, answer.json()["fields"], answer.json()["run_id"]) == (400, ["output"], run["id"])
    assert answer.json()["error"].startswith("output: output= for node 'counted' does not fit its output type str")
    assert len(client.get("/runs", params={"formation_id": run["formation_id"]}).json()) == 1


def test_a_null_output_is_an_output(client: httpx.Client) -> None:
    run = _run(client)  # (given, so checked as the visit's output: shout returns str, which null does not fit)
    new = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "output": None})
    assert (new.status_code, new.json()["fields"]) == (400, ["output"]), new.text
    assert new.json()["error"].startswith("output: output= for node 'shout' does not fit its output type str")


def test_a_fork_at_an_unknown_node_is_a_400_naming_the_nodes(client: httpx.Client) -> None:
    run = _run(client)
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": "nope", "output": 1})
    assert answer.status_code == 400
    assert answer.json()["fields"] == ["at"]
    assert answer.json()["error"] == ("at: formation 'pipeline' has no node 'nope' to fork at; its nodes are "
                                      "'counted', 'shout'")


def test_a_fork_at_a_visit_the_run_never_made_is_a_400_on_at(client: httpx.Client) -> None:
    run = _run(client)
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": ["shout", 2], "output": 1})
    assert (answer.status_code, answer.json()["fields"]) == (400, ["at"])
    assert answer.json()["error"].startswith(f"at: run '{run['id']}' never made visit 2 of node 'shout' (it made 1)")
    assert len(client.get("/runs", params={"formation_id": run["formation_id"]}).json()) == 1


@pytest.mark.parametrize("body", [{"at": "shout"}, {"at": "shout", "output": 1, "input": 2}])
def test_a_fork_needs_exactly_one_of_output_and_input(client: httpx.Client, body: dict[str, Any]) -> None:
    run = _run(client)
    answer = client.post(f"/runs/{run['id']}/fork", json=body)
    assert answer.status_code == 400
    assert "give exactly one of output (the visit's new output) or input" in answer.json()["error"]


@pytest.mark.parametrize("at", [["shout", 0], ["shout", True], ["shout"], 3])
def test_a_fork_point_that_is_not_a_node_or_a_visit_is_a_400(client: httpx.Client, at: Any) -> None:
    run = _run(client)
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": at, "output": 1})
    assert (answer.status_code, answer.json()["fields"]) == (400, ["at"])
    assert 'give a node name, or ["node", visit] with a visit number >= 1' in answer.json()["error"]


def test_a_fork_with_an_unknown_field_is_a_400(client: httpx.Client) -> None:
    answer = client.post("/runs/01NOPE/fork", json={"at": "shout", "output": 1, "outptu": 2})
    assert (answer.status_code, answer.json()["fields"]) == (400, ["outptu"])


def test_history_and_fork_of_an_unknown_run_are_404(client: httpx.Client) -> None:
    assert client.get("/runs/01NOPE/history").status_code == 404
    assert client.post("/runs/01NOPE/fork", json={"at": "a", "output": 1}).status_code == 404


def test_a_run_whose_formation_was_deleted_cannot_be_forked(client: httpx.Client) -> None:
    run = _run(client)
    client.delete(f"/formations/{run['formation_id']}")
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "output": 1})
    assert (answer.status_code, answer.json()["kind"]) == (409, "formation_deleted")
    assert client.get(f"/runs/{run['id']}/history").status_code == 200  # its journal is still readable


def test_a_run_whose_formation_changed_shape_cannot_be_forked(client: httpx.Client) -> None:
    run = _run(client)
    changed = {**PIPELINE, "nodes": [*PIPELINE["nodes"], {"name": "extra", "kind": "function", "function": "clean"}],
               "edges": [*PIPELINE["edges"], {"from": "shout", "to": "extra"}]}
    assert client.put(f"/formations/{run['formation_id']}", json=changed).status_code == 200
    answer = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "output": 1})
    assert (answer.status_code, answer.json()["kind"]) == (409, "mismatch")


def test_history_and_fork_work_on_a_postgresql_run_store(tmp_path: Path, postgres_url: str) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False, run_store=postgres_url)
    with running(config) as server, server.client() as client:
        run = _run(client)
        new = client.post(f"/runs/{run['id']}/fork", json={"at": "shout", "output": "pg"}).json()
        assert (new["status"], new["output"]) == ("succeeded", "pg")
        assert [v["output"] for v in client.get(f"/runs/{new['id']}/history").json()] == ["hi", "pg"]


def test_a_suspended_runs_record_shows_the_waiting_node_suspended_and_the_next_pending(client: httpx.Client) -> None:
    asking = {"name": "asking-then", "nodes": [{"name": "ask", "kind": "function", "function": "ask"},
                                               {"name": "shout", "kind": "function", "function": "shout"}],
              "edges": [{"from": "ask", "to": "shout"}]}
    run = _run(client, asking, "the post")
    assert run["status"] == "suspended"
    for record in (run, client.get(f"/runs/{run['id']}").json()):
        assert {name: node["status"] for name, node in record["nodes"].items()} == {"ask": "suspended", "shout": "pending"}
