"""The session loop, driven by the scripted provider."""

from __future__ import annotations

import threading
import time

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, Role, StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def calls(*specs: tuple[str, str, dict[str, object]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


def test_run_returns_the_final_text_and_one_step() -> None:
    session = Session(Agent("a", provider=ScriptedProvider(["Paris."])))
    result = session.run("Capital of France?")
    assert result.response == "Paris."
    assert result.output == "Paris."
    assert result.steps == 1
    assert [m.role for m in session.history] == [Role.USER, Role.ASSISTANT]


def test_instructions_reach_the_provider() -> None:
    provider = ScriptedProvider(["ok"])
    Session(Agent("a", instructions="Be brief.", provider=provider)).run("hi")
    assert provider.requests[0].instructions == "Be brief."


def test_multi_turn_keeps_history_between_runs() -> None:
    provider = ScriptedProvider(["Hello Ada.", "Your name is Ada."])
    session = Session(Agent("a", provider=provider))
    session.run("My name is Ada.")
    result = session.run("What is my name?")
    assert result.response == "Your name is Ada."
    second = provider.requests[1]
    assert [m.text for m in second.messages] == ["My name is Ada.", "Hello Ada.", "What is my name?"]


def test_tool_call_result_goes_back_to_the_model_paired_by_id() -> None:
    provider = ScriptedProvider([calls(("c1", "add", {"a": 2, "b": 3})), "5"])
    result = Session(Agent("a", provider=provider, tools=[add])).run("2+3?")
    assert result.response == "5"
    assert result.steps == 2
    results_msg = provider.requests[1].messages[-1]
    assert results_msg.role is Role.USER
    [block] = results_msg.content
    assert (block.type, block.tool_use_id, block.content, block.is_error) == ("tool_result", "c1", "5", False)
    assert [(c.name, c.input, c.output) for c in result.tool_calls] == [("add", {"a": 2, "b": 3}, "5")]


def test_tool_calls_of_one_step_run_concurrently_and_return_in_call_order() -> None:
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def meet(n: int) -> int:
        """Waits until three calls are running at once."""
        barrier.wait()  # would time out if the calls ran one after another
        time.sleep(0.01 * (3 - n))  # finish in reverse order
        return n

    provider = ScriptedProvider([calls(*[(f"c{n}", "meet", {"n": n}) for n in (1, 2, 3)]), "done"])
    result = Session(Agent("a", provider=provider, tools=[meet])).run("go")
    blocks = provider.requests[1].messages[-1].content
    assert [(b.tool_use_id, b.content) for b in blocks] == [("c1", "1"), ("c2", "2"), ("c3", "3")]
    assert [c.id for c in result.tool_calls] == ["c1", "c2", "c3"]


def test_at_most_tool_concurrency_tools_run_at_once() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    @tool
    def busy(n: int) -> int:
        """Counts concurrent calls."""
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return n

    provider = ScriptedProvider([calls(*[(f"c{n}", "busy", {"n": n}) for n in range(6)]), "done"])
    Session(Agent("a", provider=provider, tools=[busy], tool_concurrency=2)).run("go")
    assert peak == 2


def test_bad_tool_arguments_become_an_error_result_and_the_loop_continues() -> None:
    provider = ScriptedProvider([calls(("c1", "add", {"a": "two", "b": 3})), "sorry"])
    result = Session(Agent("a", provider=provider, tools=[add])).run("go")
    [block] = provider.requests[1].messages[-1].content
    assert block.is_error
    assert "invalid arguments for tool 'add'" in (block.content or "")
    assert "a:" in (block.content or "")
    assert result.response == "sorry"
    assert result.tool_calls[0].is_error


def test_a_raising_tool_becomes_an_error_result_naming_the_exception() -> None:
    provider = ScriptedProvider([calls(("c1", "explode", {"reason": "disk full"})), "noted"])
    Session(Agent("a", provider=provider, tools=[explode])).run("go")
    [block] = provider.requests[1].messages[-1].content
    assert block.is_error
    assert "RuntimeError: disk full" in (block.content or "")


def test_unknown_tool_name_is_reported_to_the_model_with_the_available_tools() -> None:
    provider = ScriptedProvider([calls(("c1", "subtract", {})), "ok"])
    Session(Agent("a", provider=provider, tools=[add])).run("go")
    [block] = provider.requests[1].messages[-1].content
    assert block.is_error
    assert (block.content or "").startswith("Error: unknown tool 'subtract'") and "add" in (block.content or "")


def test_max_steps_forces_one_final_call_without_tools() -> None:
    loop = calls(("c", "add", {"a": 1, "b": 1}))
    provider = ScriptedProvider([loop, loop, "final answer"])
    result = Session(Agent("a", provider=provider, tools=[add], max_steps=2)).run("go")
    assert result.response == "final answer"
    assert result.max_steps_reached
    assert result.steps == 3
    assert provider.requests[0].tools and provider.requests[1].tools
    assert provider.requests[2].tools == []
    assert "maximum number of steps" in provider.requests[2].messages[-1].text


def test_tool_calls_in_the_final_call_without_tools_are_dropped() -> None:
    loop = calls(("c", "add", {"a": 1, "b": 1}))
    provider = ScriptedProvider([loop, calls(("d", "add", {"a": 1, "b": 1}))])
    result = Session(Agent("a", provider=provider, tools=[add], max_steps=1)).run("go")
    assert result.max_steps_reached
    assert result.steps == 2
    assert len(result.tool_calls) == 1


class Capital(BaseModel):
    country: str
    city: str


def test_structured_output_is_validated_into_the_schema_object() -> None:
    provider = ScriptedProvider(['{"country": "France", "city": "Paris"}'])
    result = Session(Agent("a", provider=provider, output_schema=Capital)).run("France?")
    assert result.output == Capital(country="France", city="Paris")
    request = provider.requests[0]
    assert request.output_schema is not None and "city" in request.output_schema["properties"]
    assert "JSON Schema" in request.instructions


def test_structured_output_accepts_a_fenced_json_answer() -> None:
    provider = ScriptedProvider(['Here:\n```json\n{"country": "Peru", "city": "Lima"}\n```'])
    result = Session(Agent("a", provider=provider, output_schema=Capital)).run("Peru?")
    assert result.output == Capital(country="Peru", city="Lima")


def test_structured_output_gets_one_corrective_retry_with_the_validation_error() -> None:
    provider = ScriptedProvider(['{"country": "France"}', '{"country": "France", "city": "Paris"}'])
    result = Session(Agent("a", provider=provider, output_schema=Capital)).run("France?")
    assert result.output.city == "Paris"
    correction = provider.requests[1].messages[-1].text
    assert "does not match the required output schema" in correction and "city" in correction


def test_structured_output_invalid_twice_raises_invalid() -> None:
    provider = ScriptedProvider(["not json", "still not json"])
    with pytest.raises(AgentError) as info:
        Session(Agent("a", provider=provider, output_schema=Capital)).run("France?")
    assert info.value.kind is ErrorKind.INVALID
    assert "output schema" in str(info.value)
    assert provider.calls == 2


def test_usage_is_summed_over_steps_and_traced_per_step() -> None:
    u = Usage(input_tokens=10, output_tokens=2)
    first = calls(("c1", "add", {"a": 1, "b": 2})).model_copy(update={"usage": u})
    provider = ScriptedProvider([first, InferenceResponse.of_text("3", usage=u)])
    result = Session(Agent("a", provider=provider, tools=[add])).run("go")
    assert result.usage == Usage(input_tokens=20, output_tokens=4)
    assert [(t.kind, t.step) for t in result.trace] == [("model", 1), ("tool", 1), ("model", 2)]
    assert result.trace[1].name == "add" and result.trace[1].output == "3"
    assert all(t.duration_s >= 0 for t in result.trace)


def test_large_tool_results_are_truncated_in_history_with_a_marker() -> None:
    @tool
    def big() -> str:
        """Returns a lot."""
        return "x" * 5000

    provider = ScriptedProvider([calls(("c1", "big", {})), "ok"])
    Session(Agent("a", provider=provider, tools=[big], max_tool_result_chars=1000)).run("go")
    content = provider.requests[1].messages[-1].content[0].content or ""
    assert len(content) < 1100
    assert "truncated" in content


def test_provider_errors_propagate_with_their_kind() -> None:
    boom = AgentError("overloaded", kind=ErrorKind.AGENT, status=529, provider="scripted")
    with pytest.raises(AgentError) as info:
        Session(Agent("a", provider=ScriptedProvider([boom]))).run("hi")
    assert info.value is boom


def test_timeout_stops_a_slow_run_with_timeout_kind() -> None:
    provider = ScriptedProvider(["late"], latency_s=5.0)
    t0 = time.monotonic()
    with pytest.raises(AgentError) as info:
        Session(Agent("a", provider=provider)).run("hi", timeout=0.2)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - t0 < 2.0


def test_timeout_is_checked_at_tool_boundaries() -> None:
    @tool
    def slow() -> str:
        """Slow."""
        time.sleep(1.5)
        return "done"

    provider = ScriptedProvider([calls(("c1", "slow", {})), "never"])
    with pytest.raises(AgentError) as info:  # a deadline loose enough for a loaded machine to reach the tool
        Session(Agent("a", provider=provider, tools=[slow])).run("go", timeout=0.5)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert provider.calls == 1


def test_cancel_from_another_thread_stops_the_run() -> None:
    provider = ScriptedProvider(["late"], latency_s=5.0)
    session = Session(Agent("a", provider=provider))
    timer = threading.Timer(0.1, session.cancel)
    timer.start()
    try:
        with pytest.raises(AgentError) as info:
            session.run("hi")
    finally:
        timer.join()
    assert info.value.kind is ErrorKind.CANCELLED


def test_a_cancel_after_a_stream_is_made_and_before_it_is_iterated_cancels_that_stream() -> None:
    provider = ScriptedProvider(["answer"], cycle=True)
    session = Session(Agent("a", provider=provider))
    stream = session.run_stream("hi")
    session.cancel("changed my mind")  # nothing runs yet: the stream begins cancelled
    events = []
    with pytest.raises(AgentError) as info:
        for event in stream:
            events.append(event)
    assert info.value.kind is ErrorKind.CANCELLED and "changed my mind" in str(info.value)
    assert [e.type for e in events] == [StreamEventType.ERROR] and provider.calls == 0
    # the cancel was that stream's: a cancel while nothing runs and no stream waits touches no later run
    session.cancel("too early")
    assert session.run("again").response == "answer"
    later = session.run_stream("and again")
    assert [e.type for e in later][-1] is StreamEventType.MESSAGE_STOP and later.result().response == "answer"


def test_a_stream_made_and_dropped_unread_leaves_no_cancel_behind_for_the_next_one() -> None:
    session = Session(Agent("a", provider=ScriptedProvider(["answer"], cycle=True)))
    session.run_stream("never read")  # dropped without iterating
    session.cancel("meant for the dropped stream")
    stream = session.run_stream("read")
    assert "".join(e.text or "" for e in stream) == "answer"


def test_run_stream_yields_provider_and_tool_events_then_the_result() -> None:
    provider = ScriptedProvider([calls(("c1", "add", {"a": 2, "b": 2})), "four"])
    stream = Session(Agent("a", provider=provider, tools=[add])).run_stream("2+2")
    types = [e.type for e in stream]
    assert types.count(StreamEventType.MESSAGE_STOP) == 2
    start, end = types.index(StreamEventType.TOOL_START), types.index(StreamEventType.TOOL_END)
    assert types.index(StreamEventType.MESSAGE_STOP) < start < end
    assert StreamEventType.TEXT_DELTA in types[end:]
    assert stream.result().response == "four"


def test_run_stream_text_deltas_join_to_the_response() -> None:
    provider = ScriptedProvider(["a fairly long answer, streamed in pieces"])
    stream = Session(Agent("a", provider=provider)).run_stream("go")
    text = "".join(e.text or "" for e in stream if e.type is StreamEventType.TEXT_DELTA)
    assert text == stream.result().response


def test_run_stream_failure_yields_an_error_event_then_raises() -> None:
    provider = ScriptedProvider([AgentError("bad key", kind=ErrorKind.INVALID, status=401)])
    stream = Session(Agent("a", provider=provider)).run_stream("go")
    seen = []
    with pytest.raises(AgentError):
        for event in stream:
            seen.append(event)
    assert seen[-1].type is StreamEventType.ERROR and seen[-1].error_kind == "invalid"
    with pytest.raises(AgentError):
        stream.result()


def test_result_before_the_stream_ends_is_an_error() -> None:
    stream = Session(Agent("a", provider=ScriptedProvider(["x"]))).run_stream("go")
    with pytest.raises(RuntimeError, match="not finished"):
        stream.result()


def test_agent_without_provider_fails_with_a_fix() -> None:
    with pytest.raises(AgentError, match="no provider") as info:
        Session(Agent("a")).run("hi")
    assert info.value.kind is ErrorKind.INVALID


def test_a_session_refuses_two_concurrent_runs() -> None:
    gate = threading.Event()

    def slow(request: InferenceRequest) -> str:
        gate.wait(5)
        return "ok"

    session = Session(Agent("a", provider=ScriptedProvider([slow, "second"])))
    worker = threading.Thread(target=session.run, args=("first",))
    worker.start()
    try:
        deadline = time.monotonic() + 2
        while not session._busy.locked() and time.monotonic() < deadline:
            time.sleep(0.005)
        with pytest.raises(RuntimeError, match="already running"):
            session.run("second")
    finally:
        gate.set()
        worker.join()


def test_session_accepts_a_message_object_and_prior_history() -> None:
    provider = ScriptedProvider(["yes"])
    history = [Message.user("earlier"), Message.assistant("reply")]
    session = Session(Agent("a", provider=provider), history=history)
    session.run(Message.user("now"))
    assert [m.text for m in provider.requests[0].messages] == ["earlier", "reply", "now"]


def test_work_dir_must_exist(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="not an existing directory"):
        Session(Agent("a", provider=ScriptedProvider([])), work_dir="/no/such/dir/at/all")


def test_session_ids_are_unique_32_hex_digits_and_a_given_id_is_kept() -> None:
    agent = Agent("a", provider=ScriptedProvider(["ok"]))
    ids = {Session(agent).id for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert Session(agent, id="conversation-7").id == "conversation-7"


def test_a_one_step_run_reports_its_response_usage() -> None:
    u = Usage(input_tokens=7, output_tokens=3)
    provider = ScriptedProvider([InferenceResponse.of_text("hi", usage=u)])
    result = Session(Agent("a", provider=provider)).run("go")
    assert result.usage == u
    assert result.trace[0].usage == u


def test_a_session_dropped_without_close_still_releases_its_tools() -> None:
    import gc

    closed: list[str] = []

    @tool
    def remember(ctx: ToolContext) -> str:
        """Registers a closer, as the bash tool does for its shell."""
        ctx.on_close(lambda: closed.append("released"))
        return "ok"

    provider = ScriptedProvider([calls(("c1", "remember", {})), "done"])
    session = Session(Agent("a", provider=provider, tools=[remember]))
    assert session.run("go").response == "done"
    assert closed == []
    del session
    gc.collect()
    assert closed == ["released"]


def test_close_releases_tools_once_and_the_session_stays_usable() -> None:
    closed: list[str] = []

    @tool
    def remember(ctx: ToolContext) -> str:
        """Registers a closer."""
        ctx.on_close(lambda: closed.append("released"))
        return "ok"

    provider = ScriptedProvider([calls(("c1", "remember", {})), "one", calls(("c2", "remember", {})), "two"])
    with Session(Agent("a", provider=provider, tools=[remember])) as session:
        session.run("first")
        session.close()
        assert closed == ["released"]
        assert session.run("second").response == "two"
    assert closed == ["released", "released"]


def test_the_sessions_answers_carry_the_agents_name_as_sender() -> None:
    session = Session(Agent("critic", provider=ScriptedProvider(["fine"])))
    session.run("judge this")

    assert [(m.role.value, m.sender) for m in session.history] == [("user", None), ("assistant", "critic")]


def test_child_runs_a_tool_reports_hang_under_its_call_and_add_their_usage() -> None:
    from wingman_actors.agents._result import ChildRun, Result, report_child_run

    child_usage = Usage(input_tokens=100, output_tokens=7)

    @tool
    def spawn() -> str:
        """Pretend to run another agent."""
        report_child_run(ChildRun(agent="helper", task="t", result=Result(response="r", usage=child_usage)))
        return "spawned"

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "spawn", {}), ("c2", "spawn", {})]), "ok"])
    result = Session(Agent("a", provider=provider, tools=[spawn])).run("go")

    tool_steps = [t for t in result.trace if t.kind == "tool"]
    assert [len(t.children) for t in tool_steps] == [1, 1]
    own = sum((t.usage for t in result.trace if t.kind == "model"), Usage())
    assert result.usage == own + child_usage + child_usage
    assert [c.agent for c in result.walk()] == ["helper", "helper"]


def test_parent_token_cancellation_stops_the_run() -> None:
    from wingman_actors._cancel import CancelToken

    parent = CancelToken()
    parent.cancel("parent stopped")

    with pytest.raises(AgentError, match="parent stopped") as info:
        Session(Agent("a", provider=ScriptedProvider(["x"]))).run("go", parent_token=parent)
    assert info.value.kind is ErrorKind.CANCELLED
