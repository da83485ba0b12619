"""Node actors on their own: replies to probes and callbacks, failures, envelopes."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest
from pydantic import BaseModel, TypeAdapter

from wingman_actors import Agent
from wingman_actors.actors._address import start_actor
from wingman_actors.actors._envelope import Envelope, EnvelopeType, new_envelope
from wingman_actors.actors._nodes import AgentActor, FleetActor, FunctionActor, PayloadError, render_input
from wingman_actors.errors import AgentError
from wingman_actors.testing import ActorProbe, ScriptedProvider


def test_new_envelope_carries_the_contract_fields() -> None:
    env = new_envelope("work", {"x": 1}, run_id="r1", sender="a")
    assert (env.run_id, env.sender, env.type, env.payload) == ("r1", "a", "work", {"x": 1})
    assert env.id > 0 and env.timestamp > 0
    assert new_envelope("work", None).id != env.id


def test_function_actor_replies_with_a_result_envelope_to_a_probe(actor_probe: ActorProbe) -> None:
    ref = FunctionActor.start(lambda x: x * 2, name="double", reply_to=actor_probe)
    try:
        ref.tell(new_envelope(EnvelopeType.WORK, 21, run_id="r", sender="input"))
        reply = actor_probe.expect_message(type="result")
        assert (reply.payload, reply.sender, reply.run_id) == (42, "double", "r")
        actor_probe.expect_no_message(0.05)
    finally:
        ref.stop()


def test_function_actor_replies_to_a_callback() -> None:
    got: Future[Envelope] = Future()
    ref = FunctionActor.start(str.upper, name="up", reply_to=got.set_result)
    try:
        ref.tell(new_envelope("work", "hi"))
        assert got.result(3).payload == "HI"
    finally:
        ref.stop()


def test_a_raising_function_replies_with_a_failure_carrying_the_exception(actor_probe: ActorProbe) -> None:
    def boom(x: int) -> int:
        raise ValueError(f"bad {x}")

    ref = FunctionActor.start(boom, reply_to=actor_probe)
    try:
        ref.tell(new_envelope("work", 7))
        reply = actor_probe.expect_message(type="failure")
        assert isinstance(reply.payload, ValueError) and str(reply.payload) == "bad 7"
    finally:
        ref.stop()


def test_input_adapter_rejects_a_payload_naming_the_edge(actor_probe: ActorProbe) -> None:
    ref = FunctionActor.start(lambda n: n + 1, name="inc", input_adapter=TypeAdapter(int), reply_to=actor_probe)
    try:
        ref.tell(new_envelope("work", "seven", sender="parse"))
        reply = actor_probe.expect_message(type="failure")
        assert isinstance(reply.payload, PayloadError)
        assert "edge 'parse' → 'inc'" in str(reply.payload)
        assert reply.payload.retryable is False
    finally:
        ref.stop()


def test_kwargs_mode_calls_the_function_with_keyword_arguments(actor_probe: ActorProbe) -> None:
    ref = FunctionActor.start(lambda a, b: a - b, mode="kwargs", reply_to=actor_probe)
    try:
        ref.tell(new_envelope("work", {"a": 10, "b": 3}))
        assert actor_probe.expect_message(type="result").payload == 7
    finally:
        ref.stop()


def test_agent_actor_runs_a_session_per_envelope(actor_probe: ActorProbe) -> None:
    provider = ScriptedProvider(["first", "second"])
    ref = AgentActor.start(Agent("writer", provider=provider), prompt="Topic: {input}", reply_to=actor_probe)
    try:
        ref.tell(new_envelope("work", "owls"))
        ref.tell(new_envelope("work", "bats"))
        assert actor_probe.expect_message(type="result").payload == "first"
        reply = actor_probe.expect_message(type="result")
        assert reply.payload == "second" and reply.usage.output_tokens > 0
    finally:
        ref.stop()
    assert [r.messages[-1].text for r in provider.requests] == ["Topic: owls", "Topic: bats"]
    assert all(len(r.messages) == 1 for r in provider.requests)  # a fresh session each time


def test_agent_actor_failure_carries_the_agent_error(actor_probe: ActorProbe) -> None:
    provider = ScriptedProvider([AgentError("down")])
    ref = AgentActor.start(Agent("w", provider=provider), reply_to=actor_probe)
    try:
        ref.tell(new_envelope("work", "x"))
        assert isinstance(actor_probe.expect_message(type="failure").payload, AgentError)
    finally:
        ref.stop()


def test_fleet_actor_maps_a_list_in_item_order(actor_probe: ActorProbe) -> None:
    provider = ScriptedProvider([lambda req: req.messages[-1].text.upper()], cycle=True)
    actor = start_actor(FleetActor, Agent("r", provider=provider), max_workers=3, reply_to=actor_probe)
    try:
        actor.actor_ref.tell(new_envelope("work", ["a", "b", "c", "d"]))
        assert actor_probe.expect_message(type="result").payload == ["A", "B", "C", "D"]
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)


def test_fleet_actor_refuses_a_non_list_payload(actor_probe: ActorProbe) -> None:
    ref = FleetActor.start(Agent("r", provider=ScriptedProvider([])), name="fleet", reply_to=actor_probe)
    try:
        ref.tell(new_envelope("work", "not a list", sender="up"))
        failure = actor_probe.expect_message(type="failure").payload
        assert isinstance(failure, PayloadError) and "needs a list" in str(failure)
    finally:
        ref.stop()


def test_render_input_fills_prompt_fields_from_a_model() -> None:
    class Order(BaseModel):
        item: str
        qty: int

    text = render_input(Order(item="tea", qty=2), "Buy {qty} x {item}. Full: {input}")
    assert text.startswith("Buy 2 x tea. Full: {")


def test_render_input_names_a_missing_prompt_field() -> None:
    with pytest.raises(PayloadError, match=r"uses \{colour\}"):
        render_input({"size": 1}, "{colour}", "paint")


def test_render_input_without_prompt_is_text_or_json() -> None:
    assert render_input("plain", None) == "plain"
    assert render_input({"a": [1, 2]}, None) == '{\n  "a": [\n    1,\n    2\n  ]\n}'


def test_render_input_writes_the_json_pydantic_dump_json_writes() -> None:
    import datetime
    import decimal
    import uuid

    adapter: TypeAdapter[object] = TypeAdapter(object)
    values: list[object] = [
        {"id": 1, "topic": "t", "weight": 0.5}, [1, 2.5, None, True], {"a": {"b": [1, "x"]}}, (1, 2), {1: 2},
        datetime.datetime(2020, 1, 2, 3, 4), uuid.UUID(int=7), decimal.Decimal("1.5"), b"hi", "é ünïcode",
    ]
    for value in values:
        expected = value if isinstance(value, str) else adapter.dump_json(value, indent=2).decode()
        assert render_input(value, None) == expected
    unserializable = object()
    assert render_input(unserializable, None) == str(unserializable)  # falls back to str()


def test_actor_probe_reports_what_it_got_when_nothing_matches() -> None:
    probe = ActorProbe.start()
    try:
        probe.tell(new_envelope("result", 1))
        with pytest.raises(AssertionError, match="no 'failure' message"):
            probe.expect_message(type="failure", timeout=0.05)
        assert len(probe.messages) == 1
    finally:
        probe.stop()


def test_actor_probe_expect_no_message_fails_on_a_message() -> None:
    with ActorProbe.start() as probe:
        probe.tell("hello")
        threading.Event().wait(0.05)
        with pytest.raises(AssertionError, match="unexpected message"):
            probe.expect_no_message(0.05)


def test_an_envelope_is_immutable_and_its_delivery_carries_the_attempt_bookkeeping() -> None:
    from wingman_actors.actors._envelope import Work

    env = new_envelope("work", {"x": 1}, run_id="r1", sender="a", target="b")
    with pytest.raises(AttributeError):
        env.payload = 2  # type: ignore[misc]
    work = Work.of(env)
    assert (work.payload, work.sender, work.run_id, work.target, work.attempt) == ({"x": 1}, "a", "r1", "b", 1)
    work.attempt += 1
    assert work.envelope is env and env.attempt == 1
