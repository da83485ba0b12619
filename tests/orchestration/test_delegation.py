"""Delegation: an agent hands tasks to registered agents through list_agents and delegate."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from wingman_actors import Agent, Formation, Session
from wingman_actors.agents._result import Result
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider


def delegate_call(*tasks: dict[str, Any], call_id: str = "d1") -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(call_id, "delegate", {"tasks": list(tasks)})])


def last_tool_result(request: InferenceRequest) -> str:
    return request.messages[-1].tool_results_blocks[0].content or ""


def echo_tool_result(request: InferenceRequest) -> str:
    """A final answer that repeats what the last tool said."""
    return "done: " + last_tool_result(request)


def specialist(name: str, answer: str = "", *, latency_s: float = 0.0, **kw: Any) -> Agent:
    provider = ScriptedProvider([answer or f"{name} says hi"], latency_s=latency_s, cycle=True)
    return Agent(name, provider=provider, **kw)


def registry_of(*agents: Agent) -> AgentRegistry:
    registry = AgentRegistry()
    for agent in agents:
        registry.register(agent, description=f"the {agent.name}")
    return registry


def boss(registry: AgentRegistry, *replies: Any, name: str = "boss", **kw: Any) -> Agent:
    return Agent(name, provider=ScriptedProvider(list(replies)), delegates=registry, **kw)


def delegated(result: Result) -> list[dict[str, Any]]:
    call = next(c for c in result.tool_calls if c.name == "delegate")
    answer: list[dict[str, Any]] = json.loads(call.output)
    return answer


def test_delegation_adds_list_agents_and_delegate_tools() -> None:
    agent = boss(registry_of(specialist("a")), "ok")

    assert agent.tool_registry.names == ["list_agents", "delegate"]


def test_the_system_prompt_lists_available_agents_but_not_the_agent_itself() -> None:
    registry = registry_of(specialist("zeta"), specialist("alpha"))
    agent = boss(registry, "ok", instructions="Coordinate.")
    registry.register(agent, description="the boss")

    prompt = agent.system_prompt

    assert prompt.startswith("Coordinate.\n\n## Available agents\n")
    assert prompt.index("- alpha: the alpha") < prompt.index("- zeta: the zeta")
    assert "- boss" not in prompt


def test_list_agents_answers_every_other_agent_sorted_by_name() -> None:
    registry = registry_of(specialist("zeta"), specialist("alpha"))
    agent = boss(registry, InferenceResponse.of_tool_calls([("l1", "list_agents", {})]), echo_tool_result)
    registry.register(agent, description="the boss")

    result = Session(agent).run("who is there?")

    assert json.loads(result.response.removeprefix("done: ")) == [
        {"name": "alpha", "description": "the alpha"},
        {"name": "zeta", "description": "the zeta"},
    ]


def test_results_come_back_in_task_order_whatever_the_latencies() -> None:
    registry = registry_of(
        specialist("slow", "S", latency_s=0.3), specialist("fast", "F"), specialist("mid", "M", latency_s=0.1)
    )
    agent = boss(
        registry,
        delegate_call({"agent": "slow", "task": "1"}, {"agent": "fast", "task": "2"}, {"agent": "mid", "task": "3"}),
        "ok",
    )

    result = Session(agent).run("go")

    assert delegated(result) == [
        {"agent": "slow", "result": "S"},
        {"agent": "fast", "result": "F"},
        {"agent": "mid", "result": "M"},
    ]


def test_tasks_run_concurrently() -> None:
    # Each child's model call waits until all three are in theirs: tasks run one after
    # another never get past it (the barrier breaks after 10 s), however loaded the machine.
    together = threading.Barrier(3, timeout=10)

    def meet(name: str) -> Any:
        def answer(_request: InferenceRequest) -> str:
            together.wait()
            return name.upper()

        return answer

    registry = registry_of(*(Agent(n, provider=ScriptedProvider([meet(n)], cycle=True)) for n in ("a", "b", "c")))
    agent = boss(registry, delegate_call(*({"agent": n, "task": "t"} for n in ("a", "b", "c"))), "ok")

    result = Session(agent).run("go")

    assert delegated(result) == [{"agent": n, "result": n.upper()} for n in ("a", "b", "c")], \
        "the tasks did not all run at once"


def test_each_child_starts_with_the_context_then_the_task_from_the_parent() -> None:
    child = specialist("a", "A")
    agent = boss(registry_of(child), delegate_call({"agent": "a", "task": "the task", "context": "background"}), "ok")

    result = Session(agent).run("go")

    assert isinstance(child.provider, ScriptedProvider)
    sent = child.provider.requests[0].messages
    assert [(m.role.value, m.text, m.sender) for m in sent] == [
        ("user", "background", "boss"),
        ("user", "the task", "boss"),
    ]
    (run,) = result.child_runs
    assert [(m.text, m.sender) for m in run.messages][-1] == ("A", "a")


def test_every_delegation_gets_a_fresh_session() -> None:
    child = specialist("a", "A")
    agent = boss(
        registry_of(child),
        delegate_call({"agent": "a", "task": "first"}),
        delegate_call({"agent": "a", "task": "second"}, call_id="d2"),
        "ok",
    )

    Session(agent).run("go")

    assert isinstance(child.provider, ScriptedProvider)
    assert [[m.text for m in r.messages] for r in child.provider.requests] == [["first"], ["second"]]


def test_a_factory_builds_a_new_agent_for_every_task() -> None:
    built: list[Agent] = []

    def make() -> Agent:
        agent = specialist("a", "A")
        built.append(agent)
        return agent

    registry = AgentRegistry()
    registry.register(make, description="made fresh")
    agent = boss(registry, delegate_call({"agent": "a", "task": "1"}, {"agent": "a", "task": "2"}), "ok")

    Session(agent).run("go")

    assert len({id(a) for a in built}) == 3  # one to learn the name, one per task


def test_the_first_failing_task_cancels_its_siblings() -> None:
    failing = Agent("bad", provider=ScriptedProvider([AgentError("model exploded", kind=ErrorKind.INVALID)]))
    registry = registry_of(failing, specialist("slow1", latency_s=5), specialist("slow2", latency_s=5))
    agent = boss(
        registry,
        delegate_call({"agent": "slow1", "task": "t"}, {"agent": "bad", "task": "t"}, {"agent": "slow2", "task": "t"}),
        "ok",
    )

    t0 = time.perf_counter()
    result = Session(agent).run("go")

    assert time.perf_counter() - t0 < 2.0
    answers = delegated(result)
    assert [a["agent"] for a in answers] == ["slow1", "bad", "slow2"]
    assert "model exploded" in answers[1]["error"]
    for sibling in (answers[0], answers[2]):
        assert "cancelled" in sibling["error"] and "sibling task 1" in sibling["error"], sibling


def test_delegating_to_an_unknown_agent_is_a_tool_error_the_model_sees() -> None:
    agent = boss(registry_of(specialist("a")), delegate_call({"agent": "nobody", "task": "t"}), echo_tool_result)

    result = Session(agent).run("go")

    assert result.tool_calls[0].is_error
    assert "no agent named 'nobody'; available agents: ['a']" in result.response


def test_self_delegation_is_refused_with_a_tool_error() -> None:
    registry = registry_of(specialist("a"))
    agent = boss(registry, delegate_call({"agent": "boss", "task": "t"}), echo_tool_result)
    registry.register(agent, description="the boss")

    result = Session(agent).run("go")

    assert result.tool_calls[0].is_error
    assert "'boss' cannot delegate to itself" in result.response


def test_delegation_is_allowed_at_exactly_the_depth_limit_and_refused_beyond_it() -> None:
    registry = AgentRegistry()
    leaf = specialist("leaf", "L")
    # Each child would allow more depth on its own; the root's limit of 2 bounds the tree.
    mid2 = boss(registry, delegate_call({"agent": "leaf", "task": "t"}), echo_tool_result, name="mid2",
                max_delegation_depth=10)
    mid1 = boss(registry, delegate_call({"agent": "mid2", "task": "t"}), echo_tool_result, name="mid1",
                max_delegation_depth=10)
    for agent in (leaf, mid1, mid2):
        registry.register(agent, description=agent.name)
    root = boss(registry, delegate_call({"agent": "mid1", "task": "t"}), echo_tool_result, max_delegation_depth=2)

    result = Session(root).run("go")

    (mid1_run,) = result.child_runs
    assert mid1_run.depth == 1 and mid1_run.result is not None
    (mid2_run,) = mid1_run.result.child_runs
    assert mid2_run.depth == 2 and mid2_run.result is not None  # depth 2 == the limit: allowed
    refused = mid2_run.result.tool_calls[0]
    assert refused.is_error
    assert "the delegation depth limit is 2 and agent 'mid2' already runs at depth 2" in refused.output
    assert isinstance(leaf.provider, ScriptedProvider) and leaf.provider.calls == 0


def test_childrens_usage_is_summed_into_the_parents_usage() -> None:
    registry = registry_of(specialist("a", "a long answer " * 10), specialist("b", "B"))
    agent = boss(registry, delegate_call({"agent": "a", "task": "t"}, {"agent": "b", "task": "t"}), "ok")

    result = Session(agent).run("go")

    own = sum(t.usage.output_tokens for t in result.trace if t.kind == "model")
    children = [r.result for r in result.child_runs if r.result is not None]
    assert len(children) == 2 and all(c.usage.output_tokens > 0 for c in children)
    assert result.usage.output_tokens == own + sum(c.usage.output_tokens for c in children)
    assert result.usage.input_tokens == sum(t.usage.input_tokens for t in result.trace)


def test_child_runs_hang_under_the_delegate_call_in_the_trace() -> None:
    registry = AgentRegistry()
    registry.register(specialist("leaf", "L"), description="leaf")
    mid = boss(registry, delegate_call({"agent": "leaf", "task": "t"}), "mid done", name="mid")
    registry.register(mid, description="mid")
    root = boss(registry, delegate_call({"agent": "mid", "task": "t"}), "root done", name="root")

    result = Session(root).run("go")

    entry = next(t for t in result.trace if t.name == "delegate")
    assert [c.agent for c in entry.children] == ["mid"]
    assert [(c.agent, c.depth) for c in result.walk()] == [("mid", 1), ("leaf", 2)]
    assert entry.usage == entry.children[0].usage


def test_cancelling_the_parent_cancels_its_children() -> None:
    child = specialist("slow", latency_s=10)
    agent = boss(registry_of(child), delegate_call({"agent": "slow", "task": "t"}), "never")
    session = Session(agent)
    assert isinstance(child.provider, ScriptedProvider)

    def cancel_once_the_child_runs() -> None:
        deadline = time.monotonic() + 5
        while child.provider.calls == 0 and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.01)
        session.cancel("user pressed stop")

    canceller = threading.Thread(target=cancel_once_the_child_runs)
    canceller.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(AgentError) as info:
            session.run("go")
    finally:
        canceller.join()

    assert info.value.kind is ErrorKind.CANCELLED
    assert child.provider.calls == 1
    assert time.perf_counter() - t0 < 3.0


def test_a_delegating_agent_runs_as_a_formation_node() -> None:
    registry = registry_of(specialist("a", "A"), specialist("b", "B"))
    agent = boss(registry, delegate_call({"agent": "a", "task": "t"}, {"agent": "b", "task": "t"}), echo_tool_result)
    formation = Formation("team").add_agent("lead", agent).add_function("shout", str.upper)
    formation.connect("lead", "shout")

    result = formation.run("go")

    assert result.output == 'DONE: [{"AGENT": "A", "RESULT": "A"}, {"AGENT": "B", "RESULT": "B"}]'


def test_a_child_with_an_output_schema_returns_its_object() -> None:
    from pydantic import BaseModel

    class Verdict(BaseModel):
        ok: bool

    child = Agent("judge", provider=ScriptedProvider(['{"ok": true}']), output_schema=Verdict)
    agent = boss(registry_of(child), delegate_call({"agent": "judge", "task": "t"}), "ok")

    assert delegated(Session(agent).run("go")) == [{"agent": "judge", "result": {"ok": True}}]


def test_bad_delegate_arguments_are_a_tool_error() -> None:
    agent = boss(registry_of(specialist("a")), InferenceResponse.of_tool_calls([("d", "delegate", {"tasks": []})]),
                 echo_tool_result)

    result = Session(agent).run("go")

    assert result.tool_calls[0].is_error and "invalid arguments for tool 'delegate'" in result.response


def test_delegates_must_be_a_registry() -> None:
    with pytest.raises(TypeError, match="delegates must be an AgentRegistry"):
        Agent("x", delegates={"a": 1})  # type: ignore[arg-type]


def test_max_delegation_depth_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="max_delegation_depth must be an int >= 0"):
        Agent("x", delegates=AgentRegistry(), max_delegation_depth=-1)


def test_a_depth_limit_of_zero_refuses_every_delegation() -> None:
    child = specialist("a")
    agent = boss(registry_of(child), delegate_call({"agent": "a", "task": "t"}), "ok", max_delegation_depth=0)

    call = Session(agent).run("go").tool_calls[0]

    assert call.is_error and "the delegation depth limit is 0" in call.output
    assert isinstance(child.provider, ScriptedProvider) and child.provider.calls == 0


def test_at_most_tool_concurrency_tasks_run_at_once() -> None:
    lock = threading.Lock()
    running = peak = 0

    def busy(request: InferenceRequest) -> str:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return "ok"

    registry = registry_of(Agent("w", provider=ScriptedProvider([busy], cycle=True)))
    agent = boss(registry, delegate_call(*({"agent": "w", "task": str(i)} for i in range(6))), "ok",
                 tool_concurrency=2)

    result = Session(agent).run("go")

    assert len(delegated(result)) == 6 and peak == 2


def test_the_parents_deadline_bounds_its_children() -> None:
    child = specialist("slow", latency_s=10)
    agent = boss(registry_of(child), delegate_call({"agent": "slow", "task": "t"}), "never")

    t0 = time.perf_counter()
    with pytest.raises(AgentError) as info:
        Session(agent).run("go", timeout=0.3)

    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.perf_counter() - t0 < 3.0


def test_a_streamed_run_rolls_up_its_children_too() -> None:
    agent = boss(registry_of(specialist("a", "A")), delegate_call({"agent": "a", "task": "t"}), "ok")

    stream = Session(agent).run_stream("go")
    kinds = [event.type.value for event in stream]
    result = stream.result()

    assert "tool_end" in kinds
    assert [c.agent for c in result.child_runs] == ["a"]
    assert result.usage.total_tokens == sum(t.usage.total_tokens for t in result.trace)
