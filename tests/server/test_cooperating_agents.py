"""Agents that cooperate over HTTP: ``delegates`` (agent ids) and ``skills`` (folders under
the work root) on stored agents, and the delegation tree in message responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.server.harness import scripted_agent, sse_events


def _delegate(*tasks: tuple[str, str]) -> dict[str, Any]:
    """A scripted reply calling the delegate tool with (agent name, task) pairs."""
    return {
        "content": [{"type": "tool_use", "id": "d1", "name": "delegate",
                     "input": {"tasks": [{"agent": a, "task": t} for a, t in tasks]}}],
        "stop_reason": "tool_use",
    }


def _session(client: httpx.Client) -> str:
    return str(client.post("/sessions").json()["id"])


def _skill(root: Path, name: str) -> Path:
    folder = root / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: How to {name}.\n---\nStep one: {name}.\n")
    return folder


def test_an_agent_stores_its_delegates_skills_and_depth(client: httpx.Client, work_root: Path) -> None:
    helper = scripted_agent(client, "ok", name="helper", instructions="Helps with anything.")
    _skill(work_root, "haiku")
    response = client.post("/agents", json={"name": "lead", "delegates": [helper], "skills": ["skills/haiku"],
                                            "max_delegation_depth": 1})

    assert response.status_code == 201, response.text
    lead = response.json()
    assert (lead["delegates"], lead["skills"], lead["max_delegation_depth"]) == ([helper], ["skills/haiku"], 1)
    assert client.get(f"/agents/{lead['id']}").json() == lead
    bare = client.post("/agents", json={"name": "bare"}).json()
    assert (bare["delegates"], bare["skills"], bare["max_delegation_depth"]) == ([], [], 3)


def test_an_unknown_delegate_id_is_400_naming_the_field(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "lead", "delegates": ["01NOPE"]})

    assert response.status_code == 400
    assert response.json()["fields"] == ["delegates[0]"] and "01NOPE" in response.json()["error"]


def test_an_agent_cannot_delegate_to_itself(client: httpx.Client) -> None:
    lead = scripted_agent(client, name="lead")

    response = client.put(f"/agents/{lead}", json={"delegates": [lead]})

    assert response.status_code == 400 and response.json()["fields"] == ["delegates[0]"]
    assert "itself" in response.json()["error"]


def test_delegates_with_one_name_are_400(client: httpx.Client) -> None:
    one, two = scripted_agent(client, name="twin"), scripted_agent(client, name="twin")

    response = client.post("/agents", json={"name": "lead", "delegates": [one, two]})

    assert response.status_code == 400 and response.json()["fields"] == ["delegates[1]"]
    assert "distinct names" in response.json()["error"]


def test_a_skill_folder_outside_the_work_root_is_400(client: httpx.Client, tmp_path: Path) -> None:
    outside = _skill(tmp_path, "escape")

    response = client.post("/agents", json={"name": "x", "skills": ["skills/../..", str(outside)]})

    assert response.status_code == 400 and response.json()["fields"] == ["skills[0]"]
    assert "outside the server's work root" in response.json()["error"]


def test_a_skill_folder_without_skill_md_is_400(client: httpx.Client, work_root: Path) -> None:
    (work_root / "empty-skill").mkdir(exist_ok=True)

    response = client.post("/agents", json={"name": "x", "skills": ["empty-skill"]})

    assert response.status_code == 400 and response.json()["fields"] == ["skills"]
    assert "SKILL.md" in response.json()["error"]


def test_a_message_response_carries_the_delegation_tree(client: httpx.Client) -> None:
    leaf = scripted_agent(client, "leaf answer", name="leaf", instructions="Knows leaves.")
    mid = scripted_agent(client, _delegate(("leaf", "ask the leaf")), "mid answer", name="mid",
                         instructions="Asks the leaf.", delegates=[leaf], options={"cycle": False})
    lead = scripted_agent(client, _delegate(("mid", "ask mid")), "all done", name="lead", delegates=[mid],
                          options={"cycle": False})

    response = client.post(f"/sessions/{_session(client)}/message", json={"agent_id": lead, "message": "go"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["response"] == "all done"
    (child,) = body["delegations"]
    assert (child["agent"], child["task"], child["depth"], child["response"], child["error"]) == (
        "mid", "ask mid", 1, "mid answer", None)
    (grandchild,) = child["delegations"]
    assert (grandchild["agent"], grandchild["depth"], grandchild["response"]) == ("leaf", 2, "leaf answer")
    assert child["usage"]["total_tokens"] > grandchild["usage"]["total_tokens"] > 0
    assert body["usage"]["total_tokens"] > child["usage"]["total_tokens"]  # children's usage rolled up


def test_a_failed_delegation_shows_its_error(client: httpx.Client) -> None:
    broken = scripted_agent(client, name="broken", options={"replies": [], "cycle": False})
    lead = scripted_agent(client, _delegate(("broken", "try")), "it failed", name="lead", delegates=[broken],
                          options={"cycle": False})

    body = client.post(f"/sessions/{_session(client)}/message", json={"agent_id": lead, "message": "go"}).json()

    (child,) = body["delegations"]
    assert child["agent"] == "broken" and child["response"] is None and "ran out of replies" in child["error"]


def test_the_streamed_done_event_carries_the_delegation_tree(client: httpx.Client) -> None:
    helper = scripted_agent(client, "helped", name="helper", instructions="Helps.")
    lead = scripted_agent(client, _delegate(("helper", "help")), "thanks", name="lead", delegates=[helper],
                          options={"cycle": False})

    events = sse_events(client, f"/sessions/{_session(client)}/message/stream", {"agent_id": lead, "message": "go"})

    name, done = events[-1]
    assert name == "done" and [(c["agent"], c["response"]) for c in done["delegations"]] == [("helper", "helped")]


def test_a_delegate_deleted_after_the_fact_makes_the_message_400(client: httpx.Client) -> None:
    helper = scripted_agent(client, name="helper", instructions="Helps.")
    lead = scripted_agent(client, name="lead", delegates=[helper])
    client.delete(f"/agents/{helper}")

    response = client.post(f"/sessions/{_session(client)}/message", json={"agent_id": lead, "message": "go"})

    assert response.status_code == 400 and "no longer exists" in response.json()["error"]


def test_an_agent_loads_a_skill_from_its_folder(client: httpx.Client, work_root: Path) -> None:
    _skill(work_root, "sonnet")
    load = {"content": [{"type": "tool_use", "id": "l1", "name": "load_skill", "input": {"name": "sonnet"}}],
            "stop_reason": "tool_use"}
    agent = scripted_agent(client, load, "written", name="poet", skills=["skills/sonnet"], options={"cycle": False})

    body = client.post(f"/sessions/{_session(client)}/message", json={"agent_id": agent, "message": "a sonnet"}).json()

    assert body["response"] == "written"
    assert body["tool_calls"][0]["output"].endswith("Step one: sonnet.")
