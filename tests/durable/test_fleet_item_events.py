"""A resumed fleet visit streams agent events only for the items it runs: an item the
journal settled before the resume is not run again and reports nothing, as a journalled
agent node visit reports no agent events."""

from __future__ import annotations

from wingman_actors import Agent, Formation, interrupt, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Role
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


@tool
def approve(item: str) -> str:
    """Ask a person to approve an item."""
    return str(interrupt({"approve": item}))


def _reply(request: InferenceRequest) -> InferenceResponse | str:
    item = request.messages[0].text
    last = request.messages[-1]
    if last.role is Role.USER and last.content[0].type == "tool_result":
        return f"{item} approved: {last.content[0].content}"
    if item.startswith("ask"):
        return InferenceResponse.of_tool_calls([(f"call-{item}", "approve", {"item": item})])
    return f"done {item}"


def test_a_resumed_fleet_streams_agent_events_of_the_interrupted_item_only(store: RunStore) -> None:
    agent = Agent("reviewer", provider=ScriptedProvider([_reply], cycle=True, stream_chunk=4), tools=[approve])
    f = Formation("review").add_fleet("review", agent)
    first: list[FormationEvent] = []
    run_id = f.run(["a", "ask-b", "c"], store=store, on_event=first.append).run_id
    assert {e.data["item"] for e in first if e.type.value.startswith("agent_")} == {0, 1, 2}

    again: list[FormationEvent] = []
    resumed = f.resume(run_id, store=store, answer="yes", on_event=again.append)

    assert resumed.output == ["done a", "ask-b approved: yes", "done c"]
    streamed = [e for e in again if e.type.value.startswith("agent_")]
    assert {e.data["item"] for e in streamed} == {1}  # a and c came from the journal
    # the interrupted item's tool runs again (its model call is replayed, not streamed), then it answers
    assert [e.type.value for e in streamed][:2] == ["agent_tool_call", "agent_tool_result"]
    assert "".join(e.data["text"] for e in streamed if e.type.value == "agent_text") == "ask-b approved: yes"
