"""More behaviours ported from CrewAI's own test suite (crewAIInc/crewAI,
``lib/crewai/tests/test_flow_persistence.py``, and ``test_flow.py`` on ``backend="ray"``):
persisted flow state and a flow continued from it, human feedback that routes the flow,
and flows whose steps are Ray actors. (Split from ``test_peer_crewai.py``, whose module
docstring maps CrewAI's Flow onto formations and lists what DESIGN does differently.)

Deliberately different, or without a counterpart:
- ``@persist`` saves ``self.state`` after a method; our journal records each node
  visit's output (``RunStore.history``), and ``resume`` continues an unfinished run
  without running its journalled visits again.
- ``kickoff(inputs={"id": ...})`` on a finished flow restores its state and runs it
  again with overrides; ours refuses to resume a finished run
  (test_peer_langgraph_resume.py), and a new run starts from its input.
- ``@human_feedback`` asks a provider (the console, or an async one that raises
  ``HumanFeedbackPending``) and emits a label; ours is ``interrupt()`` in the step, the
  run suspended until ``resume(answer=...)``, and ``when=`` on the answer.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from tests.formation.test_peer_crewai import cyclic, step
from tests.support.peers import Counter, Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

# --- persistence --------------------------------------------------------------------


def test_a_journalled_run_that_failed_resumes_without_running_its_persisted_steps_again(store: RunStore) -> None:
    """crewai test_flow_persistence.py::test_multiple_method_persistence (a second kickoff
    with the first's id picks up the persisted state): ours, ``resume`` of the failed run;
    step_1 is journalled and not run again, step_2 runs on its output."""
    counter, broken = Counter(), [True]

    def step_2(s: dict[str, Any]) -> dict[str, Any]:
        counter.hit("step_2")
        if broken[0]:
            raise ConnectionError("flaky")
        return {**s, "counter": 2, "message": "Step 2"}

    f = (Formation("persisted").add_function("step_1", step("step_1", counter))
         .add_function("step_2", step_2).connect("step_1", "step_2"))
    with pytest.raises(FormationRuntimeError):
        f.run({"counter": 1, "message": "Step 1"}, store=store, run_id="flow-1")
    broken[0] = False
    result = f.resume("flow-1", store=store)
    assert result.output == {"counter": 2, "message": "Step 2"}
    assert counter.calls == {"step_1": 1, "step_2": 2}


def test_the_journal_keeps_each_steps_output_for_the_run_id(store: RunStore) -> None:
    """crewai test_persist_decorator_saves_state and test_structured_state_persistence
    (``persistence.load_state(id)``): ours, ``store.history(run_id)``."""
    f = (Formation("saved").add_function("init_step", lambda s: {**s, "message": "Hello, World!"})
         .add_function("count_up", lambda s: {**s, "counter": s["counter"] + 1}).connect("init_step", "count_up"))
    result = f.run({"counter": 0}, store=store)
    history = store.history(result.run_id)
    assert [(v.node, v.output) for v in history] == [
        ("init_step", {"counter": 0, "message": "Hello, World!"}),
        ("count_up", {"counter": 1, "message": "Hello, World!"})]
    assert store.get(result.run_id).status == "succeeded"


def test_a_cycle_that_failed_mid_way_resumes_in_the_iteration_it_stopped(store: RunStore) -> None:
    """crewai's CyclicFlow with persistence: the iterations journalled are not run again."""
    counter, broken = Counter(), [True]

    def step_2(i: int) -> int:
        counter.hit(i)
        if i == 2 and broken[0]:
            raise RuntimeError("down")
        return i

    f = cyclic(3)
    f.graph.nodes["step_2"]["fn"] = step_2
    with pytest.raises(FormationRuntimeError):
        f.run(0, store=store, run_id="cycle-1")
    broken[0] = False
    result = f.resume("cycle-1", store=store)
    assert result.output == "done after 3"
    assert counter.calls == {0: 1, 1: 1, 2: 2}


# --- human feedback -----------------------------------------------------------------


def review(draft: Any) -> tuple[str, int]:
    """A step under ``@human_feedback(emit=["approved", "needs_revision"])``: asks, then
    passes the answer on with the draft for the router's ``when=``."""
    number = draft[1] if isinstance(draft, tuple) else draft
    return interrupt({"draft": number}), number


def approval(**policies: Any) -> Formation:
    """CrewAI's documented approval flow: generate_draft → review (human) → publish on
    "approved", back to generate_draft on "needs_revision" (``kickoff`` is the entry)."""
    return (Formation("approval").add_function("kickoff", lambda n: n)
            .add_function("generate_draft", lambda d: (d[1] if isinstance(d, tuple) else d) + 1)
            .add_function("review", review, **policies).add_function("publish", lambda r: f"published draft {r[1]}")
            .connect("kickoff", "generate_draft", "review")
            .connect("review", "generate_draft", when=lambda r: r[0] == "needs_revision")
            .connect("review", "publish", when=lambda r: r[0] == "approved"))


def test_human_feedback_suspends_the_flow_and_each_answer_routes_it(store: RunStore) -> None:
    """crewai ``@human_feedback(emit=[...])`` (docs, "Human Feedback in Flows"): the run
    stops at review with the draft; "needs_revision" sends it back round, "approved" on."""
    first = approval().run(0, store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "review", "payload": {"draft": 1}})
    second = approval().resume(first.run_id, store=store, answer="needs_revision")
    assert second.interrupt == {"node": "review", "payload": {"draft": 2}}
    done = approval().resume(first.run_id, store=store, answer="approved")
    assert (done.status, done.output) == ("succeeded", "published draft 2")
    assert done.nodes["generate_draft"].outputs == [1, 2]


# --- a step that returns an awaitable -----------------------------------------------


async def _later(value: int) -> int:
    await asyncio.sleep(0)
    return value + 1


def test_a_step_that_returns_a_coroutine_fails_saying_to_declare_it_async_def() -> None:
    """crewai test_mixed_sync_async_execution_order's async methods, wrapped as users wrap
    them (a lambda or a sync decorator around an ``async def``). DESIGN awaits ``async def``
    functions; a plain function returning a coroutine fails its visit naming the fix,
    instead of passing an un-awaited coroutine on as its output (it used to succeed so),
    and the coroutine is closed, not left for Python to warn about."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine ... was never awaited"
        with pytest.raises(FormationRuntimeError, match=r"'step'") as failed:
            Formation("wrapped").add_function("step", lambda v: _later(v)).run(1)
        gc.collect()
    cause = failed.value.__cause__
    assert isinstance(cause, TypeError) and "async def" in str(cause) and "_later" in str(cause)
    assert Formation("declared").add_function("step", _later).run(1).output == 2  # declared async def: awaited


def test_a_map_function_that_returns_a_coroutine_fails_its_items_saying_to_declare_it_async_def() -> None:
    with pytest.raises(FormationRuntimeError) as failed:
        Formation("wrapped-map").add_map("each", lambda v: _later(v)).run([1, 2])
    assert "async def" in str(failed.value.__cause__ or failed.value)
    assert Formation("declared-map").add_map("each", _later).run([1, 2]).output == [2, 3]


# --- backend="ray" ------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_router_driven_cycle_on_ray_runs_each_iteration_in_order() -> None:
    """crewai test_cyclic_flow on backend="ray": each step a Ray actor, same order."""
    order = Order()
    result = cyclic(3).run(0, backend="ray", timeout=120, on_event=order)
    assert order.nodes == ["kickoff"] + ["step_1", "step_2", "step_3"] * 3 + ["exit"]
    assert result.output == "done after 3"


def _raise_value_error(v: Any) -> None:
    """A module-level step (a Ray actor pickles its function by reference)."""
    raise ValueError("An error occurred in step_1")


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_step_that_raises_on_ray_fails_the_run_naming_the_node() -> None:
    """crewai test_flow_with_exceptions on backend="ray": the failure crosses the process."""
    f = Formation("boom_ray").add_function("step_1", _raise_value_error).add_function("step_2", step("step_2"))
    with pytest.raises(FormationRuntimeError, match=r"step_1") as info:
        f.connect("step_1", "step_2").run(None, backend="ray", timeout=120)
    assert info.value.node == "step_1"
    assert info.value.nodes["step_2"].attempts == 0


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_human_feedback_on_ray_suspends_and_resumes_from_the_journal(store: RunStore) -> None:
    """crewai ``@human_feedback`` with persistence, on backend="ray": the journalled run
    suspends in a Ray actor and each resume continues it there."""
    first = approval().run(0, store=store, backend="ray", timeout=120)
    assert first.interrupt == {"node": "review", "payload": {"draft": 1}}
    second = approval().resume(first.run_id, store=store, answer="needs_revision", backend="ray", timeout=120)
    assert second.interrupt == {"node": "review", "payload": {"draft": 2}}
    done = approval().resume(first.run_id, store=store, answer="approved", backend="ray", timeout=120)
    assert done.output == "published draft 2"
