"""The launcher sees tokens and fleet items while nodes run, through the run's provider."""

from __future__ import annotations

import pickle
import sys

import pytest

from wingman_actors import Agent, Formation
from wingman_actors._launcher.metering import LiveUsage, MeteredProvider, NodeMeter
from wingman_actors._launcher.progress import RunBoard
from wingman_actors.cli import main
from wingman_actors.core import InferenceRequest, InferenceResponse, Message
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.testing import ScriptedProvider


class Echo:
    """A picklable provider (a scripted one holds a lock)."""

    id = "echo"
    model = "echo-1"

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse.model_validate({"content": [{"type": "text", "text": "hi"}]})


def request(instructions: str, turns: int = 1) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(f"m{i}") for i in range(turns)], instructions=instructions)


def test_every_response_is_reported_blocking_or_streamed() -> None:
    seen: list[tuple[str, int]] = []
    provider = MeteredProvider(ScriptedProvider(["one", "two"]), lambda q, r: seen.append((r.text, q.max_tokens or 0)))
    assert provider.run_inference(request("x")).text == "one"
    stream = provider.stream_inference(request("x"))
    assert "".join(e.text or "" for e in stream) == "two"
    assert stream.response.text == "two"
    assert [text for text, _ in seen] == ["one", "two"]
    assert (provider.id, provider.model) == ("scripted", "scripted")


def test_a_pickled_metered_provider_is_the_inner_provider() -> None:
    copy = pickle.loads(pickle.dumps(MeteredProvider(Echo(), print)))  # type: ignore[arg-type]
    assert isinstance(copy, Echo)


def test_the_meter_names_the_node_by_its_agent_s_instructions() -> None:
    formation = (
        Formation("f")
        .add_agent("short", Agent("a", instructions="Ask."))
        .add_fleet("long", Agent("b", instructions="Ask. Then answer."))
        .add_agent("twin1", Agent("c", instructions="Same."))
        .add_agent("twin2", Agent("d", instructions="Same."))
    )
    meter = NodeMeter(formation)
    assert meter.node_of(request("Ask. Then answer.\n\nschema")) == "long"
    assert meter.node_of(request("Ask.\n\nmore")) == "short"
    assert meter.node_of(request("Same.")) is None  # two nodes share it: not counted live
    assert meter.node_of(request("Other.")) is None


def _started(node: str) -> FormationEvent:
    return FormationEvent(FormationEventType.NODE_STARTED, "r", node, 1.0, {"attempt": 1})


def test_the_board_counts_live_tokens_and_fleet_items_until_the_node_finishes() -> None:
    formation = Formation("f").add_fleet("team", Agent("worker", instructions="Work."))
    board = RunBoard([("team", "fleet")])
    usage = LiveUsage()
    usage.attach(formation, board)
    reply = InferenceResponse.model_validate({"content": [{"type": "text", "text": "x"}],
                                             "usage": {"input_tokens": 7, "output_tokens": 3}})
    usage(request("Work."), reply)  # before its node_started event arrives: counted
    board.apply(_started("team"))
    usage(request("Work."), reply)
    usage(request("Work.", turns=3), reply)  # a later turn of a session: tokens, not an item
    row = board.rows["team"]
    assert (row.shown_tokens(), row.items, row.shown_note()) == (30, 2, "2 items started")
    board.apply(FormationEvent(FormationEventType.NODE_FINISHED, "r", "team", 2.0,
                               {"attempt": 1, "duration_s": 1.0, "usage": reply.usage}))
    assert (row.shown_tokens(), row.shown_note()) == (10, "2 items done")  # the final usage, not both
    usage(request("Work."), reply)  # a finished node takes no more
    assert (row.shown_tokens(), row.items) == (10, 2)


def test_a_terminal_run_shows_each_fleet_item(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["run", "research", "--param", "max_sections=3", "--sample-latency", "0"]) == 0
    assert "3 items done" in capsys.readouterr().err
