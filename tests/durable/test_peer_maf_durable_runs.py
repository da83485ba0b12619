"""Microsoft Agent Framework's guards on runs of one workflow and its pending-request states
(python/packages/core/tests/workflow/ in microsoft/agent-framework: test_workflow.py's concurrent-run
prevention, test_workflow_states.py's IDLE_WITH_PENDING_REQUESTS), ported to journalled runs: the
guard is per run (one resume of a suspended run at a time, one run per id), and the async API
suspends and resumes as the sync one does."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray, until  # noqa: F401  (a fixture)
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunNotResumableError, RunStore, StoreError


def test_two_resumes_of_one_suspended_run_at_once_one_runs_and_the_other_is_refused(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_concurrent_execution_prevention ("Workflow is already
    running; concurrent runs are not allowed on the same instance", and a run after the first ends
    succeeds). Ours guards the run: a second resume while the first is running is refused, saying
    so; the answer given to the refused one is not used."""
    gate, counter = threading.Event(), Counter()

    def after(answer: str) -> str:
        counter.hit(answer)
        assert gate.wait(10)
        return answer

    f = Formation("once").add_function("ask", lambda m: interrupt("q?")).add_function("after", after).connect("ask", "after")
    run_id = f.run(1, store=store).run_id
    outcomes: dict[str, Any] = {}

    def resume(answer: str) -> None:
        try:
            outcomes[answer] = f.resume(run_id, store=store, answer=answer, timeout=20).output
        except RunNotResumableError as exc:
            outcomes[answer] = exc

    first = threading.Thread(target=resume, args=("A",))
    first.start()
    try:
        assert until(lambda: counter.count("A") == 1, within=10)
        resume("B")
    finally:
        gate.set()
        first.join(20)

    assert outcomes["A"] == "A"
    assert isinstance(outcomes["B"], RunNotResumableError) and "running" in str(outcomes["B"])
    assert counter.count("B") == 0
    assert store.get(run_id).status == "succeeded"


def test_a_run_id_already_in_the_store_is_refused_naming_it(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_concurrent_execution_prevention_mixed_methods (a second
    start of what is already there is refused, whichever method starts it)."""
    f = Formation("ids").add_function("x", lambda v: v)
    f.run(1, store=store, run_id="run-1")

    async def arun() -> Any:
        return await f.arun(3, store=store, run_id="run-1")

    for start in (lambda: f.run(2, store=store, run_id="run-1"), lambda: asyncio.run(arun())):
        try:
            start()
        except StoreError as exc:
            assert "'run-1' already exists" in str(exc)
        else:
            raise AssertionError("a second run with the id run-1 was accepted")
    assert [r.id for r in store.runs()] == ["run-1"]


def test_a_suspended_stream_reports_the_asking_node_started_and_the_run_waiting_with_its_request(store: RunStore) -> None:
    """From test_workflow_states.py::test_idle_with_pending_requests_status_streaming (a request_info
    event, then the IDLE_WITH_PENDING_REQUESTS status last). Ours has no event of its own for the
    request: the asking node's ``node_started`` is its last event, and ``run_finished`` says
    ``suspended`` with the request on its result."""
    f = Formation("wf").add_function("simple", lambda m: m).add_function("req", lambda m: interrupt("Mock request data")).connect("simple", "req")
    events: list[FormationEvent] = list(f.run_stream("start", store=store))

    assert [(e.type, e.node) for e in events if e.node == "req"] == [("node_started", "req")]
    assert events[-1].type == "run_finished" and events[-1].data["suspended"] is True
    assert events[-1].data["result"].interrupt == {"node": "req", "payload": "Mock request data"}


def test_the_async_api_suspends_inside_sub_workflows_and_a_map_of_them_and_resumes_each_in_turn(store: RunStore) -> None:
    """From test_sub_workflow.py::test_concurrent_sub_workflow_execution and
    test_request_info_and_response.py (the workflow API is async): ``arun`` suspends, each
    ``aresume_stream`` answers one question, the questions come from the sub-workflow and from each
    mapped invocation, and the answers land where they were asked."""
    inner = Formation("inner").add_function("ask", lambda m: f"{m}:{interrupt({'q': m})}")
    f = (Formation("outer").add_function("s", lambda x: x).add_formation("sub", inner)
         .add_function("split", lambda x: [x + "1", x + "2"]).add_map("each", formation=inner)
         .add_function("j", lambda sub, each: [sub, each])
         .connect("s", "sub", "j").connect("s", "split", "each", "j"))

    async def main() -> tuple[list[str], Any]:
        result = await f.arun("m", store=store)
        asked: list[str] = []
        while result.status == "suspended" and len(asked) < 5:
            assert result.interrupt is not None
            asked.append(result.interrupt["node"])
            question = result.interrupt["payload"]["q"]
            events = [e async for e in f.aresume_stream(result.run_id, store=store, answer=question.upper())]
            result = events[-1].data["result"]
        return asked, result.output

    asked, output = asyncio.run(main())

    assert sorted(asked) == ["each/0/ask", "each/1/ask", "sub/ask"]
    assert output == ["m:M", ["m1:M1", "m2:M2"]]


def _ask_domain(email: str) -> dict[str, Any]:
    """The domain validator of MAF's email sub-workflow, asking the outside (picklable for Ray)."""
    return {"email": email, "ok": bool(interrupt({"domain": email.split("@")[1]}))}


def _pair(email: str) -> list[str]:
    return [email, "x@" + email.split("@")[1] + ".org"]


def _both(sub: Any, each: Any) -> list[Any]:
    return [sub, each]


def _same(value: Any) -> Any:
    return value


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_questions_from_a_sub_workflow_and_a_map_of_it_are_answered_on_ray(store: RunStore) -> None:
    """From test_sub_workflow.py::test_basic_sub_workflow and ::test_concurrent_sub_workflow_execution,
    on ``backend="ray"``: each question surfaces by its path, each resume runs on Ray, and every answer
    lands in the invocation that asked."""
    inner = Formation("validation").add_function("fmt", _same).add_function("ask", _ask_domain).connect("fmt", "ask")
    f = (Formation("parent").add_function("start", _same).add_formation("sub", inner)
         .add_function("split", _pair).add_map("each", formation=inner)
         .add_function("j", _both).connect("start", "sub", "j").connect("start", "split", "each", "j"))
    result = f.run("a@b.com", store=store, backend="ray", timeout=60)
    asked: list[str] = []
    while result.status == "suspended" and len(asked) < 5:
        assert result.interrupt is not None
        asked.append(result.interrupt["node"])
        domain = result.interrupt["payload"]["domain"]
        result = f.resume(result.run_id, store=store, answer=domain == "b.com", backend="ray", timeout=60)

    assert sorted(asked) == ["each/0/ask", "each/1/ask", "sub/ask"]
    assert result.output == [{"email": "a@b.com", "ok": True},
                             [{"email": "a@b.com", "ok": True}, {"email": "x@b.com.org", "ok": False}]]


# -- the functional workflow's checkpoints and requests ------------------------------------------


def test_a_run_failed_in_its_second_step_resumes_from_there_without_redoing_the_first(store: RunStore) -> None:
    """From test_functional_workflow.py::TestCheckpointing::test_per_step_checkpoint_enables_crash_recovery
    (step 1 replays from its checkpoint, step 2 runs again and succeeds: (5 + 10) * 2)."""
    calls = Counter()

    def slow_step1(x: int) -> int:
        calls.hit("step1")
        return x + 10

    def crashing_step2(x: int) -> int:
        if calls.hit("step2") == 1:
            raise RuntimeError("simulated crash")
        return x * 2

    f = Formation("crash_wf").add_function("slow_step1", slow_step1).add_function("crashing_step2", crashing_step2)
    f.connect("slow_step1", "crashing_step2")
    with pytest.raises(FormationRuntimeError, match="simulated crash"):
        f.run(5, store=store, run_id="crash")

    assert f.resume("crash", store=store).output == 30
    assert (calls.count("step1"), calls.count("step2")) == (1, 2)


def test_state_a_node_sets_before_asking_is_there_after_the_answer_because_the_visit_runs_again(store: RunStore) -> None:
    """From test_functional_workflow.py::TestCheckpointing::test_checkpoint_preserves_state (state set
    before request_info is read after the response). Ours: a board's contents are not journalled, but
    the interrupted visit runs again from its start on resume, so what it set before asking is set
    again."""
    def stateful_wf(x: int, blackboard: Blackboard) -> str:
        blackboard.set("key", "value")
        feedback = interrupt("need info")
        return f"{blackboard.get('key')}:{feedback}"

    f = Formation("stateful_wf").add_function("stateful_wf", stateful_wf)
    first = f.run(1, store=store, blackboard=Blackboard())

    assert f.resume(first.run_id, store=store, answer="hello", blackboard=Blackboard()).output == "value:hello"


def test_an_answer_reaches_the_node_as_it_was_given_without_coercion(store: RunStore) -> None:
    """From test_functional_workflow.py::TestHITL::test_request_info_resume_coerces_json_like_response
    and ::test_request_info_resume_rejects_response_type_mismatch. Deliberately different: MAF's
    ``request_info`` takes a ``response_type``, coerces a JSON-like response into it and refuses a
    mismatch; ``interrupt()`` has no answer type, so a dict answer stays a dict (convert it in the
    node, e.g. with a pydantic model)."""
    f = Formation("typed_wf").add_function("typed_wf", lambda data: repr(interrupt("decision")))
    first = f.run("input", store=store)

    assert f.resume(first.run_id, store=store, answer={"approved": True}).output == "{'approved': True}"


def test_a_new_run_while_another_waits_leaves_the_waiting_one_answerable(store: RunStore) -> None:
    """From test_functional_workflow.py::TestHITL::test_fresh_message_while_pending_requests_warns (a
    fresh message while a request is pending is allowed, with a warning that the pending request now
    applies to a moved-on workflow). Ours: runs are separate, so there is nothing to warn about: the
    new run runs, and the waiting one is answered later as if nothing happened."""
    f = Formation("review_wf").add_function("review", lambda doc: f"Final: {doc}: {interrupt({'draft': doc})}")
    waiting = f.run("my doc", store=store)
    other = f.run("another doc", store=store)

    assert other.status == waiting.status == "suspended"
    assert f.resume(waiting.run_id, store=store, answer="Looks great!").output == "Final: my doc: Looks great!"
    assert store.get(other.run_id).status == "suspended"


def _ask_on_a_pool_thread(x: int, *, in_context: bool) -> str:
    """A node that asks from a worker thread of its own (the functional workflow's parallel tasks)."""
    with ThreadPoolExecutor(1) as pool:
        if in_context:
            return str(pool.submit(contextvars.copy_context().run, interrupt, {"q": x}).result())
        return str(pool.submit(interrupt, {"q": x}).result())


def test_asking_from_a_thread_the_node_started_says_the_thread_lacks_the_runs_context_and_how_to_pass_it(
    store: RunStore,
) -> None:
    """From test_functional_workflow.py::TestParallelExecution with ::TestHITL (steps run in parallel
    tasks, and a request made in one surfaces from the workflow). Ours: an ``async def`` node's
    gathered coroutines ask as the node does, but a worker thread the node starts does not carry the
    run's context. Before the fix the error said only that interrupt() needs a journalled run and a
    store, though the run had one; it now says a thread of the node's own lacks the run's context
    and names the fix, which works."""
    f = Formation("threads").add_function("ask", lambda x: _ask_on_a_pool_thread(x, in_context=False))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)

    message = str(caught.value)
    assert "thread" in message and "contextvars.copy_context().run" in message

    g = Formation("threads").add_function("ask", lambda x: _ask_on_a_pool_thread(x, in_context=True))
    first = g.run(2, store=store)
    assert first.interrupt == {"node": "ask", "payload": {"q": 2}}
    assert g.resume(first.run_id, store=store, answer="yes").output == "yes"
