"""More of Mastra's workflow tests (mastra-ai/mastra, ``packages/core/src/workflows/``): the regression
files ``nested-non-success-result.test.ts`` (a loop condition that throws is a truthful failure),
``__tests__/parallel-allow-failure.test.ts`` (``.parallel(steps, {allowFailure: true})``),
``concurrent-resume.test.ts``, ``foreach-nested-workflow.test.ts`` and
``foreach-suspend-payload.test.ts``, ported to formations.

``allowFailure`` is ``on_error="skip"`` on the parallel steps (the step after them gets ``None`` for a
skipped one, the default of its keyword); ``forEachIndex`` has no counterpart (see
test_peer_mastra_suspend.py: items are answered lowest index first).

Deliberately different: when every step of an ``allowFailure`` parallel fails, Mastra runs the next
step with nulls; ours skips it too (a node none of whose incoming edges fire is skipped).
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter, until
from wingman_actors import Agent, Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunNotResumableError, RunStore
from wingman_actors.testing import ScriptedProvider


def malformed(_: Any) -> bool:
    raise ValueError("malformed iteration output")


def test_a_loop_condition_that_raises_fails_the_run_and_the_looping_nodes_trace_says_failed(store: RunStore) -> None:
    """From nested-non-success-result.test.ts "surfaces a dowhile condition throw as a truthful run
    failure": ``.dowhile(nested, cond)`` whose condition throws: the run fails with the condition's
    error, the nested workflow's step says ``failed``, and the stored run says ``failed`` (not a run
    stuck ``running``)."""
    nested = Formation("nested-workflow").add_function("nested-step", lambda x: x)
    f = (Formation("parent").add_formation("nested", nested).add_function("after", lambda x: x)
         .connect("nested", "nested", when=malformed).connect("nested", "after", otherwise=True))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({}, store=store, run_id="loop-condition")
    err = caught.value
    assert err.node == "nested" and isinstance(err.__cause__, ValueError)
    assert "malformed iteration output" in str(err)
    assert err.nodes["nested"].status == "failed"
    assert "malformed iteration output" in (err.nodes["nested"].error or "")
    record = store.get("loop-condition")
    assert record.status == "failed" and "malformed iteration output" in (record.error or "")


def test_a_condition_that_raises_on_a_plain_steps_output_fails_that_steps_trace_too() -> None:
    """From nested-non-success-result.test.ts (the same, on a function step and a forward branch): the
    run's error names the step, and so does its trace."""
    f = Formation("branch").add_function("classify", lambda x: x).add_function("next", lambda x: x)
    f.connect("classify", "next", when=malformed)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1)
    trace = caught.value.nodes["classify"]
    assert (caught.value.node, trace.status) == ("classify", "failed")
    assert trace.error is not None and "condition malformed of edge 'classify' → 'next'" in trace.error
    assert trace.output == 1  # its own code succeeded: the output it made is kept


def boom(_: Any) -> Any:
    raise ValueError("Step execution failed")


def test_a_parallel_step_allowed_to_fail_is_none_to_the_step_after_and_the_run_succeeds() -> None:
    """From parallel-allow-failure.test.ts "should allow failed steps when allowFailure is true"
    (``success=ok, failed=yes``)."""

    def downstream(success: dict[str, str] | None = None, failing: dict[str, str] | None = None) -> dict[str, str]:
        value = success["value"] if success else "none"
        return {"result": f"success={value}, failed={'yes' if failing is None else 'no'}"}

    f = (Formation("allow-failure").add_function("begin", lambda x: x)
         .add_function("success", lambda _: {"value": "ok"}).add_function("failing", boom, on_error="skip")
         .add_function("downstream", downstream)
         .connect("begin", "success", "downstream").connect("begin", "failing", "downstream"))
    result = f.run({})
    assert result.output == {"result": "success=ok, failed=yes"}
    assert (result.nodes["success"].status, result.nodes["failing"].status) == ("succeeded", "skipped")
    assert result.nodes["failing"].error == "ValueError: Step execution failed"


def test_when_every_parallel_step_allowed_to_fail_fails_the_step_after_them_is_skipped_too() -> None:
    """From parallel-allow-failure.test.ts "should handle all steps failing with allowFailure".
    Deliberately different: Mastra runs ``downstream`` with nulls (``allNull: true``); ours skips it,
    as any node none of whose incoming edges fire, and the run ends with no output."""
    counter = Counter()
    f = (Formation("all-fail").add_function("begin", lambda x: x)
         .add_function("failing-1", boom, on_error="skip").add_function("failing-2", boom, on_error="skip")
         .add_function("downstream", lambda **kw: counter.hit("downstream"))
         .connect("begin", "failing-1", "downstream").connect("begin", "failing-2", "downstream"))
    result = f.run({})
    assert result.status == "succeeded" and result.outputs == {}
    assert result.nodes["downstream"].status == "skipped" and counter.count("downstream") == 0


def test_a_parallel_step_that_suspends_wins_over_a_sibling_allowed_to_fail(store: RunStore) -> None:
    """From parallel-allow-failure.test.ts "should suspend correctly when one step suspends and another
    fails with allowFailure"; then the resume finishes the run with the failed sibling skipped."""
    counter = Counter()

    def failing(x: Any) -> Any:
        counter.hit("failing")
        return boom(x)

    f = (Formation("suspend-and-fail").add_function("begin", lambda x: x)
         .add_function("suspending", lambda _: {"value": interrupt({"waiting": True})})
         .add_function("failing", failing, on_error="skip")
         .connect("begin", "suspending").connect("begin", "failing"))
    first = f.run({}, store=store)
    assert first.status == "suspended" and first.interrupt == {"node": "suspending", "payload": {"waiting": True}}
    done = f.resume(first.run_id, store=store, answer="resumed")
    assert done.outputs == {"suspending": {"value": "resumed"}}
    assert done.nodes["failing"].status == "skipped"


def test_a_second_resume_of_a_run_being_resumed_is_refused_and_the_step_after_runs_once(store: RunStore) -> None:
    """From concurrent-resume.test.ts "executes downstream steps at most once for the same suspended
    run". Mastra's second resume waits and reports success; ours is refused at once, saying the run is
    running, and the first resume finishes it."""
    counter = Counter()
    entered, release = threading.Event(), threading.Event()

    def downstream(_: Any) -> dict[str, bool]:
        counter.hit("downstream")
        entered.set()
        release.wait(5)
        return {"completed": True}

    f = (Formation("concurrent-resume").add_function("suspending", lambda _: {"resumed": interrupt({"waiting": True})})
         .add_function("downstream", downstream).connect("suspending", "downstream"))
    first = f.run({}, store=store)
    try:
        with f.start(store=store) as running:
            resumed = running.resume(first.run_id, answer=True)
            assert entered.wait(5)
            with pytest.raises(RunNotResumableError, match="it is running"):
                running.resume(first.run_id, answer=True)
            with pytest.raises(RunNotResumableError, match="it is running"):
                f.resume(first.run_id, store=store)
            release.set()
            assert resumed.result(timeout=10).output == {"completed": True}
    finally:
        release.set()
    assert counter.count("downstream") == 1


@pytest.mark.parametrize("max_workers", [1, 10])
def test_a_foreach_over_a_nested_formation_whose_odd_items_ask_fills_each_answer_into_its_place(
        max_workers: int, store: RunStore) -> None:
    """From foreach-nested-workflow.test.ts "starts a fresh child run for each iteration when siblings
    suspend (concurrency 1, 10)": items 1, 3, 5, 7, 9 ask; five resumes (ours: lowest index first)
    give ``[0, 101, 2, 103, ...]``."""
    counter = Counter()

    def maybe_suspend(n: int) -> int:
        counter.hit(n)
        return n + (interrupt({"value": n})["add"] if n % 2 == 1 else 0)

    child = Formation("child").add_function("maybe-suspend", maybe_suspend)
    parent = Formation("parent").add_map("child", formation=child, max_workers=max_workers)
    result = parent.run(list(range(10)), store=store)
    asked = []
    while result.status == "suspended":
        asked.append(result.interrupt["payload"]["value"])  # type: ignore[index]
        result = parent.resume(result.run_id, store=store, answer={"add": 100})
    assert asked == [1, 3, 5, 7, 9]
    assert result.output == [0, 101, 2, 103, 4, 105, 6, 107, 8, 109]
    assert all(counter.count(n) == 1 for n in range(0, 10, 2))  # the items that asked nothing ran once


def test_each_suspended_foreach_items_payload_is_kept_until_its_turn_comes(store: RunStore) -> None:
    """From foreach-suspend-payload.test.ts (each iteration's ``suspendPayload`` survives the resumes of
    its siblings, and the last resume completes the workflow with every item's answer)."""

    def approval(item: dict[str, str]) -> dict[str, Any]:
        answer = interrupt({"streamState": {"name": item["name"], "token": f"tok-{item['name']}"}})
        return {"name": item["name"], "approved": answer["approved"]}

    f = Formation("foreach-suspend-payload").add_map("approval", approval, max_workers=3)
    result = f.run([{"name": "alpha"}, {"name": "beta"}, {"name": "gamma"}], store=store)
    for index, (name, approved) in enumerate([("alpha", True), ("beta", False), ("gamma", True)]):
        pending = store.get(result.run_id).interrupt
        assert pending is not None and (pending.node, pending.item) == ("approval", index)
        assert pending.payload == {"streamState": {"name": name, "token": f"tok-{name}"}}
        assert result.interrupt == {"node": "approval", "payload": pending.payload}
        result = f.resume(result.run_id, store=store, answer={"approved": approved})
    assert result.output == [{"name": "alpha", "approved": True}, {"name": "beta", "approved": False},
                             {"name": "gamma", "approved": True}]


def bang(x: dict[str, Any], blackboard: Blackboard) -> dict[str, str]:
    """Mastra's nested step that reads the workflow state and sets it (``setState``)."""
    blackboard.set("value", blackboard.get("value") + "!!!")
    return {"result": "success", "value": blackboard.get("value")}


def test_a_nested_formation_shares_the_outer_runs_state_both_ways() -> None:
    """From workflow.test.ts "should pass state to nested workflow" (``initialState``; the nested step
    sees ``test-state`` and its ``setState`` is what the outer workflow sees after it): the run's
    blackboard."""
    nested = (Formation("nested-workflow").add_function("step1", lambda x: x).add_function("step2", bang)
              .connect("step1", "step2"))

    def after(x: dict[str, str], blackboard: Blackboard) -> dict[str, str]:
        return {**x, "seen": blackboard.get("value")}

    f = Formation("test-workflow").add_formation("nested", nested).add_function("after", after).connect("nested", "after")
    board = Blackboard({"value": "test-state", "otherValue": "test-other-state"})
    result = f.run({}, blackboard=board)
    assert result.output == {"result": "success", "value": "test-state!!!", "seen": "test-state!!!"}
    assert board.get("otherValue") == "test-other-state"


def test_agents_in_parallel_one_inside_a_nested_formation_feed_one_step_and_their_tokens_count_once() -> None:
    """From workflow.test.ts "should be able to use an agent in parallel" (an agent step beside a
    nested workflow holding one; ``finalStep`` gets both texts): each agent's text streams under its
    node's path, and the run's usage counts the nested agent's tokens once."""
    paris = Agent("test-agent-1", provider=ScriptedProvider([lambda request: "Paris"], cycle=True))
    london = Agent("test-agent-2", provider=ScriptedProvider([lambda request: "London"], cycle=True))
    texts: list[tuple[str | None, str]] = []

    def note(e: FormationEvent) -> None:
        if e.type == "agent_text":
            texts.append((e.node, e.data["text"]))

    nested = Formation("nested-workflow").add_agent("agent", paris, prompt="{prompt1}")
    f = (Formation("test-workflow").add_function("start", lambda x: x).add_formation("nested-workflow", nested)
         .add_agent("agent2", london, prompt="{prompt2}").add_function("finalStep", lambda joined: joined)
         .connect("start", "nested-workflow", "finalStep").connect("start", "agent2", "finalStep"))
    result = f.run({"prompt1": "Capital of France", "prompt2": "Capital of UK"}, on_event=note)
    assert result.output == {"nested-workflow": "Paris", "agent2": "London"}
    assert sorted(texts) == [("agent2", "London"), ("nested-workflow/agent", "Paris")]
    nodes = result.nodes
    assert nodes["nested-workflow"].usage == nodes["nested-workflow/agent"].usage
    assert result.usage.total_tokens == nodes["nested-workflow"].usage.total_tokens + nodes["agent2"].usage.total_tokens > 0


def test_a_loop_over_a_foreach_of_nested_formations_whose_items_ask_is_answered_round_after_round(
        store: RunStore) -> None:
    """From workflow.test.ts "should handle basic suspend and resume in a dountil workflow" and
    foreach-nested-workflow.test.ts, together: a ``.dountil`` around a ``.foreach`` of a nested workflow
    whose odd items ask. Each question names the item's inner step by path; items answered in an earlier
    round, or that asked nothing, are not run again by later resumes."""
    counter = Counter()

    def item(n: int) -> int:
        counter.hit(n)
        return n + interrupt({"n": n}) if n % 2 else n

    child = Formation("child").add_function("item", item)
    f = (Formation("loop-foreach").add_function("seed", lambda xs: xs).add_map("each", formation=child, max_workers=2)
         .add_function("bump", lambda xs: [x + 1 for x in xs]).add_function("done", lambda xs: xs)
         .connect("seed", "each", "bump").connect("bump", "each", when=lambda xs: sum(xs) < 30)
         .connect("bump", "done", otherwise=True))
    result = f.run([0, 1], store=store)
    asked = []
    while result.status == "suspended":
        asked.append((result.interrupt["node"], result.interrupt["payload"]["n"]))  # type: ignore[index]
        result = f.resume(result.run_id, store=store, answer=10)
    assert asked == [("each/1/item", 1), ("each/0/item", 1), ("each/1/item", 13)]
    assert result.output == [13, 24]
    assert result.nodes["each"].visits == 3
    assert (counter.count(0), counter.count(12)) == (1, 2)  # 12: round 2 (item 1) and round 3 (item 0), once each


def test_a_suspended_run_cancelled_in_the_store_resumes_even_after_its_inner_runs_outlived_the_suspend_ttl(
        tmp_path: Path) -> None:
    """From cancel-nested-restart.test.ts "cancels suspended child and grandchild runs from a recreated
    run": a run suspended two formations deep, cancelled through a store opened anew. Mastra cascades
    the cancel to the nested runs; ours ends the outer run (``set_status(run_id, "cancelled")``, which
    keeps it resumable with its answer and ends its expiry), and the inner runs wait on as its parts.
    A resume after the store's ``suspend_ttl`` used to fail, the inner runs having expired on their own;
    an inner run's wait is its outer run's, so the resume finishes all three."""
    def build() -> Formation:
        grandchild = Formation("grandchild").add_function("wait-for-approval", lambda _: interrupt({}))
        child = Formation("child").add_formation("grandchild", grandchild)
        return (Formation("parent").add_formation("child", child).add_function("after", lambda x: {"approved": x})
                .connect("child", "after"))

    path = tmp_path / "runs.sqlite"
    with RunStore(path, suspend_ttl=timedelta(milliseconds=50)) as first:
        run_id = build().run({}, store=first).run_id
    inner = [f"{run_id}/child/1", f"{run_id}/child/1/grandchild/1"]
    with RunStore(path, suspend_ttl=timedelta(milliseconds=50)) as store:
        store.set_status(run_id, "cancelled", wait=True)
        assert until(lambda: store.expire() >= 0 and all(store.get(i).status == "expired" for i in inner))
        assert store.get(run_id).status == "cancelled"
        done = build().resume(run_id, store=store, answer="yes")
        assert done.output == {"approved": "yes"}
        assert [store.get(i).status for i in [run_id, *inner]] == ["succeeded"] * 3
