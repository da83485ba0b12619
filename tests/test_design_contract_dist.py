"""DESIGN.md's "Backends", "Beyond one machine" and "The agent layer, complete", checked as
a client would: through the public names only, spelled as DESIGN spells them. (Most
bullets are tested where their code lives; these are the ones no test exercised exactly
as written, and the bad inputs around them.)"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.providers.test_anthropic import MODEL as ANTHROPIC_MODEL
from tests.providers.test_anthropic import message_json
from tests.providers.test_openai import completion
from tests.support.loopback import LoopbackServer, Reply
from tests.support.postgres import postgres_server, postgres_url
from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.agents import Prepared, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message
from wingman_actors.errors import FormationSetupError, WingmanError
from wingman_actors.events import Event, EventBus
from wingman_actors.providers import new_provider
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

__all__ = ["postgres_server", "postgres_url"]  # fixtures of the PostgreSQL tests

ROOT = Path(__file__).resolve().parents[1]


def _where(x: int) -> tuple[int, int, str]:
    return x, os.getpid(), threading.current_thread().name


def _chain() -> Formation:
    return (Formation("chain").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2)
            .connect("a", "b"))


# --- Backends ------------------------------------------------------------------------------


def test_formation_start_runs_nodes_on_threads_of_this_process_by_default_as_backend_threads_does() -> None:
    f = Formation("where").add_function("where", _where)
    with f.start() as running:
        by_default = running.submit(1).result(timeout=10).output
    with f.start(backend="threads") as running:
        on_threads = running.submit(2).result(timeout=10).output
    by_run = f.run(3, backend="threads").output

    for (x, pid, thread), given in zip((by_default, on_threads, by_run), (1, 2, 3), strict=True):
        assert (x, pid) == (given, os.getpid())
        assert thread != threading.current_thread().name


@pytest.mark.parametrize("backend", ["rays", "Ray", "thread", ""])
def test_an_unknown_backend_is_a_setup_error_naming_the_backends_there_are(backend: str) -> None:
    with pytest.raises(FormationSetupError, match=rf"unknown backend '{backend}': available backends: 'ray', "
                                                  r"'threads'"):
        _chain().run(1, backend=backend)


@pytest.mark.parametrize("options", [["address", "auto"], "auto", 5])
def test_backend_options_that_are_not_a_mapping_are_refused_showing_one_that_is(options: Any) -> None:
    with pytest.raises(TypeError, match=r"backend_options must be a mapping \(e\.g\. \{'address': 'auto'\}"):
        _chain().start(backend="ray", backend_options=options)


@pytest.mark.parametrize(("options", "problem"), [
    ({"address": 5}, r"backend_options\['address'\] must be 'auto', 'host:port' or a 'ray://' address, got int 5"),
    ({"address": ""}, r"backend_options\['address'\] must be 'auto', 'host:port' or a 'ray://' address, got str ''"),
    ({"num_cpus": "two"}, r"backend_options\['num_cpus'\] must be a whole number of CPUs >= 0, got str 'two'"),
    ({"num_cpus": -1}, r"backend_options\['num_cpus'\] must be a whole number of CPUs >= 0, got int -1"),
    ({"num_cpus": True}, r"backend_options\['num_cpus'\] must be a whole number of CPUs >= 0, got bool True"),
    ({"init": 5}, r"backend_options\['init'\] must be a dict of keyword arguments for ray.init \(e.g. "),
    ({"init": {1: 2}}, r"backend_options\['init'\] must be a dict of keyword arguments for ray.init"),
])
def test_ray_backend_options_of_the_wrong_type_are_a_setup_error_naming_the_key_before_ray_starts(
        options: dict[str, Any], problem: str) -> None:
    with pytest.raises(FormationSetupError, match=problem):
        _chain().start(backend="ray", backend_options=options)


def test_every_bad_ray_backend_option_is_reported_at_once() -> None:
    with pytest.raises(FormationSetupError, match=r"3 problem\(s\)") as info:
        _chain().run(1, backend="ray", backend_options={"address": 5, "num_cpus": "x", "init": 1})
    assert all(f"backend_options['{key}']" in str(info.value) for key in ("address", "num_cpus", "init"))


def _in_ray_actor(x: int) -> tuple[int, int, bool]:
    import ray

    return x, os.getpid(), ray.get_runtime_context().get_actor_id() is not None


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_run_with_backend_ray_runs_each_node_in_a_ray_actor_of_another_process() -> None:
    ray = pytest.importorskip("ray")
    was_up = ray.is_initialized()
    f = Formation("actors").add_function("first", _in_ray_actor).add_function("second", lambda t: _in_ray_actor(t[0]))
    f.connect("first", "second")

    result = f.run(7, backend="ray")

    assert result.status == "succeeded"
    for name in ("first", "second"):
        x, pid, in_actor = result.nodes[name].output
        assert (x, in_actor) == (7, True) and pid != os.getpid()
    if not was_up:  # the local Ray started for the formation was shut down with it
        assert not ray.is_initialized()


def _dies(x: int) -> int:
    import signal

    os.kill(os.getpid(), signal.SIGKILL)  # the node's process dies mid-attempt, every time
    return x


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_node_process_that_dies_on_every_attempt_fails_the_run_after_its_retries_naming_the_node() -> None:
    pytest.importorskip("ray")
    from wingman_actors.errors import FormationRuntimeError

    f = Formation("dying").add_function("dies", _dies, retries=1, backoff=0.01)

    with pytest.raises(FormationRuntimeError, match=r"dies") as info:
        f.run(1, backend="ray", timeout=150)
    assert (info.value.node, info.value.attempts) == ("dies", 2)
    assert info.value.nodes["dies"].status == "failed"


# --- Beyond one machine: time travel --------------------------------------------------------


@pytest.mark.parametrize("at", [("a", 1, 2), ("a",), (), ["a", 1, "extra"]])
def test_a_fork_point_of_the_wrong_length_is_refused_saying_what_at_takes(tmp_path: Path, at: Any) -> None:
    f = _chain()
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = f.run(1, store=store).run_id
        with pytest.raises(ValueError, match=r"at must be a node name, or \(node, visit\) with a visit number >= 1"):
            f.fork(run_id, store=store, at=at, output=1)
        assert [r.id for r in store.runs()] == [run_id]


def test_a_fork_point_error_is_a_wingman_error_carrying_no_new_run(tmp_path: Path) -> None:
    f = _chain()
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = f.run(1, store=store).run_id
        for at in ("z", ("b", 2), ("b", 0)):
            with pytest.raises(WingmanError):
                f.fork(run_id, store=store, at=at, output=1)
        assert [r.id for r in store.runs()] == [run_id]


@pytest.mark.parametrize("store", [42, {"path": "runs.sqlite"}, object()])
def test_a_fork_given_a_store_of_the_wrong_kind_is_refused_naming_what_it_takes(store: Any) -> None:
    with pytest.raises(TypeError, match=r"store must be a RunStore .* got "):
        _chain().fork("r1", store=store, at="a", output=1)


# --- Beyond one machine: PostgreSQL leases ---------------------------------------------------


def test_a_run_whose_owner_stopped_renewing_its_lease_reads_interrupted_and_resumes_in_another_process(
        postgres_url: str, tmp_path: Path) -> None:
    import signal

    from tests.durable.lease_worker import RUN_ID, build, calls

    log = tmp_path / "log"
    owner = subprocess.Popen([sys.executable, "-m", "tests.durable.lease_worker", postgres_url, "1.0", str(log)],
                             cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while (owner.pid, "slow") not in calls(log):
            assert owner.poll() is None, owner.communicate()
            assert time.monotonic() < deadline, "the run never reached its slow node"
            time.sleep(0.02)
        with RunStore(postgres_url) as store:
            while "first" not in store.load(RUN_ID).visits:
                assert time.monotonic() < deadline, "the first visit was never journalled"
                time.sleep(0.02)
            assert store.get(RUN_ID).status == "running"
            os.kill(owner.pid, signal.SIGSTOP)  # it stops renewing its lease
            while store.get(RUN_ID).status != "interrupted":
                assert time.monotonic() < deadline, "the frozen owner's run never read interrupted"
                time.sleep(0.05)
            assert [r.id for r in store.runs(status="interrupted")] == [RUN_ID]
            (log.parent / f"go-{os.getpid()}").touch()
            result = build(log).resume(RUN_ID, store=store)
            assert (result.status, result.output) == ("succeeded", "x 1 2 3")
            assert store.get(RUN_ID).status == "succeeded"
        assert [node for pid, node in calls(log) if pid == os.getpid()] == ["slow", "last"]  # first not rerun
    finally:
        if owner.poll() is None:
            os.kill(owner.pid, signal.SIGCONT)
            owner.kill()
        owner.communicate(timeout=30)


@pytest.mark.parametrize("url", ["postgresql:/someone:hunter2@127.0.0.1/db", "postgresql:someone:hunter2@db/runs",
                                 "postgres:/db", "PostgreSQL:/someone:hunter2@db/runs"])
def test_a_postgresql_url_missing_its_slashes_is_refused_as_a_url_not_taken_for_a_file_path(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors.store import StoreOpenError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreOpenError, match=r"looks like a PostgreSQL URL without the '//' after its scheme; "
                                             r"write it as postgresql://user:password@host:5432/db") as info:
        RunStore(url)
    assert "hunter2" not in str(info.value) and "mkdir" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_session_suspended_on_a_postgresql_store_resumes_in_another_process_without_repeating_model_calls(
        postgres_url: str) -> None:
    import json

    from tests.agents.session_worker import ASK, agent

    provider = ScriptedProvider([ASK])
    with RunStore(postgres_url) as store:
        session = Session(agent(provider), store=store)
        result = session.run("Book me a trip.")
        assert (result.status, result.interrupt) == ("suspended", {"question": "Which city?"})
    out = subprocess.run([sys.executable, "-m", "tests.agents.session_worker", postgres_url, session.id, "Porto"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {"status": "succeeded", "response": "Booked for Porto", "calls": 1}
    with RunStore(postgres_url) as store:
        assert store.get(session.id).status == "succeeded"


# --- The agent layer, complete --------------------------------------------------------------


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum dolor sit amet " * 80


def test_a_failing_compactor_falls_back_to_trimming_with_a_trace_note_and_no_extra_model_call() -> None:
    steps = 12
    script: list[InferenceResponse | str] = [
        InferenceResponse.of_tool_calls([(f"c{i}", "fetch", {"page": i})]) for i in range(1, steps)]
    provider = ScriptedProvider([*script, "all pages read"])
    compactor = ScriptedProvider([RuntimeError("compactor down")], cycle=True)
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=4_000, compactor=compactor)

    result = Session(agent).run("Read the pages.")

    assert result.response == "all pages read"
    assert len(provider.requests) == steps  # one call a step: none asked for a summary
    assert not any("Summarise the conversation" in m.text for r in provider.requests for m in r.messages)
    assert len(provider.requests[-1].messages) < 2 * steps  # trimmed
    notes = [t for t in result.trace if t.name == "compact failed"]
    assert notes and all(t.is_error for t in notes)
    assert "compactor failed (RuntimeError: compactor down); leaving" in notes[0].output
    assert "without a summary" in notes[0].output


def test_prepare_sees_the_agent_being_run_in_its_run_context() -> None:
    seen: list[Any] = []

    def prepare(ctx: RunContext) -> Prepared | None:
        seen.append(ctx.agent)
        return None

    agent = Agent("helper", provider=ScriptedProvider(["ok"]), prepare=prepare)
    Session(agent).run("hi")

    assert seen == [agent]


def test_an_empty_prepared_keeps_the_agents_model_tools_and_instructions() -> None:
    provider = ScriptedProvider(["ok"])
    agent = Agent("a", instructions="Be brief.", provider=provider, tools=[fetch], prepare=lambda ctx: Prepared())
    Session(agent).run("hi")

    request = provider.requests[0]
    assert request.instructions == "Be brief."
    assert [t.name for t in request.tools] == ["fetch"]


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as bus:
        yield bus


def test_a_subscriber_without_a_timeout_is_skipped_after_one_second_by_default(
        bus: EventBus, caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    got: list[tuple[str, float]] = []

    def slow_on_start(event: Event) -> None:
        got.append((event.kind, time.monotonic()))
        if event.kind == "session_start":
            release.wait(5)

    sub = bus.subscribe(["session_start", "session_stop"], slow_on_start)
    with caplog.at_level(logging.WARNING, logger="wingman_actors.events"):
        Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    release.set()

    assert [kind for kind, _ in got] == ["session_start", "session_stop"] and sub.skipped == 1
    waited = got[1][1] - got[0][1]
    assert 0.9 <= waited < 3  # the default timeout=1.0 passed before the next event went to it
    assert len([r for r in caplog.records if "overran its timeout" in r.getMessage()]) == 1


# --- provider options and reasoning, against the loopback wire servers ------------------------

_ANSWERS = {
    "openai": lambda: Reply.json(completion()),
    "ollama": lambda: Reply.json({"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True}),
    "anthropic": lambda: Reply.json(message_json()),
}


def _options(id: str, loopback: LoopbackServer, **more: Any) -> dict[str, Any]:
    model = ANTHROPIC_MODEL if id == "anthropic" else "m"
    return {"model": model, "base_url": loopback.url, "api_key": "k", "max_retries": 0, **more}


@pytest.mark.parametrize("id", ["openai", "ollama", "anthropic"])
def test_every_http_provider_sends_through_the_users_http_client_and_leaves_it_open(
        id: str, loopback: LoopbackServer) -> None:
    loopback.queue(_ANSWERS[id]())
    with httpx.Client(headers={"X-Client": "mine"}) as client:
        provider = new_provider(id, _options(id, loopback, http_client=client))
        provider.run_inference(InferenceRequest(messages=[Message.user("hi")]))
        provider.close()  # type: ignore[attr-defined]
        assert not client.is_closed
    assert loopback.requests[0].headers["x-client"] == "mine"


@pytest.mark.parametrize("id", ["openai", "ollama", "anthropic"])
def test_every_http_provider_sends_its_async_calls_through_the_users_async_http_client(
        id: str, loopback: LoopbackServer) -> None:
    loopback.queue(_ANSWERS[id]())

    async def call() -> bool:
        async with httpx.AsyncClient(headers={"X-Client": "async"}) as client:
            provider = new_provider(id, _options(id, loopback, async_http_client=client))
            await provider.arun_inference(InferenceRequest(messages=[Message.user("hi")]))  # type: ignore[attr-defined]
            await provider.aclose()  # type: ignore[attr-defined]
            return client.is_closed

    assert asyncio.run(call()) is False
    assert loopback.requests[0].headers["x-client"] == "async"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def test_anthropic_thinking_is_kept_in_the_sessions_history_as_thinking_blocks(loopback: LoopbackServer) -> None:
    first = [
        {"type": "thinking", "thinking": "I should use the tool.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "toolu_01", "name": "multiply", "input": {"a": 27, "b": 453}},
    ]
    loopback.queue(Reply.json(message_json(first, stop_reason="tool_use")), Reply.json(message_json()))
    provider = new_provider("anthropic", _options("anthropic", loopback,
                                                  thinking={"type": "enabled", "budget_tokens": 1024}))
    session = Session(Agent("calc", provider=provider, tools=[multiply]))
    try:
        session.run("What is 27 * 453?")
    finally:
        provider.close()  # type: ignore[attr-defined]

    blocks = session.history[1].content
    thinking = [b for b in blocks if b.type == "thinking"]
    assert thinking == [ContentBlock(type="thinking", text="I should use the tool.", signature="sig-1")]
    assert [b.type for b in blocks] == ["thinking", "redacted_thinking", "tool_use"]
    assert loopback.requests[1].json()["messages"][1]["content"][:2] == first[:2]


def test_openai_reasoning_content_is_kept_in_the_sessions_history_without_a_signature(
        loopback: LoopbackServer) -> None:
    body = completion("12231")
    body["choices"][0]["message"]["reasoning_content"] = "27 * 453 = 12231"
    loopback.queue(Reply.json(body))
    provider = new_provider("openai", _options("openai", loopback))
    session = Session(Agent("calc", provider=provider))
    try:
        result = session.run("What is 27 * 453?")
    finally:
        provider.close()  # type: ignore[attr-defined]

    assert result.response == "12231"
    thinking = [b for b in session.history[1].content if b.type == "thinking"]
    assert [(b.text, b.signature) for b in thinking] == [("27 * 453 = 12231", None)]


@pytest.mark.parametrize("thinking", ["enabled", True, 1024, ["enabled", 1024]])
def test_an_anthropic_thinking_option_that_is_not_an_object_is_refused_showing_the_shape_it_takes(
        thinking: Any) -> None:
    from wingman_actors.errors import AgentError, ErrorKind

    with pytest.raises(AgentError, match=r"thinking: .*\{'type': 'enabled', 'budget_tokens': 1024\}") as info:
        new_provider("anthropic", {"model": ANTHROPIC_MODEL, "api_key": "k", "thinking": thinking})
    assert info.value.kind is ErrorKind.INVALID


def test_an_anthropic_thinking_object_goes_into_the_request_body_as_it_is(loopback: LoopbackServer) -> None:
    loopback.queue(_ANSWERS["anthropic"]())
    thinking = {"type": "enabled", "budget_tokens": 2048}
    provider = new_provider("anthropic", _options("anthropic", loopback, thinking=thinking))
    try:
        provider.run_inference(InferenceRequest(messages=[Message.user("hi")]))
    finally:
        provider.close()  # type: ignore[attr-defined]
    assert loopback.requests[0].json()["thinking"] == thinking


@pytest.mark.parametrize("tools", [[5], ["fetch", None], [fetch, {"name": "x"}]])
def test_prepared_tools_holding_something_that_is_neither_a_tool_nor_a_name_are_refused_naming_it(
        tools: list[Any]) -> None:
    with pytest.raises(TypeError, match=r"Prepared\(tools=\.\.\.\) takes tools or names of the agent's tools; "
                                        r"item \d+ is a (int|NoneType|dict)"):
        Prepared(tools=tools)


@pytest.mark.parametrize("kinds", [["*"], ("*", "model_start")])
def test_a_star_in_a_list_of_kinds_subscribes_to_every_kind_as_the_message_of_a_bad_kind_offers(
        bus: EventBus, kinds: Any) -> None:
    bus.subscribe(kinds, lambda event: None)

    assert bus.kinds == frozenset({"session_start", "session_stop", "model_start", "model_end", "tool_start",
                                   "tool_end", "subagent_start", "subagent_stop"})
