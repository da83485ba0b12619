"""DESIGN.md's "Agents that cooperate" and "MCP, context windows, telemetry", read bullet by
bullet and checked through the public names as DESIGN spells them: the edges the other
tests of these areas leave open (an awaited delegating session, the default depth limit,
what the model is sent, ``watch(key, timeout)`` called as written, the tools' arguments,
the instructions under a context budget on every way of running a session)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Usage
from wingman_actors.orchestration import AgentRegistry, Blackboard
from wingman_actors.testing import ScriptedProvider

# -- Agents that cooperate: delegation ---------------------------------------------------------


def _delegate(*tasks: dict[str, Any], usage: Usage | None = None) -> InferenceResponse:
    call = InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": list(tasks)})])
    return call if usage is None else call.model_copy(update={"usage": usage})


def _last_tool_output(request: InferenceRequest) -> str:
    return request.messages[-1].tool_results_blocks[0].content or ""


def _helper(name: str, answer: str, usage: Usage) -> Agent:
    return Agent(name, provider=ScriptedProvider([InferenceResponse.of_text(answer, usage=usage)], cycle=True))


def test_an_awaited_delegating_session_answers_in_task_order_and_sums_its_childrens_usage() -> None:
    own, child = Usage(input_tokens=3, output_tokens=2), Usage(input_tokens=5, output_tokens=7)
    registry = AgentRegistry()
    registry.register(_helper("b", "B", child), description="Second.")
    registry.register(_helper("a", "A", child), description="First.")
    boss = Agent("boss", delegates=registry, provider=ScriptedProvider([
        _delegate({"agent": "b", "task": "t"}, {"agent": "a", "task": "t", "context": "c"}, usage=own),
        InferenceResponse.of_text("done", usage=own),
    ]))

    result = asyncio.run(Session(boss).arun("go"))

    (call,) = result.tool_calls
    assert json.loads(call.output) == [{"agent": "b", "result": "B"}, {"agent": "a", "result": "A"}]
    assert result.usage == own + own + child + child
    assert [run.agent for run in result.child_runs] == ["b", "a"]


def test_without_max_delegation_depth_a_tree_of_delegations_stops_at_depth_three() -> None:
    registry = AgentRegistry()
    leaf = _helper("leaf", "L", Usage())
    registry.register(leaf, description="The last.")
    chain = ["root", "d1", "d2", "d3"]
    for name, below in zip(chain[1:], [*chain[2:], "leaf"], strict=True):
        registry.register(Agent(name, delegates=registry, provider=ScriptedProvider(
            [_delegate({"agent": below, "task": "t"}), _last_tool_output])), description=name)
    root = Agent("root", delegates=registry, provider=ScriptedProvider([_delegate({"agent": "d1", "task": "t"}),
                                                                        _last_tool_output]))
    assert root.max_delegation_depth == 3

    result = Session(root).run("go")

    runs = list(result.walk())
    assert [(r.agent, r.depth) for r in runs] == [("d1", 1), ("d2", 2), ("d3", 3)]
    refused = runs[-1].result
    assert refused is not None and refused.tool_calls[0].is_error
    assert "the delegation depth limit is 3" in refused.tool_calls[0].output
    assert isinstance(leaf.provider, ScriptedProvider) and leaf.provider.calls == 0


def test_the_model_of_a_delegating_agent_is_sent_the_available_agents_sorted_without_itself() -> None:
    registry = AgentRegistry()
    registry.register(_helper("zeta", "z", Usage()), description="Last of all.")
    registry.register(_helper("alpha", "a", Usage()), description="First of all.")
    provider = ScriptedProvider(["ok"])
    boss = Agent("boss", instructions="Lead the team.", provider=provider, delegates=registry)
    registry.register(boss, description="Leads.")

    Session(boss).run("go")

    sent = provider.requests[0]
    assert sent.instructions.startswith("Lead the team.\n\n## Available agents\n")
    assert sent.instructions.index("- alpha: First of all.") < sent.instructions.index("- zeta: Last of all.")
    assert "- boss:" not in sent.instructions
    assert [t.name for t in sent.tools] == ["list_agents", "delegate"]
    assert sent.tools[1].input_schema["properties"]["tasks"]["items"]["required"] == ["agent", "task"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"description": 42}, r"AgentRegistry.register: description must be a str saying what agent 'a' is good at, "
                              r"e.g. description='Summarises papers.'; got 42"),
        ({"description": "x", "name": 5}, r"AgentRegistry.register: name must be a str, got 5"),
    ],
    ids=["description-int", "name-int"],
)
def test_register_refuses_a_description_or_name_that_is_not_text_naming_it(kwargs: dict[str, Any], message: str) -> None:
    registry = AgentRegistry()

    with pytest.raises(TypeError, match=message):
        registry.register(Agent("a"), **kwargs)
    assert registry.names() == []


@tool(name="delegate")
def _my_delegate(task: str) -> str:
    """A tool of the user's that happens to be called delegate."""
    return task


@tool(name="load_skill")
def _my_load_skill(name: str) -> str:
    """A tool of the user's that happens to be called load_skill."""
    return name


def test_a_tool_named_like_one_delegation_adds_is_refused_naming_delegates_and_the_fix() -> None:
    with pytest.raises(ValueError, match=r"agent 'boss': its tool 'delegate' has the name of a tool delegates= adds "
                                         r"\(list_agents, delegate\); rename yours"):
        Agent("boss", delegates=AgentRegistry(), tools=[_my_delegate])


def test_a_tool_named_like_the_one_skills_add_is_refused_naming_skills_and_the_fix(tmp_path: Any) -> None:
    folder = tmp_path / "pdf"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: pdf\ndescription: Read PDFs.\n---\nRead it.\n", encoding="utf-8")

    with pytest.raises(ValueError, match=r"agent 'reader': its tool 'load_skill' has the name of a tool skills= adds "
                                         r"\(load_skill\); rename yours"):
        Agent("reader", skills=[folder], tools=[_my_load_skill])


@pytest.mark.parametrize("task", ["", "   "], ids=["empty", "blank"])
def test_a_delegated_task_with_no_text_is_a_tool_error_and_no_child_runs(task: str) -> None:
    child = _helper("a", "A", Usage())
    registry = AgentRegistry()
    registry.register(child, description="Helps.")
    boss = Agent("boss", delegates=registry, provider=ScriptedProvider([
        _delegate({"agent": "a", "task": "fine"}, {"agent": "a", "task": task}), _last_tool_output,
    ]))

    result = Session(boss).run("go")

    (call,) = result.tool_calls
    assert call.is_error
    assert "tasks.1.task" in call.output and "say what agent 'a' should do" in call.output
    assert isinstance(child.provider, ScriptedProvider) and child.provider.calls == 0


# -- Agents that cooperate: blackboard ----------------------------------------------------------


def test_watch_takes_its_timeout_as_the_second_positional_argument() -> None:
    board = Blackboard({"ready": [1]})

    assert board.watch("ready", 1) == [1]
    with pytest.raises(TimeoutError, match=r"key 'late' was not set within 0.05s"):
        board.watch("late", 0.05)


@pytest.mark.parametrize("call", [lambda b: b.get(3), lambda b: b.get(""), lambda b: b.delete(3)],
                         ids=["get-int", "get-empty", "delete-int"])
def test_get_and_delete_refuse_a_key_that_is_not_a_non_empty_string_as_set_does(
    call: Callable[[Blackboard], Any],
) -> None:
    board = Blackboard({"3": "three"})

    with pytest.raises(TypeError, match=r"blackboard keys are non-empty strings, got (3|'')"):
        call(board)
    assert board.to_dict() == {"3": "three"}


def test_the_blackboard_tools_take_key_then_key_and_value_then_nothing() -> None:
    get, put, listing = Blackboard().tools("team")

    schemas = {t.name: t.definition.input_schema for t in (get, put, listing)}

    assert schemas["team_state_get"]["required"] == ["key"]
    assert schemas["team_state_set"]["required"] == ["key", "value"]
    assert schemas["team_state_list"].get("required", []) == []
    assert set(schemas["team_state_list"]["properties"]) == set()


# -- MCP ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": 8000}, r"mcp_tools: url must be a str such as 'http://127.0.0.1:8000/mcp', got 8000"),
        ({"url": b"http://127.0.0.1/mcp"}, r"mcp_tools: url must be a str such as .*, got b'http"),
        ({"command": ["x"], "cwd": 3}, r"mcp_tools: cwd must be a folder's path \(a str or Path\), got 3"),
        ({"command": ["x"], "include": 3}, r"mcp_tools: include must be a list of the server's tool names .*got 3"),
        ({"command": ["x"], "include": ["echo", 3]}, r"include must be a list of the server's tool names .*got \['echo', 3\]"),
    ],
    ids=["url-int", "url-bytes", "cwd-int", "include-int", "include-of-an-int"],
)
def test_mcp_tools_refuses_arguments_of_the_wrong_type_before_connecting_naming_them(
    kwargs: dict[str, Any], message: str
) -> None:
    pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')
    from wingman_actors.integrations.mcp import mcp_tools

    with pytest.raises(TypeError, match=message), mcp_tools(**kwargs):
        pass


def test_an_awaited_session_calls_stdio_mcp_tools_and_the_model_sees_a_servers_error_as_an_error_result() -> None:
    pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')
    import sys
    from pathlib import Path

    from wingman_actors.integrations.mcp import mcp_tools

    peer = [sys.executable, str(Path(__file__).parent / "integrations" / "mcp_peer.py")]
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "echo", {"text": "hi"}), ("c2", "fail", {"reason": "no"})]), "ok",
    ])
    with mcp_tools(command=peer, include=["echo", "fail"]) as tools:
        result = asyncio.run(Session(Agent("a", provider=provider, tools=tools)).arun("go"))

    echo, fail = result.tool_calls
    assert (echo.output, echo.is_error) == ("echo: hi", False)
    assert fail.is_error and "refused: no" in fail.output
    sent = provider.requests[1].messages[-1].tool_results_blocks
    assert [(b.tool_use_id, b.is_error) for b in sent] == [("c1", False), ("c2", True)]


# -- Context budget -------------------------------------------------------------------------


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum dolor sit amet " * 80


def _reading(steps: int) -> list[InferenceResponse | str]:
    calls: list[InferenceResponse | str] = [
        InferenceResponse.of_tool_calls([(f"c{i}", "fetch", {"page": i})]) for i in range(1, steps)
    ]
    return [*calls, "all read"]


def _run(session: Session, message: str) -> None:
    session.run(message)


def _stream(session: Session, message: str) -> None:
    list(session.run_stream(message))


def _arun(session: Session, message: str) -> None:
    asyncio.run(session.arun(message))


@pytest.mark.parametrize("way", [_run, _stream, _arun], ids=["run", "run_stream", "arun"])
def test_under_a_context_budget_every_request_keeps_the_instructions_and_the_first_user_message(
    way: Callable[[Session, str], None],
) -> None:
    from wingman_actors.agents._context_budget import estimate_request  # the library's own estimate

    provider = ScriptedProvider(_reading(30))
    agent = Agent("reader", instructions="Quote every page exactly.", provider=provider, tools=[fetch],
                  context_budget=3_000, max_steps=40)
    session = Session(agent)

    way(session, "Read pages 1 to 29.")

    assert len(provider.requests) == 30
    assert len(provider.requests[-1].messages) < len(session.history) - 1  # turns were left out
    for request in provider.requests:
        assert estimate_request(request) <= 3_000
        assert request.instructions == "Quote every page exactly."
        assert request.messages[0].text == "Read pages 1 to 29."


# -- Telemetry ------------------------------------------------------------------------------


@pytest.fixture
def spans() -> Any:
    """Spans exported to memory by a tracer provider set globally for the test."""
    pytest.importorskip("opentelemetry.sdk", reason='needs opentelemetry-sdk: pip install -e ".[dev]"')
    from tests.support.otel import memory_spans

    with memory_spans() as exporter:
        yield exporter


@pytest.mark.parametrize("where", ["source", "after_a_node", "mapped"])
def test_a_nested_formations_run_is_a_span_under_the_outer_runs_span_in_one_trace(spans: Any, where: str) -> None:
    from tests.support.otel import by_name, parent_id, span_id
    from wingman_actors import Formation

    inner = Formation("inner").add_agent("say", Agent("say", provider=ScriptedProvider(["hi"], cycle=True)))
    outer = Formation("outer")
    if where == "source":
        outer.add_formation("sub", inner)
    elif where == "after_a_node":
        outer.add_function("first", str.upper).add_formation("sub", inner).connect("first", "sub")
    else:
        outer.add_function("first", str.split).add_map("sub", formation=inner).connect("first", "sub")

    result = outer.run("go")

    assert result.output == (["hi"] if where == "mapped" else "hi")
    finished = spans.get_finished_spans()
    got = by_name(finished)
    (outer_span,) = got["invoke_workflow outer"]
    (inner_span,) = got["invoke_workflow inner"]
    (session,) = got["invoke_agent say"]
    assert parent_id(inner_span) == span_id(outer_span)
    assert parent_id(session) == span_id(inner_span)
    assert len({s.context.trace_id for s in finished}) == 1  # one trace per (outer) run


def test_a_trimmed_request_leaves_out_the_oldest_turns_and_keeps_an_unbroken_run_of_the_newest() -> None:
    provider = ScriptedProvider(_reading(30))
    session = Session(Agent("reader", provider=provider, tools=[fetch], context_budget=3_000, max_steps=40))

    session.run("Read pages 1 to 29.")

    history = session.history
    trimmed = 0
    for request in provider.requests[1:]:  # the first carries the user message alone
        sent = request.messages
        assert sent[0] == history[0]
        start = history.index(sent[1])
        assert sent[1:] == history[start:start + len(sent) - 1]  # the newest turns, none skipped
        assert not sent[1].tool_results_blocks  # no tool result without its call
        trimmed += start > 1
    assert trimmed > 0
