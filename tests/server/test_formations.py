"""``/formations`` and ``/runs``: declarations, validation, blocking and streamed runs, records."""

from __future__ import annotations

from typing import Any

import httpx

from tests.server.harness import openai_agent, scripted_agent, sse_events
from tests.support.loopback import LoopbackServer, Reply


def pipeline(agent: str, **extra: Any) -> dict[str, Any]:
    """clean → summarize (agent), routed only when the text is long; short texts are shouted."""
    return {
        "name": "digest",
        "nodes": [
            {"name": "clean", "kind": "function", "function": "clean", "retries": 1},
            {"name": "summarize", "kind": "agent", "agent_id": agent, "prompt": "Summarize: {input}",
             "policies": {"timeout": 20}},
            {"name": "shout", "kind": "function", "function": "shout"},
        ],
        "edges": [
            {"from": "clean", "to": "summarize", "condition": "is_long"},
            {"from": "clean", "to": "shout", "condition": "is_short"},
        ],
        **extra,
    }


def create(client: httpx.Client, body: dict[str, Any]) -> str:
    response = client.post("/formations", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_create_stores_the_declaration_with_flat_policies(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    response = client.post("/formations", json=pipeline(agent))
    assert response.status_code == 201
    formation = response.json()
    assert formation["name"] == "digest"
    assert formation["nodes"][1] == {"name": "summarize", "kind": "agent", "agent_id": agent,
                                     "prompt": "Summarize: {input}", "timeout": 20.0}
    assert formation["edges"][0] == {"from": "clean", "to": "summarize", "condition": "is_long"}


def test_formation_is_listed_readable_replaceable_and_deletable(client: httpx.Client) -> None:
    fid = create(client, pipeline(scripted_agent(client)))
    assert fid in [f["id"] for f in client.get("/formations").json()]
    assert client.get(f"/formations/{fid}").json()["id"] == fid
    single = {"name": "solo", "nodes": [{"name": "clean", "kind": "function", "function": "clean"}]}
    replaced = client.put(f"/formations/{fid}", json=single).json()
    assert (replaced["name"], len(replaced["nodes"]), replaced["edges"]) == ("solo", 1, [])
    assert client.delete(f"/formations/{fid}").json() == {"status": "deleted"}
    assert client.get(f"/formations/{fid}").status_code == 404


def test_unknown_formation_is_404_on_every_route(client: httpx.Client) -> None:
    body = {"name": "x", "nodes": [{"name": "a", "kind": "function", "function": "clean"}]}
    for response in (client.get("/formations/nope"), client.put("/formations/nope", json=body),
                     client.delete("/formations/nope"), client.post("/formations/nope/run", json={}),
                     client.post("/formations/nope/run/stream", json={})):
        assert response.status_code == 404
        assert response.json() == {"error": "formation not found: nope"}


def test_invalid_declaration_lists_every_problem(client: httpx.Client) -> None:
    body = {"name": "broken", "nodes": [
        {"name": "a", "kind": "function", "function": "no_such_function"},
        {"name": "b", "kind": "agent", "agent_id": "no-such-agent"},
        {"name": "c", "kind": "agent"},
    ], "edges": [{"from": "a", "to": "ghost"}, {"from": "a", "to": "b", "condition": "no_such_predicate"}]}
    response = client.post("/formations", json=body)
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert len(problems) == 5
    assert any("no_such_function" in p and "clean" in p for p in problems)  # lists the registered ones
    assert any("no-such-agent" in p for p in problems)
    assert any("nodes[2]" in p and "agent_id" in p for p in problems)
    assert any("ghost" in p for p in problems)
    assert any("no_such_predicate" in p and "is_long" in p for p in problems)


def test_type_mismatch_found_by_the_formation_validator_is_400(client: httpx.Client) -> None:
    body = {"name": "mismatch", "nodes": [{"name": "split", "kind": "function", "function": "words"},
                                          {"name": "loud", "kind": "function", "function": "shout"}],
            "edges": [{"from": "split", "to": "loud"}]}
    response = client.post("/formations", json=body)
    assert response.status_code == 400
    assert any("split" in p and "loud" in p for p in response.json()["problems"])


def test_declaration_shape_errors_name_the_fields(client: httpx.Client) -> None:
    response = client.post("/formations", json={"name": "x", "nodes": [{"name": "a", "kind": "robot"}]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["nodes[0].kind"]


def test_run_records_and_returns_outputs_and_node_traces(client: httpx.Client) -> None:
    fid = create(client, pipeline(scripted_agent(client, "a fine summary")))
    response = client.post(f"/formations/{fid}/run", json={"input": "  one two three four five  "})
    assert response.status_code == 200
    run = response.json()
    assert run["status"] == "succeeded" and run["formation_id"] == fid
    assert run["outputs"] == {"summarize": "a fine summary"}
    assert run["nodes"]["clean"]["status"] == "succeeded"
    assert run["nodes"]["shout"]["status"] == "skipped"
    assert run["usage"]["total_tokens"] > 0
    assert client.get(f"/runs/{run['id']}").json() == run


def test_condition_routes_short_input_to_the_other_branch(client: httpx.Client) -> None:
    fid = create(client, pipeline(scripted_agent(client)))
    run = client.post(f"/formations/{fid}/run", json={"input": " hi there "}).json()
    assert run["outputs"] == {"shout": "HI THERE"}
    assert run["nodes"]["summarize"]["status"] == "skipped"


def test_fleet_node_runs_its_agent_once_per_item(client: httpx.Client) -> None:
    agent = scripted_agent(client, "seen")
    body = {"name": "fan", "nodes": [
        {"name": "split", "kind": "function", "function": "words"},
        {"name": "each", "kind": "fleet", "agent_id": agent, "max_workers": 2, "prompt": "Look at {input}"},
    ], "edges": [{"from": "split", "to": "each"}]}
    run = client.post(f"/formations/{create(client, body)}/run", json={"input": "a b c"}).json()
    assert run["output"] == ["seen", "seen", "seen"]


def test_failing_function_is_500_and_the_run_is_recorded_failed(client: httpx.Client) -> None:
    body = {"name": "doomed", "nodes": [{"name": "boom", "kind": "function", "function": "explode"}]}
    fid = create(client, body)
    response = client.post(f"/formations/{fid}/run", json={"input": "x"})
    assert response.status_code == 500
    error = response.json()
    assert error["kind"] == "runtime" and error["node"] == "boom"
    run = client.get(f"/runs/{error['run_id']}").json()
    assert run["status"] == "failed" and run["failed_node"] == "boom"
    assert "cannot handle" in run["error"]
    assert run["nodes"]["boom"]["status"] == "failed"


def test_provider_failure_in_an_agent_node_is_502_with_kind(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "upstream"}}, status=500)
    body = {"name": "remote", "nodes": [{"name": "ask", "kind": "agent", "agent_id": openai_agent(client, loopback.url)}]}
    response = client.post(f"/formations/{create(client, body)}/run", json={"input": "hi"})
    assert response.status_code == 502
    assert response.json()["kind"] == "agent"
    assert client.get(f"/runs/{response.json()['run_id']}").json()["error_kind"] == "agent"


def test_stream_sends_formation_events_then_done(client: httpx.Client) -> None:
    fid = create(client, pipeline(scripted_agent(client, "streamed summary")))
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "one two three four five"})
    names = [n for n, _ in events]
    assert names[0] == "run_started" and names[-2] == "run_finished" and names[-1] == "done"
    assert {"node_started", "node_finished", "node_skipped", "agent_text"} <= set(names)
    run_id = events[-1][1]["run_id"]
    assert all(d["run_id"] == run_id for _, d in events[:-1])
    assert events[-2][1]["data"]["outputs"] == {"summarize": "streamed summary"}
    assert events[-1][1] == {"run_id": run_id, "status": "succeeded"}
    assert client.get(f"/runs/{run_id}").json()["status"] == "succeeded"


def test_stream_of_a_failing_run_ends_with_run_failed(client: httpx.Client) -> None:
    fid = create(client, {"name": "doomed", "nodes": [{"name": "boom", "kind": "function", "function": "explode"}]})
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "x"})
    assert events[-2][0] == "run_failed" and events[-2][1]["data"]["kind"] == "runtime"
    assert events[-1][1]["status"] == "failed"


def test_runs_are_listed_newest_first_and_filtered_by_formation(client: httpx.Client) -> None:
    one = create(client, {"name": "one", "nodes": [{"name": "a", "kind": "function", "function": "clean"}]})
    two = create(client, {"name": "two", "nodes": [{"name": "a", "kind": "function", "function": "shout"}]})
    first = client.post(f"/formations/{one}/run", json={"input": "x"}).json()["id"]
    second = client.post(f"/formations/{two}/run", json={"input": "y"}).json()["id"]
    listed = [r["id"] for r in client.get("/runs").json()]
    assert listed.index(second) < listed.index(first)
    assert [r["id"] for r in client.get("/runs", params={"formation_id": one}).json()] == [first]


def test_unknown_run_is_404(client: httpx.Client) -> None:
    assert client.get("/runs/nope").json() == {"error": "run not found: nope"}


def test_run_timeout_is_504(client: httpx.Client) -> None:
    agent = scripted_agent(client, "late", options={"latency_s": 3})
    fid = create(client, {"name": "slow", "nodes": [{"name": "ask", "kind": "agent", "agent_id": agent}]})
    response = client.post(f"/formations/{fid}/run", json={"input": "x", "timeout": 0.3})
    assert response.status_code == 504
    assert response.json()["kind"] == "timeout"


RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"


def single(function: str = "clean") -> dict[str, Any]:
    return {"name": "single", "nodes": [{"name": "entry", "kind": "function", "function": function}]}


def test_input_that_does_not_fit_the_entry_node_is_400_naming_it(client: httpx.Client) -> None:
    fid = create(client, single())
    response = client.post(f"/formations/{fid}/run", json={"input": 42})
    assert response.status_code == 400
    body = response.json()
    assert (body["kind"], body["node"], body["fields"]) == ("input", "entry", ["input"])
    assert "entry node 'entry'" in body["error"]
    assert client.get(f"/runs/{body['run_id']}").json()["error_kind"] == "input"


def test_a_failed_run_has_one_id_in_every_message(client: httpx.Client) -> None:
    import re

    fid = create(client, single("explode"))
    response = client.post(f"/formations/{fid}/run", json={"input": "x"})
    body = response.json()
    record = client.get(f"/runs/{body['run_id']}").json()
    assert " in run " in body["error"]
    for text in (body["error"], record["error"]):
        assert set(re.findall(r"run ([\w-]+)", text)) == {body["run_id"]}, text
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "y"})
    run_id = events[-1][1]["run_id"]
    failed = next(data for name, data in events if name == "run_failed")
    assert set(re.findall(r"in run ([\w-]+)", failed["data"]["error"])) == {run_id}


def test_trace_and_event_times_are_rfc3339(client: httpx.Client) -> None:
    import re

    fid = create(client, single())
    run = client.post(f"/formations/{fid}/run", json={"input": " x "}).json()
    trace = run["nodes"]["entry"]
    assert re.match(RFC3339, trace["started_at"]) and re.match(RFC3339, trace["finished_at"])
    failed = client.post(f"/formations/{create(client, single('explode'))}/run", json={"input": "x"}).json()
    assert re.match(RFC3339, client.get(f"/runs/{failed['run_id']}").json()["nodes"]["entry"]["started_at"])
    for _, data in sse_events(client, f"/formations/{fid}/run/stream", {"input": "y"})[:-1]:
        assert re.match(RFC3339, data["timestamp"]), data


def test_function_nodes_of_one_run_share_a_blackboard_and_runs_do_not(client: httpx.Client) -> None:
    body = {"name": "board", "nodes": [{"name": "remember", "kind": "function", "function": "remember"},
                                       {"name": "recall", "kind": "function", "function": "recall"}],
            "edges": [{"from": "remember", "to": "recall"}]}
    fid = create(client, body)
    first = client.post(f"/formations/{fid}/run", json={"input": "one"})
    assert first.status_code == 200, first.text
    assert first.json()["output"] == "one / one"
    second = client.post(f"/formations/{fid}/run", json={"input": "two"}).json()
    assert second["output"] == "two / two"


def test_an_otherwise_edge_takes_what_no_condition_does(client: httpx.Client) -> None:
    body = {"name": "fallback", "nodes": [
        {"name": "clean", "kind": "function", "function": "clean"},
        {"name": "split", "kind": "function", "function": "words"},
        {"name": "shout", "kind": "function", "function": "shout"},
    ], "edges": [
        {"from": "clean", "to": "split", "condition": "is_long"},
        {"from": "clean", "to": "shout", "otherwise": True},
    ]}
    fid = create(client, body)
    assert client.get(f"/formations/{fid}").json()["edges"][1] == {"from": "clean", "to": "shout", "otherwise": True}
    run = client.post(f"/formations/{fid}/run", json={"input": " hi there "}).json()
    assert run["outputs"] == {"shout": "HI THERE"}
    assert run["nodes"]["split"]["status"] == "skipped"


def test_a_decision_matching_no_branch_fails_the_run(client: httpx.Client) -> None:
    body = {"name": "no_route", "nodes": [
        {"name": "clean", "kind": "function", "function": "clean"},
        {"name": "split", "kind": "function", "function": "words"},
    ], "edges": [{"from": "clean", "to": "split", "condition": "is_long"}]}
    response = client.post(f"/formations/{create(client, body)}/run", json={"input": "short"})
    assert response.status_code == 500
    assert response.json()["node"] == "clean" and "no otherwise edge" in response.json()["error"]


def test_join_any_and_bad_otherwise_edges_are_declared_and_checked(client: httpx.Client) -> None:
    body = {"name": "race", "join": "any", "nodes": [
        {"name": "a", "kind": "function", "function": "clean", "join": "any"},
    ]}
    assert client.post("/formations", json=body).status_code == 400  # join is a node field
    body = {"name": "race", "nodes": [
        {"name": "a", "kind": "function", "function": "clean"},
        {"name": "b", "kind": "function", "function": "shout"},
        {"name": "c", "kind": "function", "function": "clean"},
        {"name": "first", "kind": "function", "function": "words", "join": "sometimes"},
    ], "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "c"}, {"from": "b", "to": "first"},
                 {"from": "c", "to": "first"}]}
    assert "join" in client.post("/formations", json=body).text
    body["nodes"][3] = {"name": "first", "kind": "function", "function": "shout", "policies": {"join": "any"}}
    response = client.post("/formations", json=body)
    assert response.status_code == 400  # shout takes a str, a join gives a dict
    assert "expects str" in response.text
    body["edges"].append({"from": "b", "to": "c", "condition": "is_long", "otherwise": True})
    problems = client.post("/formations", json=body).json()["problems"]
    assert any("an otherwise edge takes no condition" in p for p in problems)
