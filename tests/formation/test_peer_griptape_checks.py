"""Behaviours ported from Griptape's own test suite (griptape-ai/griptape), continued from
``test_peer_griptape.py`` and ``test_peer_griptape_more.py``: checks at declaration (a
hand-made graph's misspelt attributes, types across a nested formation), a branch condition
that raises, a loop where Griptape refuses cycles, output-schema tasks, and a shared memory
and a nested agent on ``backend="ray"``.

Deliberately different (each test that touches one says so):
- Griptape refuses every cycle; ours refuses a cycle without a condition, and one through
  ``when=`` is a loop bounded per node by ``max_visits``.
- Griptape's ``OutputSchemaValidationSubtask`` reports a mismatch; ours asks the model once
  more with the validation error, then fails the node.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest
from pydantic import BaseModel

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.testing import ScriptedProvider


class Answer(BaseModel):
    answer: int


def test_a_hand_made_graphs_misspelt_attributes_and_missing_kind_are_all_named() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_raises_on_missing_parent_or_child_id
    (a declarative workflow's mistakes; Griptape raises on the first at ``run()``, ours lists all at validation)."""
    g = nx.DiGraph()
    g.add_node("task1", kind="function", fn=lambda x: x, retry=3)
    g.add_node("task2", fn=lambda x: x)
    g.add_edge("task1", "task2", whn=lambda x: True)
    with pytest.raises(FormationSetupError) as info:
        Formation("declarative", g).validate()
    text = str(info.value)
    assert "'retry': did you mean 'retries'?" in text
    assert "node 'task2' has no kind" in text
    assert "'whn': did you mean 'when'?" in text


def test_a_structure_run_task_whose_input_type_does_not_fit_is_refused_naming_both_sides() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run
    (Griptape passes text along; ours type-checks across the nested formation's boundary)."""

    def count(n: int) -> int:
        return n

    def title(s: str) -> str:
        return s

    inner = Formation("inner").add_function("count", count)
    outer = Formation("outer").add_function("title", title).add_formation("sub", inner).connect("title", "sub")
    with pytest.raises(FormationSetupError, match=r"'title' outputs str.*'sub'.*'count' expects int"):
        outer.validate()


def test_a_branch_condition_that_raises_fails_the_run_naming_the_edge() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_bad_branch
    (a branch function that goes wrong: Griptape's ErrorArtifact; ours names the edge and chains the cause)."""

    def picks(_: Any) -> bool:
        raise KeyError("oops")

    f = Formation("raises").add_function("branch", lambda x: x).add_function("2", lambda x: x).connect("branch", "2", when=picks)
    with pytest.raises(FormationRuntimeError, match=r"edge 'branch' → '2' raised KeyError") as info:
        f.run(1)
    assert isinstance(info.value.__cause__, KeyError)


def test_a_cycle_through_a_condition_is_a_loop_that_ends_when_it_stops_holding() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_raises_on_cycle.
    Griptape refuses every cycle; ours runs one through ``when=`` as a loop."""
    f = (Formation("loop").add_function("a", lambda n: n + 1, max_visits=10).add_function("done", lambda n: f"done at {n}")
         .connect("a", "a", when=lambda n: n < 3).connect("a", "done", otherwise=True))
    result = f.run(0)
    assert result.output == "done at 3"
    assert result.nodes["a"].visits == 3 and result.nodes["a"].outputs == [1, 2, 3]


def test_a_prompt_task_with_an_output_schema_hands_the_next_task_the_validated_object() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_output_schema_validation_subtask.py
    (a task with an output schema: its output is the parsed object)."""
    provider = ScriptedProvider(['{"answer": 4}'])
    f = (Formation("schema").add_agent("task", Agent("task", provider=provider, output_schema=Answer))
         .add_function("double", lambda a: a.answer * 2).connect("task", "double"))
    result = f.run("2+2")
    assert result.output == 8
    assert result.nodes["task"].output == Answer(answer=4)


def test_an_answer_that_misses_the_schema_is_asked_again_with_the_validation_error() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_output_schema_validation_subtask.py
    (an invalid output is reported; ours asks once more, telling the model what was wrong)."""
    provider = ScriptedProvider(["not json", '{"answer": 4}'])
    result = Formation("schema").add_agent("task", Agent("task", provider=provider, output_schema=Answer)).run("2+2")
    assert result.output == Answer(answer=4)
    correction = provider.requests[1].messages[-1].content[0].text or ""
    assert "does not match the required output schema" in correction


def test_an_answer_that_misses_the_schema_twice_fails_the_node() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_output_schema_validation_subtask.py
    (validation errors stop the task)."""
    provider = ScriptedProvider(["not json", "still not json"])
    with pytest.raises(FormationRuntimeError, match="output schema") as info:
        Formation("schema").add_agent("task", Agent("task", provider=provider, output_schema=Answer)).run("2+2")
    assert info.value.node == "task" and provider.calls == 2


def test_an_agent_inside_a_structure_run_task_streams_its_text_under_the_nodes_path() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run
    (the inner agent's output; ours also streams its text, named by path)."""
    seen: list[FormationEvent] = []
    inner = Formation("inner").add_agent("agent", Agent("agent", provider=ScriptedProvider(["agent mock output"])))
    result = Formation("outer").add_formation("sub", inner).run("go", on_event=seen.append)
    text = "".join(e.data["text"] for e in seen if e.type.value == "agent_text" and e.node == "sub/agent")
    assert text == result.output == "agent mock output"


def test_parallel_branches_of_a_workflow_run_at_the_same_time() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_1_declarative_parents
    (Griptape runs a workflow's ready tasks in a thread pool: task2 and task3 at once)."""
    both = threading.Barrier(2, timeout=5)  # each branch waits for the other: passes only if they overlap

    def branch(name: str) -> Callable[[Any], str]:
        def run(x: Any) -> str:
            both.wait()
            return f"{name}({x})"
        return run

    f = (Formation("parallel").add_function("task1", lambda x: x).add_function("task2", branch("task2"))
         .add_function("task3", branch("task3")).add_function("task4", lambda task2, task3: [task2, task3])
         .connect("task1", "task2", "task4").connect("task1", "task3", "task4"))
    assert f.run("in", timeout=10).output == ["task2(in)", "task3(in)"]


def test_a_task_that_times_out_after_its_retries_hands_the_timeout_to_an_error_edge() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_with_error_artifact_no_fail_fast
    (Griptape's waiting task; here it outlasts its node timeout, twice, and the child gets the failure)."""

    async def waiting(x: Any) -> Any:
        await asyncio.sleep(5)
        return x

    f = (Formation("late").add_function("waiting", waiting, timeout=0.1, retries=1, backoff=0.0)
         .add_function("end", lambda failure: (type(failure.error).__name__, failure.attempts))
         .connect("waiting", "end", on_error=True))
    t0 = time.monotonic()
    result = f.run("go", timeout=10)
    assert result.outputs == {"end": ("NodeTimeoutError", 2)}
    assert time.monotonic() - t0 < 3


def test_a_drawn_workflow_shows_every_task_and_labels_the_branches() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_workflow_with_control_flow_task
    (``StructureVisualizer(workflow).to_url()``; ours is ``to_mermaid()``, with tasks named by digits)."""
    f = (Formation("drawn").add_function("1", lambda x: x).add_function("branch", lambda x: x)
         .add_function("2", lambda x: x).add_function("3", lambda x: x).add_function("4", lambda d: d)
         .connect("1", "branch").connect("branch", "2", when=lambda x: x == 2).connect("branch", "3", otherwise=True)
         .connect("2", "4").connect("3", "4"))
    text = f.to_mermaid()
    for name in ("1", "branch", "2", "3", "4"):
        assert f'["{name}"]' in text
    assert "-->|when|" in text and "-->|otherwise|" in text
    assert len([line for line in text.splitlines() if "-->" in line]) == 5


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_tasks_on_ray_share_the_runs_memory() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_with_task_memory on backend="ray"."""
    board = Blackboard()
    f = (Formation("memory").add_function("write", lambda x, blackboard: blackboard.set("fact", x) or "written")
         .add_function("read", lambda x, blackboard: (x, blackboard.get("fact"))).connect("write", "read"))
    assert f.run(42, blackboard=board, backend="ray", timeout=120).output == ("written", 42)
    assert board.get("fact") == 42


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_inside_a_structure_run_task_on_ray_answers_and_streams_under_the_path() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_structure_run_task.py::test_run on backend="ray"."""
    seen: list[FormationEvent] = []
    inner = Formation("inner").add_agent("agent", Agent("agent", provider=ScriptedProvider(["agent mock output"])))
    result = Formation("outer").add_formation("sub", inner).run("go", backend="ray", timeout=120, on_event=seen.append)
    assert result.output == "agent mock output"
    assert ("node_finished", "sub/agent") in [(e.type.value, e.node) for e in seen]
