"""Human in the loop and the events of a run, from Mastra's workflow tests (mastra-ai/mastra,
``packages/core/src/workflows/workflow.test.ts``: the "Suspend and Resume", "foreach" (suspending
items), "Watch" and "Streaming" suites), ported to formations.

A Mastra step calls ``suspend(payload)``; the run ends ``suspended`` and ``run.resume({resumeData})``
runs the step again with ``resumeData`` set. Here a node calls ``interrupt(payload)`` in a journalled
run (``store=``): the run returns ``status == "suspended"``, and ``resume(run_id, answer=...)`` runs the
node's visit again, where ``interrupt`` returns the answer. ``run.watch(cb)`` is ``on_event``;
``streamLegacy`` is ``run_stream``.

Deliberately different (each test that touches one says so):
- when several items of a ``foreach`` suspend, one Mastra ``resume`` answers them all (or the one
  ``forEachIndex`` names); ours answers the lowest index first and the others ask again on the next
  resume, one question at a time;
- a Mastra foreach with concurrency 1 suspends at the first item that asks; ours lets the items after
  it run (and ask) before the run suspends;
- a Mastra resume whose data the step rejects leaves the run waiting for a better one; ours journals
  the answer, so the run fails and a new answer is refused (saying to fork the run at that step).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import NoPendingInterruptError, RunStore


def counted(counter: Counter, name: str, output: Any) -> Any:
    def step(_: Any) -> Any:
        counter.hit(name)
        return output

    return step


def asks(counter: Counter, name: str, payload: Any, output: Any) -> Any:
    """A step that suspends for a person and, once answered, returns ``output`` with the answer."""

    def step(_: Any) -> Any:
        counter.hit(name)
        answer = interrupt(payload)
        return {**output, "answer": answer}

    return step


def prompt_eval(counter: Counter) -> Formation:
    """Mastra's prompt-evaluation workflow: getUserInput → promptAgent (suspends) → evaluateTone →
    improveResponse → evaluateImproved."""
    tone = {"toneScore": {"score": 0.8}, "completenessScore": {"score": 0.7}}
    return (Formation("prompt-eval")
            .add_function("getUserInput", counted(counter, "getUserInput", {"userInput": "test input"}))
            .add_function("promptAgent", asks(counter, "promptAgent", {"testPayload": "hello"},
                                              {"modelOutput": "test output"}))
            .add_function("evaluateTone", counted(counter, "evaluateTone", tone))
            .add_function("improveResponse", counted(counter, "improveResponse", {"improvedOutput": "improved output"}))
            .add_function("evaluateImproved", counted(counter, "evaluateImproved", tone))
            .connect("getUserInput", "promptAgent", "evaluateTone", "improveResponse", "evaluateImproved"))


def test_a_suspended_step_holds_the_steps_after_it_until_resumed_and_the_steps_before_it_do_not_run_again(
        store: RunStore) -> None:
    """From workflow.test.ts "should handle basic suspend and resume flow" (Suspend and Resume and
    Streaming suites): the run suspends at promptAgent with its payload, evaluateTone has not run;
    the resume runs promptAgent again with the resume data and the rest once."""
    counter = Counter()
    f = prompt_eval(counter)
    first = f.run({"input": "test"}, store=store)
    assert first.status == "suspended"
    assert first.interrupt == {"node": "promptAgent", "payload": {"testPayload": "hello"}}
    assert first.nodes["promptAgent"].status == "suspended"
    assert first.nodes["evaluateTone"].status == "pending" and counter.count("evaluateTone") == 0
    pending = store.get(first.run_id).interrupt
    assert pending is not None and pending.payload == {"testPayload": "hello"}

    done = f.resume(first.run_id, store=store, answer={"userInput": "test input for resumption"})
    assert done.status == "succeeded"
    assert done.nodes["promptAgent"].output == {"modelOutput": "test output",
                                                "answer": {"userInput": "test input for resumption"}}
    assert done.output == {"toneScore": {"score": 0.8}, "completenessScore": {"score": 0.7}}
    assert [counter.count(n) for n in ("getUserInput", "promptAgent", "evaluateTone", "evaluateImproved")] == [1, 2, 1, 1]


def test_two_steps_that_suspend_one_after_the_other_are_each_resumed_and_the_first_does_not_run_a_third_time(
        store: RunStore) -> None:
    """From workflow.test.ts "should handle complex workflow with multiple suspends" (after the second
    resume, promptAgent has been called twice in all)."""
    counter = Counter()
    f = (Formation("multi").add_function("getUserInput", counted(counter, "getUserInput", {"userInput": "x"}))
         .add_function("promptAgent", asks(counter, "promptAgent", {"testPayload": "hello"}, {"modelOutput": "m"}))
         .add_function("evaluateTone", counted(counter, "evaluateTone", {"toneScore": 0.8}))
         .add_function("improveResponse", asks(counter, "improveResponse", {"step": "improve"}, {"improved": "i"}))
         .add_function("evaluateImproved", lambda x: {"value": "test state", **x})
         .connect("getUserInput", "promptAgent", "evaluateTone", "improveResponse", "evaluateImproved"))
    first = f.run({"input": "test"}, store=store)
    second = f.resume(first.run_id, store=store, answer="resumption")
    assert (second.status, second.interrupt) == ("suspended", {"node": "improveResponse", "payload": {"step": "improve"}})
    assert second.nodes["promptAgent"].status == "succeeded"
    assert second.nodes["evaluateTone"].output == {"toneScore": 0.8}
    third = f.resume(first.run_id, store=store, answer={"toneScore": 0.8})
    assert third.output == {"value": "test state", "improved": "i", "answer": {"toneScore": 0.8}}
    assert [counter.count(n) for n in ("getUserInput", "promptAgent", "evaluateTone", "improveResponse")] == [1, 2, 1, 2]


def test_a_branch_that_suspends_leaves_the_other_branch_unrun_and_a_formation_built_anew_resumes_it(
        store: RunStore) -> None:
    """From workflow.test.ts "should handle parallel steps with conditional suspend" (the branch taken
    suspends; explainResponse, not taken, never runs; the run is resumed through a run object built
    for the same run id)."""
    counter = Counter()

    def build() -> Formation:
        return (Formation("conditional").add_function("evaluateTone", counted(counter, "evaluateTone", {"score": 0.8}))
                .add_function("humanIntervention", asks(counter, "humanIntervention", None, {"improvedOutput": "h"}))
                .add_function("explainResponse", counted(counter, "explainResponse", {"improvedOutput": "e"}))
                .connect("evaluateTone", "humanIntervention", when=lambda _: True)
                .connect("evaluateTone", "explainResponse", when=lambda _: False))

    first = build().run({"input": "test"}, store=store)
    assert first.status == "suspended" and first.nodes["humanIntervention"].status == "suspended"
    done = build().resume(first.run_id, store=store, answer={"humanPrompt": "What improvements would you suggest?"})
    assert done.outputs == {"humanIntervention": {"improvedOutput": "h",
                                                  "answer": {"humanPrompt": "What improvements would you suggest?"}}}
    assert done.nodes["explainResponse"].status == "skipped"
    assert [counter.count(n) for n in ("evaluateTone", "humanIntervention", "explainResponse")] == [1, 2, 0]


def test_each_resume_of_a_loop_that_asks_every_round_gets_the_previous_rounds_value(store: RunStore) -> None:
    """From workflow.test.ts "should have access to the correct input value when resuming in a loop.
    bug #6669": ``.dountil(step1, condition)`` where step1 asks every round; after each resume the next
    round's input carries the value the previous round made (1, 2, 3)."""
    counter = Counter()

    def step1(x: dict[str, Any]) -> dict[str, Any]:
        counter.hit("step1")
        if not interrupt({"message": f"Continue with value {x['value']}?"}):
            return x
        value = x["value"] + 1
        return {"value": value, "condition": value >= 10}

    f = (Formation("until-var").add_function("step1", step1, max_visits=20).add_function("step2", lambda x: x)
         .connect("step1", "step1", when=lambda x: not x["condition"]).connect("step1", "step2", otherwise=True))
    result = f.run({"value": 0, "condition": False}, store=store)
    asked = [result.interrupt["payload"]["message"]]  # type: ignore[index]
    for _ in range(3):
        result = f.resume(result.run_id, store=store, answer={"shouldContinue": True})
        asked.append(result.interrupt["payload"]["message"])  # type: ignore[index]
    assert result.status == "suspended"
    assert asked == [f"Continue with value {v}?" for v in range(4)]
    assert result.nodes["step1"].outputs == [{"value": 1, "condition": False}, {"value": 2, "condition": False},
                                             {"value": 3, "condition": False}]
    assert counter.count("step1") == 7  # each round's visit: asked, then run again with its answer


def test_a_step_that_asks_inside_a_nested_formation_in_a_loop_suspends_each_round_until_the_loop_ends(
        store: RunStore) -> None:
    """From workflow.test.ts "should handle basic suspend and resume in a dountil workflow": a
    ``.dountil`` over a nested workflow (increment → resume, which asks for an amount to add) until
    the value reaches 10: an answer of 2 leaves it at 3 (the loop goes round and asks again), 21 ends
    it. Mastra's ``resume`` step asks again within the same round; ours asks once per round, so the
    loop itself goes round, and the rounds before are not run again."""
    counter = Counter()

    def increment(x: dict[str, int]) -> dict[str, int]:
        counter.hit("increment")
        return {"value": x["value"] + 1}

    def resume_step(x: dict[str, int]) -> dict[str, int]:
        counter.hit("resume")
        more = interrupt({"message": f"Please provide additional information. now value is {x['value']}"})
        return {"value": x["value"] + more}

    inner = (Formation("simple-resume-workflow").add_function("increment", increment)
             .add_function("resume", resume_step).connect("increment", "resume"))
    f = (Formation("dowhile").add_formation("simple", inner).add_function("final", lambda x: x)
         .connect("simple", "simple", when=lambda x: x["value"] < 10).connect("simple", "final", otherwise=True))
    first = f.run({"value": 0}, store=store)
    message = "Please provide additional information. now value is {}"
    assert first.interrupt == {"node": "simple/resume", "payload": {"message": message.format(1)}}
    second = f.resume(first.run_id, store=store, answer=2)
    assert second.interrupt == {"node": "simple/resume", "payload": {"message": message.format(4)}}
    assert second.nodes["simple"].outputs == [{"value": 3}]
    done = f.resume(first.run_id, store=store, answer=21)
    assert done.output == {"value": 25}
    assert done.nodes["simple"].visits == 2
    assert (counter.count("increment"), counter.count("resume")) == (2, 4)  # each round's increment once


def test_items_of_a_foreach_that_ask_are_answered_one_by_one_and_an_item_that_did_not_ask_runs_once(
        store: RunStore) -> None:
    """From workflow.test.ts "should suspend and resume when running all items concurrency for loop"
    (items 22 and 333 ask, 1 does not; then ``final`` sums the outputs). Deliberately different: one
    Mastra resume answers both items; ours answers item 0 and then item 2, one resume each."""
    counter = Counter()

    def mapped(x: dict[str, int]) -> dict[str, int]:
        counter.hit(x["value"])
        more = interrupt({"value": x["value"]}) if x["value"] > 5 else 0
        return {"value": x["value"] + 11 + more}

    f = (Formation("counter").add_map("map", mapped, max_workers=3)
         .add_function("final", lambda items: {"finalValue": sum(i["value"] for i in items)}).connect("map", "final"))
    first = f.run([{"value": 22}, {"value": 1}, {"value": 333}], store=store)
    assert first.interrupt == {"node": "map", "payload": {"value": 22}}
    second = f.resume(first.run_id, store=store, answer=5)
    assert second.interrupt == {"node": "map", "payload": {"value": 333}}
    done = f.resume(first.run_id, store=store, answer=5)
    assert done.nodes["map"].output == [{"value": 38}, {"value": 12}, {"value": 349}]
    assert done.output == {"finalValue": 22 + 11 + 5 + 1 + 11 + 333 + 11 + 5}
    assert counter.count(1) == 1 and counter.count(22) == 2


def test_a_one_at_a_time_foreach_whose_items_all_ask_gets_its_answers_in_item_order(store: RunStore) -> None:
    """From workflow.test.ts "should suspend and resume when running a single item concurrency
    (default) for loop" (three resumes, the items answered in order). Deliberately different: Mastra
    suspends at the first item that asks and starts the next after its answer; ours runs the items
    after it meanwhile (they ask too), and asks them again on the following resumes."""
    counter = Counter()

    def mapped(x: dict[str, int]) -> dict[str, int]:
        counter.hit(x["value"])
        return {"value": x["value"] + 11 + interrupt({"value": x["value"]})}

    f = Formation("single").add_map("map", mapped, max_workers=1)
    result = f.run([{"value": 1}, {"value": 22}, {"value": 333}], store=store)
    asked = []
    for answer in (0, 5, 0):
        asked.append(result.interrupt["payload"]["value"])  # type: ignore[index]
        result = f.resume(result.run_id, store=store, answer=answer)
    assert asked == [1, 22, 333]
    assert result.status == "succeeded"
    assert result.output == [{"value": 12}, {"value": 38}, {"value": 344}]
    assert counter.count(1) == 2  # asked, then answered: not run again once journalled


def test_a_runs_events_say_when_each_step_starts_with_its_input_and_ends_with_its_output() -> None:
    """From workflow.test.ts "should generate a stream" and "should watch workflow state changes and call
    onTransition" (start, each step's start and result, finish with the run's result)."""
    f = (Formation("watched").add_function("step1", lambda _: {"result": "success1"})
         .add_function("step2", lambda x: {"result": "success2"}).connect("step1", "step2"))
    events = list(f.run_stream({}))
    assert [(e.type.value, e.node) for e in events] == [
        ("run_started", None), ("node_started", "step1"), ("node_finished", "step1"),
        ("node_started", "step2"), ("node_finished", "step2"), ("run_finished", None)]
    assert events[3].data["input"] == {"result": "success1"}
    assert events[4].data["output"] == {"result": "success2"}
    assert events[-1].data["result"].output == {"result": "success2"}
    assert len({e.run_id for e in events}) == 1


def test_a_listener_given_to_one_run_hears_only_that_run() -> None:
    """From workflow.test.ts "should unsubscribe from transitions when unwatch is called" (a watcher of
    one run is not called for another run's transitions)."""
    first: list[FormationEvent] = []
    second: list[FormationEvent] = []

    def both(e: FormationEvent) -> None:
        first.append(e)
        second.append(e)

    f = (Formation("runs").add_function("step1", lambda x: x).add_function("step2", lambda x: x)
         .connect("step1", "step2"))
    with f.start() as running:
        one = running.submit(1, on_event=both)
        one.result(timeout=10)
        two = running.submit(2, on_event=second.append)
        two.result(timeout=10)
        three = running.submit(3, on_event=first.append)
        three.result(timeout=10)
    assert collections.Counter(e.run_id for e in first) == {one.run_id: 6, three.run_id: 6}
    assert collections.Counter(e.run_id for e in second) == {one.run_id: 6, two.run_id: 6}


def test_an_answer_the_step_rejected_is_replayed_by_resume_and_a_new_answer_is_refused_saying_to_fork(
        store: RunStore) -> None:
    """From concurrent-resume.test.ts "allows another resume after an in-flight resume rejects" (a
    resume whose data the step refuses leaves the run waiting, and the next resume with good data
    succeeds). Deliberately different: our answer is journalled before the step judges it, and a
    resume of the failed run replays it (the visit fails again), so a new ``answer=`` is refused;
    the refusal names the step and the answer it keeps, and says to fork the run at that step, which
    asks again."""
    counter = Counter()

    def approve(x: dict[str, Any]) -> dict[str, bool]:
        counter.hit("approve")
        answer = interrupt({"waiting": True})
        if answer is not True:
            raise ValueError(f"approved must be true, got {answer!r}")
        return {"resumed": True}

    f = Formation("rejects").add_function("start", lambda x: x).add_function("approve", approve).connect("start", "approve")
    first = f.run({}, store=store)
    with pytest.raises(FormationRuntimeError, match="approved must be true, got False"):
        f.resume(first.run_id, store=store, answer=False)
    with pytest.raises(NoPendingInterruptError) as refused:
        f.resume(first.run_id, store=store, answer=True)
    message = str(refused.value)
    assert "'approve'" in message and "False" in message and "fork" in message
    forked = f.fork(first.run_id, store=store, at="approve", input={})
    assert store.get(forked).interrupt is not None
    assert f.resume(forked, store=store, answer=True).output == {"resumed": True}
    assert counter.count("approve") == 4  # asked, rejected, asked again in the fork, approved


STRICT_APPROVAL = '''from wingman_actors import Formation, interrupt


def approve(x):
    answer = interrupt({"waiting": True})
    if answer is not True:
        raise ValueError(f"approved must be true, got {answer!r}")
    return {"resumed": True}


formation = Formation("rejects").add_function("start", lambda x: x).add_function("approve", approve)
formation.connect("start", "approve")
'''


def test_the_launchers_refusal_of_a_new_answer_gives_the_fork_command_that_asks_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """From concurrent-resume.test.ts "allows another resume after an in-flight resume rejects", through
    ``wingman-actors``: ``resume --answer`` of the run whose step rejected its answer says which answer
    a resume replays and prints the ``fork`` command; that fork asks again, and its answer finishes it."""
    module, store = tmp_path / "rejects.py", str(tmp_path / "runs.sqlite")
    module.write_text(STRICT_APPROVAL)
    assert main(["run", str(module), "--input", "{}", "--store", store]) == 0
    run_id = "".join(capsys.readouterr()).split("wingman-actors resume ")[1].split()[0]
    assert main(["resume", run_id, "--store", store, "--answer", "false"]) == 1
    capsys.readouterr()
    assert main(["resume", run_id, "--store", store, "--answer", "true"]) == 2
    err = capsys.readouterr().err
    assert "node 'approve' (visit 1) got False" in err
    fork = f"wingman-actors fork {run_id} --at approve:1 --input JSON --store {store}"
    assert fork in err and "Traceback" not in err
    main(["fork", run_id, "--at", "approve:1", "--input", "{}", "--store", store])
    forked = "".join(capsys.readouterr()).split("wingman-actors resume ")[1].split()[0]
    assert forked != run_id
    assert main(["resume", forked, "--store", store, "--answer", "true"]) == 0
    assert '"resumed": true' in "".join(capsys.readouterr())
