"""Sample replies per agent: a dict of replies by agent name in a formation module."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from wingman_actors._launcher.errors import UsageError
from wingman_actors._launcher.samples import SampleReplies
from wingman_actors.cli import main

PAIR = """
    from wingman_actors import Agent, Formation

    SAMPLE_REPLIES = {"writer": ["draft one", "draft two"], "critic": ["too long"]}
    DEFAULT_INPUT = "a poem"

    def build(provider=None):
        writer = Agent("writer", instructions="Write.", provider=provider)
        critic = Agent("critic", instructions="Write. Then judge.", provider=provider)
        return Formation("pair").add_agent("write", writer).add_agent("judge", critic).connect("write", "judge")
"""


def test_each_agent_answers_from_its_own_replies(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path],
) -> None:
    assert main(["run", str(formation_file("pair", PAIR)), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sample_replies"] is True
    assert doc["nodes"]["write"]["status"] == "succeeded"
    assert doc["output"] == "too long"  # the critic's, though its instructions start like the writer's


def test_an_agent_without_replies_is_named(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path],
) -> None:
    path = formation_file("lonely", PAIR.replace(', "critic": ["too long"]', ""))
    assert main(["run", str(path)]) == 2
    assert "SAMPLE_REPLIES has no replies for agent(s) 'critic'; it has 'writer'" in capsys.readouterr().err


def test_replies_must_be_lists() -> None:
    with pytest.raises(UsageError, match=r"SAMPLE_REPLIES\['writer'\] must be a list of replies"):
        SampleReplies({"writer": "just one"})


def test_latency_reaches_every_agent_s_replies() -> None:
    replies = SampleReplies({"a": ["x"], "b": ["y"]})
    replies.latency_s = 0.25
    assert replies.latency_s == 0.25
    assert {p.latency_s for p in replies._by_agent.values()} == {0.25}
