"""Agents that cooperate: an orchestrator delegates to two specialists, writes their
findings to a shared blackboard, and a later step reads them.

* ``AgentRegistry`` holds the specialists; ``Agent(..., delegates=registry)`` gives the
  orchestrator the tools ``list_agents`` and ``delegate`` (tasks run concurrently, each in a
  fresh session; results come back in task order).
* ``Blackboard`` is the shared state; ``board.tools("team")`` lets the orchestrator write
  to it (``team_state_set``); Python code reads it with ``get`` or ``watch``.
* The result is a tree: each delegated run hangs under the ``delegate`` call, and the
  children's usage is part of the orchestrator's.

Part 1 runs the orchestrator in a session and prints the tree; part 2 runs the same team
as a formation node followed by a function node that reads the blackboard: the run shares
its board (``formation.run(..., blackboard=board)``) with the lead, whose
``blackboard_tools("team")`` write to it, and with the function, which takes it as its
``blackboard`` parameter. All models are ``ScriptedProvider``s: offline and deterministic.

Run it with::

    python examples/cooperating_agents.py
"""

from __future__ import annotations

import json

from wingman_actors import Agent, Formation, Session
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.orchestration import AgentRegistry, Blackboard, blackboard_tools
from wingman_actors.testing import ScriptedProvider


def lead_model(request: InferenceRequest) -> str | InferenceResponse:
    """The orchestrator's scripted model: delegate, then record the findings, then answer."""
    last = request.messages[-1]
    results = last.tool_results_blocks
    if not results:  # the user's topic: hand out two tasks at once
        topic = last.text
        return InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": [
            {"agent": "market", "task": f"Size the market for {topic}.", "context": "One sentence."},
            {"agent": "risk", "task": f"Name the main risk of {topic}."},
        ]})])
    answer = results[0].content or ""
    if answer.startswith("["):  # the delegate tool's JSON array, in task order
        findings = {item["agent"]: item.get("result", item.get("error")) for item in json.loads(answer)}
        return InferenceResponse.of_tool_calls([("s1", "team_state_set", {"key": "findings", "value": findings})])
    return "Both specialists reported; the findings are on the blackboard under 'findings'."


def market_model(request: InferenceRequest) -> str:
    topic = request.messages[-1].text.removeprefix("Size the market for ").rstrip(".")
    return f"About 40,000 buyers a year want {topic}."


def risk_model(request: InferenceRequest) -> str:
    topic = request.messages[-1].text.removeprefix("Name the main risk of ").rstrip(".")
    return f"{topic.capitalize()} depend on sunny weather."


def build_team(board: Blackboard | None = None) -> Agent:
    """The orchestrator, its two specialists, and the blackboard tools: on ``board``, or
    on the board of the run the agent serves (``blackboard_tools``) when there is none."""
    registry = AgentRegistry()
    registry.register(Agent("market", provider=ScriptedProvider([market_model], cycle=True)),
                      description="Sizes markets.")
    registry.register(Agent("risk", provider=ScriptedProvider([risk_model], cycle=True)),
                      description="Finds the biggest risk.")
    return Agent(
        "lead",
        instructions="Split the question between the specialists, then record what they found.",
        provider=ScriptedProvider([lead_model], cycle=True),
        delegates=registry,
        tools=board.tools("team") if board is not None else blackboard_tools("team"),
    )


def part_one() -> None:
    board = Blackboard()
    result = Session(build_team(board)).run("solar kettles")
    print("Part 1: one session")
    print(f"  lead: {result.response}")
    for child in result.walk():
        assert child.result is not None
        said = [f"{m.sender or 'user'}: {m.text}" for m in child.messages]
        print(f"  {'  ' * child.depth}└ {child.agent} (depth {child.depth}, {child.usage.total_tokens} tokens)")
        for line in said:
            print(f"  {'  ' * child.depth}    {line}")
    own = sum(t.usage.total_tokens for t in result.trace if t.kind == "model")
    print(f"  tokens: {result.usage.total_tokens} in all, {own} of them the lead's own")
    print(f"  blackboard: {board.to_dict()}")


def report(answer: str, blackboard: Blackboard) -> str:
    """The later step: read what the lead wrote to the run's board (there once it finished)."""
    findings = blackboard.watch("findings", timeout=1.0)
    return "\n".join(f"  {who}: {what}" for who, what in sorted(findings.items()))


def part_two() -> None:
    formation = Formation("review").add_agent("lead", build_team()).add_function("report", report)
    formation.connect("lead", "report")
    board = Blackboard()
    result = formation.run("solar kettles", blackboard=board)
    print("\nPart 2: a formation, lead → report")
    print(result.output)
    print(f"  lead node usage: {result.nodes['lead'].usage.total_tokens} tokens (delegates included)")
    print(f"  blackboard keys after the run: {board.keys()}")


if __name__ == "__main__":
    part_one()
    part_two()
