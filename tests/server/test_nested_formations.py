"""Formations nested by id in the server's declarations: ``kind: "formation"`` and formation
maps (``kind: "map"`` with ``formation_id``), their problems, runs, streams and deletion."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema

from tests.server.harness import RunningServer, scripted_agent, sse_events
from wingman_actors.server import Store


def create(client: httpx.Client, body: dict[str, Any]) -> str:
    response = client.post("/formations", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def loud(client: httpx.Client) -> str:
    """A stored formation clean → shout (str → str)."""
    return create(client, {"name": "loud", "nodes": [
        {"name": "clean", "kind": "function", "function": "clean"},
        {"name": "shout", "kind": "function", "function": "shout"},
    ], "edges": [{"from": "clean", "to": "shout"}]})


def nesting(name: str, *nodes: dict[str, Any], edges: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"name": name, "nodes": list(nodes), "edges": edges or []}


def sub(formation_id: str, name: str = "sub", **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "formation", "formation_id": formation_id, **fields}


def test_a_formation_node_runs_a_stored_formation_and_traces_its_nodes(client: httpx.Client) -> None:
    body = nesting("outer", sub(loud(client)), {"name": "split", "kind": "function", "function": "words"},
                   edges=[{"from": "sub", "to": "split"}])
    fid = create(client, body)

    run = client.post(f"/formations/{fid}/run", json={"input": "  a bb  "})

    assert run.status_code == 200, run.text
    assert run.json()["output"] == ["A", "BB"]
    traces = run.json()["nodes"]
    assert {"sub", "sub/clean", "sub/shout", "split"} <= set(traces)
    assert traces["sub/shout"]["status"] == "succeeded"


def test_a_formation_node_is_stored_and_returned_with_its_formation_id(client: httpx.Client) -> None:
    inner = loud(client)
    response = client.post("/formations", json=nesting("outer", sub(inner, retries=1)))

    assert response.status_code == 201, response.text
    assert response.json()["nodes"] == [{"name": "sub", "kind": "formation", "formation_id": inner, "retries": 1}]


def test_a_map_node_runs_a_stored_formation_once_per_item(client: httpx.Client) -> None:
    body = nesting("each_loud", {"name": "split", "kind": "function", "function": "words"},
                   {"name": "each", "kind": "map", "formation_id": loud(client), "max_workers": 4},
                   edges=[{"from": "split", "to": "each"}])
    fid = create(client, body)

    run = client.post(f"/formations/{fid}/run", json={"input": "a bb c"}).json()

    assert run["status"] == "succeeded" and run["output"] == ["A", "BB", "C"]


def test_a_formation_nested_two_levels_deep_runs(client: httpx.Client) -> None:
    middle = create(client, nesting("middle", sub(loud(client), "deep")))
    fid = create(client, nesting("outer", sub(middle)))

    run = client.post(f"/formations/{fid}/run", json={"input": " hi "}).json()

    assert run["output"] == "HI"
    assert run["nodes"]["sub/deep/shout"]["status"] == "succeeded"


def test_a_stream_names_inner_events_by_their_path(client: httpx.Client) -> None:
    inner = loud(client)
    fid = create(client, nesting("outer", sub(inner), {"name": "split", "kind": "function", "function": "words"},
                                 {"name": "each", "kind": "map", "formation_id": inner, "max_workers": 2},
                                 edges=[{"from": "sub", "to": "split"}, {"from": "split", "to": "each"}]))

    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": " a b "})

    started = {data["node"] for name, data in events if name == "node_started"}
    assert {"sub", "sub/clean", "sub/shout", "each", "each/0/shout", "each/1/shout"} <= started
    assert events[-2][1]["data"]["output"] == ["A", "B"]
    assert events[-1][1]["status"] == "succeeded"


def test_a_failed_inner_node_is_traced_in_the_run_record_by_its_path(client: httpx.Client) -> None:
    doomed = create(client, nesting("doomed", {"name": "boom", "kind": "function", "function": "explode"}))
    fid = create(client, nesting("outer", sub(doomed)))

    response = client.post(f"/formations/{fid}/run", json={"input": "x"})

    assert response.status_code == 500 and response.json()["node"] == "sub"
    record = client.get(f"/runs/{response.json()['run_id']}").json()
    assert record["nodes"]["sub"]["status"] == "failed"
    assert record["nodes"]["sub/boom"]["status"] == "failed"
    assert "cannot handle" in record["nodes"]["sub/boom"]["error"]


def test_an_unknown_formation_id_is_400_naming_the_node(client: httpx.Client) -> None:
    response = client.post("/formations", json=nesting("outer", {"name": "first", "kind": "function",
                                                                 "function": "clean"}, sub("no-such-formation")))

    assert response.status_code == 400
    assert response.json()["problems"] == [
        "nodes[1] ('sub'): no formation with id 'no-such-formation'; create it with POST /formations or fix the id "
        "(GET /formations lists them)"]


def test_node_kinds_that_take_no_formation_id_are_400_naming_the_fix(client: httpx.Client) -> None:
    inner = loud(client)
    agent = scripted_agent(client)
    body = nesting("mixed", {"name": "f", "kind": "function", "function": "clean", "formation_id": inner},
                   {"name": "a", "kind": "agent", "agent_id": agent, "formation_id": inner},
                   {"name": "s", "kind": "formation"},
                   {"name": "m", "kind": "map", "function": "shout", "formation_id": inner},
                   {"name": "n", "kind": "formation", "formation_id": inner, "function": "clean", "max_workers": 2})

    problems = client.post("/formations", json=body).json()["problems"]

    assert len(problems) == 6, problems
    assert problems[0].startswith("nodes[0] ('f'): formation_id only applies to formation and map nodes")
    assert problems[1].startswith("nodes[1] ('a'): formation_id only applies to formation and map nodes")
    assert problems[2].startswith("nodes[2] ('s'): a formation node needs \"formation_id\"")
    assert problems[3].startswith("nodes[3] ('m'): a map node takes \"function\" (called per item) or "
                                  "\"formation_id\"")
    assert problems[4] == "nodes[4] ('n'): \"function\" only applies to function and map nodes; remove it"
    assert problems[5].startswith("nodes[4] ('n'): max_workers only applies to fleet and map nodes")


def test_a_map_node_with_neither_function_nor_formation_id_names_both(client: httpx.Client) -> None:
    response = client.post("/formations", json=nesting("m", {"name": "each", "kind": "map"}))

    assert response.status_code == 400
    assert 'or "formation_id"' in response.json()["problems"][0]


def test_replacing_a_formation_to_nest_itself_is_400(client: httpx.Client) -> None:
    fid = loud(client)

    response = client.put(f"/formations/{fid}", json=nesting("loud", sub(fid, "me")))

    assert response.status_code == 400
    assert response.json()["problems"] == [
        f"nodes[0] ('me'): nesting formation 'loud' ({fid}) makes formation 'loud' ({fid}) contain itself "
        f"('loud' ({fid}) → 'loud' ({fid})); a formation cannot contain itself, directly or through other stored "
        "formations: nest a different one"]
    assert client.get(f"/formations/{fid}").json()["nodes"][0]["name"] == "clean"  # unchanged


def test_replacing_a_formation_to_nest_one_that_nests_it_is_400_naming_the_loop(client: httpx.Client) -> None:
    a = loud(client)
    b = create(client, nesting("b", sub(a, "uses_a")))

    response = client.put(f"/formations/{a}", json=nesting("a", {"name": "first", "kind": "function",
                                                                 "function": "clean"}, sub(b, "uses_b")))

    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem.startswith(f"nodes[1] ('uses_b'): nesting formation 'b' ({b}) makes formation 'a' ({a}) "
                              f"contain itself ('a' ({a}) → 'b' ({b}) → 'a' ({a}))")


def test_a_loop_already_stored_is_400_when_creating_and_when_running(
    client: httpx.Client, server: RunningServer
) -> None:
    a = loud(client)
    b = create(client, nesting("b", sub(a, "uses_a")))
    store = Store(server.config.db_path)  # as a second server sharing the file could have written it
    try:
        store.replace_formation(a, "a", [{"name": "uses_b", "kind": "formation", "formation_id": b}], [])
    finally:
        store.close()

    created = client.post("/formations", json=nesting("c", sub(a, "uses_a")))
    ran = client.post(f"/formations/{a}/run", json={"input": "x"})

    assert created.status_code == 400
    assert created.json()["problems"][0].startswith(
        f"nodes[0] ('uses_a'): formation 'a' ({a}) contains itself ('a' ({a}) → 'b' ({b}) → 'a' ({a}))")
    assert ran.status_code == 400
    assert "contain itself" in ran.json()["problems"][0]


def test_types_that_do_not_agree_across_the_boundary_are_400(client: httpx.Client) -> None:
    body = nesting("mismatch", {"name": "split", "kind": "function", "function": "words"}, sub(loud(client)),
                   edges=[{"from": "split", "to": "sub"}])

    response = client.post("/formations", json=body)

    assert response.status_code == 400
    assert any("'split'" in p and "'sub'" in p and "expects str" in p for p in response.json()["problems"])


def test_problems_of_a_nested_formation_are_named_after_the_node_nesting_it(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    asking = create(client, nesting("asking", {"name": "ask", "kind": "agent", "agent_id": agent}))
    assert client.delete(f"/agents/{agent}").status_code == 200

    created = client.post("/formations", json=nesting("outer", sub(asking)))
    assert created.status_code == 400
    assert created.json()["problems"] == [
        f"nodes[0] ('sub'): formation 'asking' ({asking}): nodes[0] ('ask'): no agent with id {agent!r}; create it "
        "with POST /agents or fix the id"]


def test_running_a_formation_whose_nested_agent_was_deleted_is_400_naming_that_formation(
    client: httpx.Client
) -> None:
    agent = scripted_agent(client)
    asking = create(client, nesting("asking", {"name": "ask", "kind": "agent", "agent_id": agent}))
    fid = create(client, nesting("outer", sub(asking)))
    assert client.delete(f"/agents/{agent}").status_code == 200

    response = client.post(f"/formations/{fid}/run", json={"input": "x"})

    assert response.status_code == 400
    assert f"agent {agent!r} (named by formation 'asking') no longer exists" in response.json()["error"]


def test_a_run_uses_the_nested_formations_current_declaration(client: httpx.Client) -> None:
    inner = loud(client)
    fid = create(client, nesting("outer", sub(inner)))
    replaced = client.put(f"/formations/{inner}", json=nesting("quiet", {"name": "clean", "kind": "function",
                                                                         "function": "clean"}))
    assert replaced.status_code == 200, replaced.text

    assert client.post(f"/formations/{fid}/run", json={"input": " hi "}).json()["output"] == "hi"


def test_deleting_a_nested_formation_is_409_naming_who_nests_it(client: httpx.Client) -> None:
    inner = loud(client)
    outer = create(client, nesting("outer", sub(inner)))
    mapper = create(client, nesting("mapper", {"name": "each", "kind": "map", "formation_id": inner}))

    response = client.delete(f"/formations/{inner}")

    assert response.status_code == 409
    body = response.json()
    assert (body["kind"], sorted(body["used_by"])) == ("in_use", sorted([outer, mapper]))
    assert f"'outer' ({outer})" in body["error"] and f"'mapper' ({mapper})" in body["error"]
    assert client.get(f"/formations/{inner}").status_code == 200


def test_a_nested_formation_can_be_deleted_once_nothing_nests_it(client: httpx.Client) -> None:
    inner = loud(client)
    outer = create(client, nesting("outer", sub(inner)))

    assert client.delete(f"/formations/{outer}").status_code == 200
    assert client.delete(f"/formations/{inner}").json() == {"status": "deleted"}


def test_the_openapi_document_describes_nested_formations_and_the_delete_conflict(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    schema = {"$ref": "#/components/schemas/FormationDecl", "components": doc["components"]}
    declaration = nesting("outer", sub("01J"), {"name": "each", "kind": "map", "formation_id": "01J", "max_workers": 4})

    jsonschema.Draft202012Validator(schema).validate(declaration)
    assert "409" in doc["paths"]["/formations/{id}"]["delete"]["responses"]
    assert "used_by" in doc["components"]["schemas"]["ErrorOut"]["properties"]


def test_an_interrupt_inside_a_nested_formation_suspends_the_run_and_resume_answers_it(
    client: httpx.Client
) -> None:
    asking = create(client, nesting("asking", {"name": "ask", "kind": "function", "function": "ask"}))
    fid = create(client, nesting("outer", sub(asking), {"name": "shout", "kind": "function", "function": "shout"},
                                 edges=[{"from": "sub", "to": "shout"}]))

    suspended = client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()
    assert suspended["status"] == "suspended", suspended
    assert suspended["interrupt"] == {"node": "sub/ask", "payload": {"question": "publish 'draft'?"}}
    assert suspended["nodes"]["sub/ask"]["status"] != "pending"
    resumed = client.post(f"/runs/{suspended['id']}/resume", json={"answer": "yes"})

    assert resumed.status_code == 200, resumed.text
    assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "DRAFT: YES")


def test_replacing_a_nested_formation_so_types_no_longer_agree_is_409_naming_who_nests_it(
    client: httpx.Client
) -> None:
    inner = loud(client)
    fid = create(client, nesting("outer", sub(inner), {"name": "split", "kind": "function", "function": "words"},
                                 edges=[{"from": "sub", "to": "split"}]))
    top = create(client, nesting("top", sub(fid, "whole")))

    replaced = client.put(f"/formations/{inner}", json=nesting("splitting", {"name": "split", "kind": "function",
                                                                             "function": "words"}))

    assert replaced.status_code == 409, replaced.text
    body = replaced.json()
    assert body["kind"] == "in_use" and sorted(body["used_by"]) == sorted([fid, top])
    assert any(f"'outer' ({fid})" in p and "'split'" in p for p in body["problems"]), body
    assert client.get(f"/formations/{inner}").json()["name"] == "loud"
    assert client.post(f"/formations/{fid}/run", json={"input": "a b"}).json()["output"] == ["A", "B"]


def test_a_nested_formation_replaced_behind_the_servers_back_fails_the_outer_run_with_400(
    server: RunningServer, client: httpx.Client
) -> None:
    inner = loud(client)
    fid = create(client, nesting("outer", sub(inner), {"name": "split", "kind": "function", "function": "words"},
                                 edges=[{"from": "sub", "to": "split"}]))
    store = Store(server.config.db_path)  # as a second server sharing the file would: not the checked route
    try:
        store.replace_formation(inner, "splitting", [{"name": "split", "kind": "function", "function": "words"}], [])
    finally:
        store.close()

    response = client.post(f"/formations/{fid}/run", json={"input": "a b"})

    assert response.status_code == 400
    assert any("'sub'" in p and "'split'" in p for p in response.json()["problems"]), response.json()


def test_resuming_after_a_nested_formation_changed_shape_is_409_mismatch(client: httpx.Client) -> None:
    asking = create(client, nesting("asking", {"name": "ask", "kind": "function", "function": "ask"}))
    fid = create(client, nesting("outer", sub(asking)))
    suspended = client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()
    other = nesting("asking", {"name": "other", "kind": "function", "function": "shout"})
    assert client.put(f"/formations/{asking}", json=other).status_code == 200

    response = client.post(f"/runs/{suspended['id']}/resume", json={"answer": "yes"})

    assert response.status_code == 409, response.text
    assert response.json()["kind"] == "mismatch"
    # the inner nodes by path: the resume is refused before the run is claimed
    assert "node 'sub/ask' (function) is missing" in response.json()["error"]
    assert client.get(f"/runs/{suspended['id']}").json()["status"] == "suspended"


def test_a_run_whose_resume_was_refused_for_a_nested_mismatch_resumes_once_the_formation_is_restored(
    client: httpx.Client,
) -> None:
    asking = nesting("asking", {"name": "ask", "kind": "function", "function": "ask"})
    inner = create(client, asking)
    suspended = client.post(f"/formations/{create(client, nesting('outer', sub(inner)))}/run",
                            json={"input": "draft"}).json()
    other = nesting("asking", {"name": "other", "kind": "function", "function": "shout"})
    assert client.put(f"/formations/{inner}", json=other).status_code == 200
    assert client.post(f"/runs/{suspended['id']}/resume", json={"answer": "yes"}).status_code == 409
    assert client.put(f"/formations/{inner}", json=asking).status_code == 200

    resumed = client.post(f"/runs/{suspended['id']}/resume", json={"answer": "yes"})

    assert resumed.status_code == 200, resumed.text
    assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "draft: yes")


def test_nesting_formations_more_than_32_levels_deep_is_400(client: httpx.Client) -> None:
    fid = create(client, nesting("level0", {"name": "a", "kind": "function", "function": "clean"}))
    for level in range(1, 33):
        fid = create(client, nesting(f"level{level}", sub(fid)))
    assert client.post(f"/formations/{fid}/run", json={"input": " deep "}).json()["output"] == "deep"

    response = client.post("/formations", json=nesting("level33", sub(fid)))

    assert response.status_code == 400
    assert response.json()["problems"] == [
        "nodes[0] ('sub'): nests formations 33 levels deep ('level32' → 'level31' → 'level30' → 'level29' → ...), "
        "more than the 32 the server allows; flatten some of them"]


def test_a_put_below_that_would_nest_formations_too_deep_is_409_and_such_a_store_is_400_when_run(
    client: httpx.Client, server: RunningServer
) -> None:
    bottom = fid = create(client, nesting("level0", {"name": "a", "kind": "function", "function": "clean"}))
    for level in range(1, 33):
        fid = create(client, nesting(f"level{level}", sub(fid)))
    extra = create(client, nesting("extra", {"name": "a", "kind": "function", "function": "clean"}))
    deeper = nesting("level0", sub(extra))
    refused = client.put(f"/formations/{bottom}", json=deeper)
    assert refused.status_code == 409, refused.text
    assert any("levels deep" in p for p in refused.json()["problems"]), refused.json()
    store = Store(server.config.db_path)  # as a second server sharing the file could have written it
    try:
        store.replace_formation(bottom, "level0", deeper["nodes"], [])
    finally:
        store.close()

    response = client.post(f"/formations/{fid}/run", json={"input": "x"})

    assert response.status_code == 400
    assert "nests formations 33 levels deep" in response.json()["problems"][0]
