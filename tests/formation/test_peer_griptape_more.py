"""More behaviours ported from Griptape's own test suite (griptape-ai/griptape): prompt tasks
(agent nodes played by the testkit's ``ScriptedProvider`` for Griptape's
``MockPromptDriver``), input templating from parents' outputs, structure run tasks (a
structure as a task: our nested formation, ``add_formation``), task events, shared task
memory (our ``Blackboard``), retries, and some of them on ``backend="ray"``. The
workflow/pipeline topologies, branches and validation are in ``test_peer_griptape.py``.

Deliberately different, or without a counterpart (each test that touches one says so):
- Griptape templates a prompt with Jinja over ``parent_outputs``/``args``; our ``prompt``
  is a ``str.format`` template over ``{input}`` and, for a fan-in, the predecessors' names.
- Griptape's ``StructureRunTask`` runs a structure built by a factory, locally or remotely;
  ours nests a formation (``add_formation``), whose inner events and traces appear under the
  node's path (``"outer_node/inner_node"``).
- Griptape's ``EventBus`` is process-global; our listeners are per run (``on_event``) or a
  run's stream (``run_stream``).
- Griptape's conversation memory and rulesets have no formation counterpart; shared state
  between nodes, or between runs, is a ``Blackboard`` given to the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.testing import ScriptedProvider


def said(provider: ScriptedProvider, call: int = 0) -> str:
    """The text of the last user message of the provider's ``call``-th request."""
    return " ".join(b.text or "" for b in provider.requests[call].messages[-1].content)


def agent(name: str, *replies: Any, **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(list(replies))
    return Agent(name, provider=provider, **options), provider


class Events:
    """Every event of a run, as ``(type, node)``; pass it as ``on_event``."""

    def __init__(self) -> None:
        self.seen: list[FormationEvent] = []

    def __call__(self, event: FormationEvent) -> None:
        self.seen.append(event)

    def of(self, node: str | None) -> list[str]:
        return [e.type.value for e in self.seen if e.node == node]

    def types(self) -> list[str]:
        return [e.type.value for e in self.seen]


# --- prompt tasks: agents --------------------------------------------------------------


def test_a_prompt_task_answers_with_its_models_text() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_pipeline.py::test_run
    ("mock output" in the pipeline's output)."""
    a, provider = agent("task", "mock output")
    result = Formation("one").add_agent("task", a).run("test")
    assert result.output == "mock output"
    assert said(provider) == "test"
    assert result.nodes["task"].status == "succeeded"


def test_a_pipeline_of_prompt_tasks_gives_each_the_previous_answer() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_pipeline.py::test_context
    (a task's input is its parent's output)."""
    first, p1 = agent("parent", "parent says hi")
    second, p2 = agent("task", "task answered")
    result = Formation("chain").add_agent("parent", first).add_agent("task", second).connect("parent", "task").run("start")
    assert result.output == "task answered"
    assert said(p1) == "start" and said(p2) == "parent says hi"


def test_a_prompt_template_renders_the_input() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_pipeline.py::test_run_with_args
    (``PromptTask("{{ args[0] }}-{{ args[1] }}")``; ours is ``{input}``)."""
    a, provider = agent("task", "ok")
    Formation("templ").add_agent("task", a, prompt="Summarise this: {input}!").run("test1-test2")
    assert said(provider) == "Summarise this: test1-test2!"


def test_a_join_prompt_template_names_each_parents_output() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_context
    (``parent_outputs`` keyed by parent id)."""
    a, provider = agent("compare", "compared")
    f = (Formation("join").add_function("task1", lambda x: f"{x}-one").add_function("task2", lambda x: f"{x}-two")
         .add_agent("compare", a, prompt="Compare {task1} with {task2}")
         .connect("task1", "compare").connect("task2", "compare"))
    assert f.run("in").output == "compared"
    assert said(provider) == "Compare in-one with in-two"


def test_a_join_prompt_template_reaches_parents_named_by_digits() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_one_branch
    (tasks with ids "1", "2", "3": a child's prompt naming its parents ``{2}`` and ``{3}``
    renders their outputs, rather than being refused as positional fields)."""
    a, provider = agent("4", "joined")
    f = (Formation("digits").add_function("2", lambda x: f"two({x})").add_function("3", lambda x: f"three({x})")
         .add_agent("4", a, prompt="Join {2} and {3!r} ({input:.3})").connect("2", "4").connect("3", "4"))
    assert f.run("x").output == "joined"
    assert said(provider) == "Join two(x) and 'three(x)' ({\n )"


def test_a_digit_field_that_names_no_parent_is_still_refused_as_positional() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_bad_branch
    (a child id that does not exist: here a prompt field naming no parent)."""
    a, _ = agent("4", "joined")
    f = (Formation("digits").add_function("2", lambda x: x).add_function("3", lambda x: x)
         .add_agent("4", a, prompt="Join {2} and {7}").connect("2", "4").connect("3", "4"))
    with pytest.raises(FormationSetupError, match=r"positional field \{7\}") as info:
        f.validate()
    assert "{2}" not in str(info.value)


def test_a_join_without_a_template_gets_its_parents_outputs_as_json() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_parents_output
    (``parents_output_text`` joins the parents' texts; ours renders the dict as JSON)."""
    a, provider = agent("child", "done")
    f = (Formation("json").add_function("foobar1", lambda _: "foobar1").add_function("foobar3", lambda _: "foobar3")
         .add_agent("child", a).connect("foobar1", "child").connect("foobar3", "child"))
    f.run(None)
    text = said(provider)
    assert '"foobar1"' in text and '"foobar3"' in text


def test_a_prompt_task_that_calls_a_tool_answers_after_the_tool_result() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_agent.py (an agent with a
    tool: the tool runs, its result goes back to the model, the final text is the output)."""
    calls: list[str] = []

    from wingman_actors import tool

    @tool
    def lookup(term: str) -> str:
        """Look a term up."""
        calls.append(term)
        return f"{term} is a fruit"

    a, provider = agent("task", InferenceResponse.of_tool_calls([("c1", "lookup", {"term": "apple"})]),
                        "apple: a fruit", tools=[lookup])
    result = Formation("tools").add_agent("task", a).run("what is an apple?")
    assert result.output == "apple: a fruit"
    assert calls == ["apple"]
    results = [b for m in provider.requests[1].messages for b in m.content if b.type == "tool_result"]
    assert len(results) == 1 and results[0].tool_use_id == "c1"


def test_a_prompt_task_whose_model_fails_is_retried_then_answers() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_agent.py (a driver error;
    Griptape's prompt driver retries, ours is the node's ``retries``)."""
    a, _ = agent("task", RuntimeError("model down"), "recovered")
    result = Formation("retry").add_agent("task", a, retries=1, backoff=0.0).run("go")
    assert result.output == "recovered"
    assert result.nodes["task"].attempts == 2


def test_a_prompt_task_whose_model_keeps_failing_fails_the_run_naming_it() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_with_error_artifact
    (a task's error stops the workflow; ours raises naming the node and chaining the cause)."""
    a, _ = agent("task", RuntimeError("model down"))
    f = Formation("down").add_agent("task", a).add_function("after", lambda x: x).connect("task", "after")
    with pytest.raises(FormationRuntimeError, match="model down") as info:
        f.run("go")
    assert info.value.node == "task"
    assert info.value.nodes["after"].status != "succeeded"


# --- structure run tasks: nested formations ------------------------------------------------


def test_a_structure_run_task_outputs_the_inner_structures_answer() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run."""
    inner_agent, provider = agent("agent", "agent mock output")
    inner = Formation("agent_structure").add_agent("agent", inner_agent)
    outer = (Formation("pipeline").add_function("prep", lambda x: f"{x}!").add_formation("structure_run", inner)
             .connect("prep", "structure_run"))
    result = outer.run("question")
    assert result.output == "agent mock output"
    assert said(provider) == "question!"


def test_a_structure_run_task_with_several_outputs_gives_them_by_name() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run
    (a workflow as the structure: its output tasks)."""
    inner = Formation("wf").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2)
    outer = Formation("outer").add_formation("sub", inner).add_function("end", lambda d: d).connect("sub", "end")
    assert outer.run(5).output == {"a": 6, "b": 10}


def test_a_structure_run_tasks_inner_events_and_traces_are_named_by_path() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run
    (the inner structure's tasks run; ours shows them under the node's path)."""
    events = Events()
    inner = Formation("inner").add_function("x", lambda v: v + 1).add_function("y", lambda v: v * 10).connect("x", "y")
    result = Formation("outer").add_formation("sub", inner).run(1, on_event=events)
    assert result.output == 20
    assert events.of("sub/x") == ["node_started", "node_finished"]
    assert events.of("sub/y") == ["node_started", "node_finished"]
    assert result.nodes["sub/y"].output == 20 and result.nodes["sub/y"].parent == "sub"


def test_a_failing_structure_run_task_hands_its_failure_to_an_error_edge() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run
    with a structure whose task fails (Griptape returns an ErrorArtifact; ours is a NodeFailure
    for the handler, naming the formation node)."""

    def boom(_: Any) -> str:
        raise ValueError("inner broke")

    inner = Formation("inner").add_function("boom", boom)
    outer = (Formation("outer").add_formation("sub", inner).add_function("handler", lambda f: f)
             .connect("sub", "handler", on_error=True))
    result = outer.run("go")
    failure = result.outputs["handler"]
    assert isinstance(failure, NodeFailure) and failure.node == "sub"
    assert "inner broke" in str(failure.error)
    assert result.nodes["sub"].status == "failed"


def test_a_structure_run_task_is_retried_as_a_whole() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run
    (a structure that fails once; ours retries the inner run as one node)."""
    counter = Counter()

    def flaky(x: int) -> int:
        if counter.hit("flaky") == 1:
            raise RuntimeError("first time")
        return x

    inner = Formation("inner").add_function("first", lambda x: counter.hit("first") and x).add_function("flaky", flaky)
    inner.connect("first", "flaky")
    result = Formation("outer").add_formation("sub", inner, retries=1, backoff=0.0).run(7)
    assert result.output == 7
    assert counter.calls == {"first": 2, "flaky": 2}
    assert result.nodes["sub"].attempts == 2


def test_a_structure_run_task_on_a_branch_not_taken_does_not_run() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_one_branch
    with a structure run task as the child not picked."""
    counter = Counter()
    inner = Formation("inner").add_function("work", lambda x: counter.hit("work") and x)
    f = (Formation("outer").add_function("branch", lambda x: x).add_formation("sub", inner)
         .add_function("other", lambda x: f"other {x}")
         .connect("branch", "sub", when=lambda x: x == "sub").connect("branch", "other", otherwise=True))
    result = f.run("no")
    assert result.outputs == {"other": "other no"}
    assert result.nodes["sub"].status == "skipped" and counter.count("work") == 0


# --- events -------------------------------------------------------------------------------


def test_each_task_publishes_a_start_and_a_finish_event_inside_the_runs_own() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_execute_publish_events
    (two events per task run: start and finish)."""
    events = Events()
    f = Formation("ev").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
    f.run(1, on_event=events)
    assert events.of("a") == ["node_started", "node_finished"]
    assert events.of("b") == ["node_started", "node_finished"]
    types = events.types()
    assert types[0] == "run_started" and types[-1] == "run_finished"


def test_a_start_event_carries_the_tasks_input_and_a_finish_event_its_output() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_execute_publish_events
    (Griptape's StartTaskEvent/FinishTaskEvent carry the task's input and output)."""
    events = Events()
    Formation("io").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b").run(
        1, on_event=events)
    data = {(e.type.value, e.node): e.data for e in events.seen if e.node is not None}
    assert data[("node_started", "a")]["input"] == 1 and data[("node_finished", "a")]["output"] == 2
    assert data[("node_started", "b")]["input"] == 2 and data[("node_finished", "b")]["output"] == 4


def test_a_failing_task_publishes_its_failure_then_the_runs() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_execute_publish_events
    (a task that fails still publishes its finish; ours is node_failed, then run_failed)."""
    events = Events()

    def bad(_: Any) -> None:
        raise RuntimeError("nope")

    with pytest.raises(FormationRuntimeError):
        Formation("bad").add_function("bad", bad).run(None, on_event=events)
    assert [t for t in events.of("bad") if t.startswith("node_")] == ["node_started", "node_failed"]
    last = events.seen[-1]
    assert (last.type.value, last.node) == ("run_failed", "bad")  # the run's failure names the node


def test_a_branch_not_taken_publishes_a_skip_event_for_the_child() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_one_branch
    (the child not picked ends SKIPPED; ours also tells the listeners)."""
    events = Events()
    f = (Formation("skip").add_function("branch", lambda x: x).add_function("2", lambda x: x)
         .add_function("3", lambda x: x).connect("branch", "2", when=lambda x: x == 2)
         .connect("branch", "3", when=lambda x: x == 3))
    f.run(2, on_event=events)
    assert events.of("3") == ["node_skipped"]
    assert "node_started" not in events.of("3")


def test_run_stream_yields_the_same_events_ending_with_the_runs_end() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_agent.py (``run_stream``:
    events as the structure runs, the last one its finish)."""
    f = Formation("stream").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
    seen = list(f.run_stream(1))
    types = [e.type.value for e in seen]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert [(e.type.value, e.node) for e in seen if e.node] == [
        ("node_started", "a"), ("node_finished", "a"), ("node_started", "b"), ("node_finished", "b")]


def test_an_agent_tasks_text_reaches_the_listeners_as_it_comes() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_agent.py (``stream=True``:
    text chunks are published as events)."""
    events = Events()
    a, _ = agent("task", "streamed answer")
    result = Formation("text").add_agent("task", a).run("go", on_event=events)
    text = "".join(e.data["text"] for e in events.seen if e.type.value == "agent_text")
    assert text == result.output == "streamed answer"


def test_a_listener_that_raises_does_not_stop_the_run() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_execute_publish_events
    (event listeners are observers: the run goes on whatever they do)."""

    def bad_listener(_: FormationEvent) -> None:
        raise RuntimeError("listener broke")

    assert Formation("robust").add_function("a", lambda x: x + 1).run(1, on_event=bad_listener).output == 2


# --- task memory: the Blackboard ----------------------------------------------------------


def test_parallel_tasks_share_memory_and_the_join_reads_it() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_with_task_memory
    (one task memory for the structure's tasks; ours is a Blackboard given to the run)."""

    def writer(key: str) -> Callable[..., str]:
        def write(x: Any, blackboard: Blackboard) -> str:
            blackboard.set(key, f"{key}:{x}")
            return key
        return write

    def read(d: dict[str, str], blackboard: Blackboard) -> list[Any]:
        return sorted((k, blackboard.get(k)) for k in d)

    f = (Formation("memory").add_function("left", writer("left")).add_function("right", writer("right"))
         .add_function("join", read).connect("left", "join").connect("right", "join"))
    board = Blackboard()
    assert f.run("x", blackboard=board).output == [("left", "left:x"), ("right", "right:x")]
    assert sorted(board.keys()) == ["left", "right"]


def test_memory_shared_across_runs_keeps_every_run() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_with_memory
    (three runs, memory of three runs)."""

    def remember(x: Any, blackboard: Blackboard) -> int:
        runs = [*blackboard.get("runs", []), x]
        blackboard.set("runs", runs)
        return len(runs)

    f = Formation("mem").add_function("task", remember)
    board = Blackboard()
    assert [f.run(i, blackboard=board).output for i in range(3)] == [1, 2, 3]
    assert board.get("runs") == [0, 1, 2]


def test_without_a_shared_memory_a_run_has_its_own() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_without_task_memory
    (``task_memory=None``: nothing is shared)."""

    def count(_: Any, blackboard: Blackboard | None = None) -> int:
        board = blackboard if blackboard is not None else Blackboard()
        board.set("n", board.get("n", 0) + 1)
        return int(board.get("n"))

    f = Formation("own").add_function("task", count)
    assert [f.run(None).output, f.run(None).output] == [1, 1]


def test_an_agent_task_writes_memory_through_its_tools_and_a_later_task_reads_it() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_with_task_memory
    (a tool's output goes to task memory for later tasks; ours: the Blackboard's tools)."""
    board = Blackboard()
    a, _ = agent("writer", InferenceResponse.of_tool_calls([("s1", "team_state_set", {"key": "fact", "value": "42"})]),
                 "stored", tools=board.tools("team"))
    f = (Formation("tools_memory").add_agent("writer", a)
         .add_function("reader", lambda x, blackboard: (x, blackboard.get("fact"))).connect("writer", "reader"))
    assert f.run("remember 42", blackboard=board).output == ("stored", "42")


# --- backend="ray" ----------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_diamond_on_ray_gives_the_join_both_parents_outputs() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_1_declarative_parents on backend="ray"."""
    f = (Formation("topology_1").add_function("task1", lambda x: f"1({x})").add_function("task2", lambda x: f"2({x})")
         .add_function("task3", lambda x: f"3({x})").add_function("task4", lambda task2, task3: f"{task2}+{task3}")
         .connect("task1", "task2", "task4").connect("task1", "task3", "task4"))
    assert f.run("in", backend="ray", timeout=120).output == "2(1(in))+3(1(in))"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_branch_on_ray_skips_the_child_not_picked() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_one_branch on backend="ray"."""
    f = (Formation("branch").add_function("branch", lambda x: x).add_function("2", lambda x: "two")
         .add_function("3", lambda x: "three").add_function("4", lambda d: sorted(d))
         .connect("branch", "2", when=lambda x: x == 2).connect("branch", "3", when=lambda x: x == 3)
         .connect("2", "4").connect("3", "4"))
    result = f.run(2, backend="ray", timeout=120)
    assert result.output == ["2"] and result.nodes["3"].status == "skipped"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_structure_run_task_on_ray_hands_its_failure_to_an_error_edge() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run on backend="ray"
    (a failing inner structure, handled by an error edge)."""

    def boom(_: Any) -> str:
        raise ValueError("inner broke")

    inner = Formation("inner").add_function("ok", lambda x: x).add_function("boom", boom).connect("ok", "boom")
    outer = (Formation("outer").add_formation("sub", inner)
             .add_function("handler", lambda f: (f.node, str(f.error))).connect("sub", "handler", on_error=True))
    node, error = outer.run("go", backend="ray", timeout=120).outputs["handler"]
    assert node == "sub" and "inner broke" in error
