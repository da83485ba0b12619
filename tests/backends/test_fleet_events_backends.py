"""A fleet node's items stream their agents' events on each backend, as an agent node's
do: on Ray, from the node's actor process back to the driver's listeners, each with the
item's index."""

from __future__ import annotations

from wingman_actors import Agent, Formation, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Role
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.testing import ScriptedProvider

E = FormationEventType


@tool
def look(topic: str) -> str:
    """Look a topic up."""
    return f"notes on {topic}"


def _reply(request: InferenceRequest) -> InferenceResponse | str:
    # module level and stateless: shipped to the Ray actor's process by value
    item = request.messages[0].text
    last = request.messages[-1]
    if last.role is Role.USER and last.content[0].type == "tool_result":
        return f"answer about {item}"
    return InferenceResponse.of_tool_calls([(f"call-{item}", "look", {"topic": item})])


def test_a_fleet_items_agent_events_reach_the_listeners_tagged_with_the_item_on_each_backend(backend: str) -> None:
    agent = Agent("researcher", provider=ScriptedProvider([_reply], cycle=True, stream_chunk=4), tools=[look])
    events: list[FormationEvent] = []
    items = ["a", "b", "c"]
    result = Formation("research").add_fleet("research", agent).run(items, backend=backend, on_event=events.append)

    assert result.output == [f"answer about {t}" for t in items]
    for i, topic in enumerate(items):
        mine = [e for e in events if e.type.value.startswith("agent_") and e.data["item"] == i]
        assert [e.type for e in mine[:2]] == [E.AGENT_TOOL_CALL, E.AGENT_TOOL_RESULT]
        assert (mine[0].data["id"], mine[0].data["input"]) == (f"call-{topic}", {"topic": topic})
        assert (mine[1].data["id"], mine[1].data["output"]) == (f"call-{topic}", f"notes on {topic}")
        assert {e.type for e in mine[2:]} == {E.AGENT_TEXT}
        assert "".join(e.data["text"] for e in mine[2:]) == f"answer about {topic}"
        assert {(e.node, e.data["attempt"]) for e in mine} == {("research", 1)}
