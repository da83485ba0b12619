"""What a finished run's traces show is the same on each backend: a visit cut short by
the run's timeout, the tokens of a failed agent (or one that timed out), a map over a
formation's inner nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cuts import SPENT, calls_a_tool, look, wait_for_file, warm_up
from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.testing import ScriptedProvider


def test_a_visit_the_run_timeout_cut_shows_cancelled_with_its_time_on_each_backend(backend: str, tmp_path: Path) -> None:
    release = tmp_path / "release"

    def wait(x: int) -> int:
        wait_for_file(release)
        return x

    try:
        with pytest.raises(FormationRuntimeError) as caught:
            Formation("cut").add_function("wait", wait).run(1, backend=backend, timeout=1.5)
    finally:
        release.write_text("go")
    trace = caught.value.nodes["wait"]
    assert (trace.status, trace.visits, trace.attempts) == ("cancelled", 1, 1)
    assert trace.started_at is not None and trace.duration_s > 0


def test_a_failed_agent_node_counts_its_tokens_on_each_backend(backend: str) -> None:
    calls = calls_a_tool()
    refused = AgentError("the provider refused the second call", kind=ErrorKind.INVALID)
    agent = Agent("researcher", provider=ScriptedProvider([calls, refused]), tools=[look])
    result = Formation("f").add_agent("research", agent, on_error="skip").run("x", backend=backend)
    assert (result.nodes["research"].usage, result.usage) == (SPENT, SPENT)


class ProvidersOwnError(Exception):
    """An exception type the library does not own."""


def test_an_agent_node_failing_with_a_users_exception_counts_its_tokens_on_each_backend(backend: str) -> None:
    agent = Agent("researcher", provider=ScriptedProvider([calls_a_tool(), ProvidersOwnError("boom")]), tools=[look])
    result = Formation("f").add_agent("research", agent, on_error="skip").run("x", backend=backend)
    assert (result.nodes["research"].usage, result.usage) == (SPENT, SPENT)
    assert result.nodes["research"].error == "ProvidersOwnError: boom"


def square(x: int) -> int:
    return x * x


def test_a_map_over_a_formation_keeps_its_inner_traces_on_each_backend(backend: str) -> None:
    inner = Formation("per-item").add_function("square", square).add_function("show", str).connect("square", "show")
    result = Formation("outer").add_map("each", formation=inner, max_workers=2).run([1, 2, 3], backend=backend)
    assert result.nodes["each/show"].outputs == ["1", "4", "9"]
    assert result.nodes["each/square"].visits == 3


def test_an_agent_node_that_timed_out_counts_the_tokens_it_spent_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    release = tmp_path / "release"

    def reply(request: InferenceRequest) -> InferenceResponse:
        if request.messages[0].text == "warm up":
            return InferenceResponse.of_text("ready")
        if len(request.messages) == 1:
            return calls_a_tool()
        wait_for_file(release)  # hangs past the node's timeout
        return InferenceResponse.of_text("late", usage=SPENT)

    agent = Agent("researcher", provider=ScriptedProvider([reply], cycle=True), tools=[look])
    formation = Formation("f").add_agent("research", agent, timeout=2.0, on_error="skip")
    with formation.start(backend=backend) as running:
        warm_up(running.submit, "warm up", "ready")
        try:
            result = running.submit("x").result(60)
        finally:
            release.write_text("go")
    assert result.nodes["research"].status == "skipped"
    assert (result.nodes["research"].usage, result.usage) == (SPENT, SPENT)


def test_a_fleet_node_that_timed_out_counts_the_tokens_of_its_finished_and_cut_items_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    release = tmp_path / "release"

    def reply(request: InferenceRequest) -> InferenceResponse:
        text = request.messages[0].text
        if "warm up" in text:
            return InferenceResponse.of_text("ready")
        if "quick" in text:
            return InferenceResponse.of_text("done", usage=SPENT)
        if len(request.messages) == 1:
            return calls_a_tool()
        wait_for_file(release)  # hangs past the node's timeout
        return InferenceResponse.of_text("late", usage=SPENT)

    agent = Agent("worker", provider=ScriptedProvider([reply], cycle=True), tools=[look])
    formation = Formation("f").add_fleet("many", agent, timeout=2.0, on_error="skip")
    with formation.start(backend=backend) as running:
        warm_up(running.submit, ["warm up"], ["ready"])
        try:
            result = running.submit(["quick", "slow"]).result(60)
        finally:
            release.write_text("go")
    assert result.nodes["many"].status == "skipped"
    assert (result.nodes["many"].usage, result.usage) == (SPENT + SPENT, SPENT + SPENT)
