"""The agent of the suspended-session tests, and a resume run in a process of its own.

``python -m tests.agents.session_worker STORE SESSION_ID ANSWER`` resumes the session with
``ANSWER`` and prints the result and how many model calls this process made, as JSON.
"""

from __future__ import annotations

import json
import sys

from wingman_actors import Agent, Session, ask_human
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

ASK = InferenceResponse.of_tool_calls([("q1", "ask_human", {"question": "Which city?"})])


def confirm(request: InferenceRequest) -> str:
    """The answer after ask_human: what the person said."""
    return "Booked for " + (request.messages[-1].tool_results_blocks[0].content or "")


def agent(provider: ScriptedProvider) -> Agent:
    return Agent("booker", provider=provider, tools=[ask_human])


def main(store_path: str, session_id: str, answer: str) -> None:
    provider = ScriptedProvider([confirm])  # the first model call (ASK) is replayed, never made here
    with RunStore(store_path) as store:
        result = Session(agent(provider)).resume(session_id, store=store, answer=answer)
    print(json.dumps({"status": result.status, "response": result.response, "calls": provider.calls}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
