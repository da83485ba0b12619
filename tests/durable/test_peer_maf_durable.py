"""Behaviours of Microsoft Agent Framework's human-in-the-loop and checkpoint tests
(python/packages/core/tests/workflow/ in microsoft/agent-framework: test_request_info_and_response.py,
test_workflow.py, test_sub_workflow.py, test_checkpoint*.py), ported to journalled runs: an
executor's ``ctx.request_info(request, ResponseType)`` is ``interrupt(payload)`` in a function node,
``run(responses={request_id: value})`` / ``send_responses_streaming`` is ``resume(run_id,
answer=value)``, a checkpoint storage is a ``RunStore``, restoring a checkpoint into a fresh workflow
is resuming the run with a formation built anew, and restoring an earlier checkpoint is a fork.

Deliberately different (each test that touches one says so):
- MAF emits every pending request of a superstep at once and takes a dict of responses by request
  id; ours suspends at one interrupt at a time (``interrupt == {"node", "payload"}``) and takes one
  answer per resume.
- MAF's response handler is a second method that receives the original request; ours reruns the
  interrupted visit, where ``interrupt()`` returns the answer (code before it runs again)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import (
    FormationMismatchError,
    NoPendingInterruptError,
    RunNotResumableError,
    RunStore,
    UnknownRunError,
)


def approval(counter: Counter | None = None) -> Formation:
    """MAF's ApprovalRequiredExecutor and an OutputCollector: ask to approve the operation, then send
    on APPROVED or DENIED."""

    def approval_executor(message: str) -> str:
        if counter is not None:
            counter.hit("approval_executor")
        approved = interrupt({"prompt": f"Please approve the operation: {message}",
                              "context": "This is a critical operation that requires human approval."})
        return f"APPROVED: {message}" if approved else "DENIED: Operation was not approved"

    return (Formation("approval").add_function("approval_executor", approval_executor)
            .add_function("collector", lambda message: message).connect("approval_executor", "collector"))


# -- request and response ------------------------------------------------------------------------


def test_a_node_asking_for_approval_suspends_the_run_with_its_request(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_approval_workflow (the run emits a request_info
    event carrying the request)."""
    result = approval().run("test operation", store=store)

    assert result.status == "suspended"
    assert result.interrupt == {"node": "approval_executor",
                                "payload": {"prompt": "Please approve the operation: test operation",
                                            "context": "This is a critical operation that requires human approval."}}
    assert result.nodes["collector"].status == "pending"


def test_an_approved_request_lets_the_run_go_on_to_its_end(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_approval_workflow (the response True continues
    the workflow to idle with the approved result)."""
    f = approval()
    first = f.run("test operation", store=store)
    done = f.resume(first.run_id, store=store, answer=True)

    assert (done.status, done.output) == ("succeeded", "APPROVED: test operation")


def test_a_denied_request_takes_the_denied_path(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_denied_approval_workflow."""
    f = approval()
    first = f.run("sensitive operation", store=store)

    assert f.resume(first.run_id, store=store, answer=False).output == "DENIED: Operation was not approved"


def test_a_request_answered_with_a_number_gives_the_node_that_number(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_calculation_workflow (a CalculationRequest
    answered with 31.0)."""

    def calc_executor(message: str) -> str:
        operation, *operands = message.split()
        result = interrupt({"operation": operation, "operands": [float(x) for x in operands]})
        return f"Calculation complete: {operation}({', '.join(operands)}) = {result}"

    f = Formation("calc").add_function("calc_executor", calc_executor)
    first = f.run("multiply 15.5 2.0", store=store)
    assert first.interrupt == {"node": "calc_executor", "payload": {"operation": "multiply", "operands": [15.5, 2.0]}}

    assert f.resume(first.run_id, store=store, answer=31.0).output == "Calculation complete: multiply(15.5, 2.0) = 31.0"


def test_a_node_with_two_requests_asks_them_one_after_the_other(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_multiple_requests_workflow. Deliberately
    different: MAF emits both requests at once and takes both responses in one call; ours asks the
    second once the first is answered, and the visit gets each answer in order."""

    def multi_executor(message: str) -> str:
        approved = interrupt({"prompt": "Approve batch operation"})
        calculation = interrupt({"operation": "multiply", "operands": [10.0, 5.0]})
        return f"All operations complete. Calculation result: {calculation}" if approved else "mixed"

    f = Formation("multi").add_function("multi_executor", multi_executor)
    first = f.run("start batch", store=store)
    assert first.interrupt is not None and first.interrupt["payload"] == {"prompt": "Approve batch operation"}
    second = f.resume(first.run_id, store=store, answer=True)
    assert second.status == "suspended"
    assert second.interrupt is not None and second.interrupt["payload"] == {"operation": "multiply", "operands": [10.0, 5.0]}

    assert f.resume(first.run_id, store=store, answer=50.0).output == "All operations complete. Calculation result: 50.0"


def test_two_parallel_branches_asking_are_each_answered_and_the_join_gets_both(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_multiple_requests_workflow (two pending requests at
    once, each response reaching the handler that asked). Ours: the run suspends at one branch's
    interrupt, then at the other's; each answer reaches the branch that asked."""
    f = (Formation("branches").add_function("start", lambda x: x)
         .add_function("approve", lambda x: ("approved", interrupt({"ask": "approve"})))
         .add_function("calculate", lambda x: ("calculated", interrupt({"ask": "calculate"})))
         .add_function("join", lambda approve, calculate: [approve, calculate])
         .connect("start", "approve", "join").connect("start", "calculate", "join"))
    answers = {"approve": True, "calculate": 50.0}
    result = f.run(0, store=store)
    asked = []
    while result.status == "suspended":
        assert result.interrupt is not None
        asked.append(result.interrupt["node"])
        result = f.resume(result.run_id, store=store, answer=answers[result.interrupt["node"]])

    assert sorted(asked) == ["approve", "calculate"]
    assert result.output == [("approved", True), ("calculated", 50.0)]


def test_a_suspended_streams_last_event_says_the_run_waits_and_the_store_records_the_request(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_workflow_state_with_pending_requests (the stream
    ends in IDLE_WITH_PENDING_REQUESTS)."""
    events = list(approval().run_stream("test operation", store=store))

    last = events[-1]
    assert last.type == "run_finished" and last.data["suspended"] is True
    run = store.get(last.run_id)
    assert run.status == "suspended"
    assert run.interrupt is not None
    assert (run.interrupt.node, run.interrupt.visit, run.interrupt.answered) == ("approval_executor", 1, False)


def test_a_node_that_asks_nothing_for_some_input_runs_to_its_end_without_suspending(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_invalid_calculation_input (no request for an input
    it cannot use; the run completes)."""

    def calc_executor(message: str) -> str:
        parts = message.split()
        if len(parts) < 3:
            return "Insufficient parameters for calculation"
        return str(interrupt({"operation": parts[0]}))

    result = Formation("calc").add_function("calc_executor", calc_executor).run("invalid input", store=store)

    assert (result.status, result.output) == ("succeeded", "Insufficient parameters for calculation")
    assert store.get(result.run_id).status == "succeeded"


def test_a_run_suspended_in_one_formation_object_is_answered_through_one_built_anew(store: RunStore) -> None:
    """From test_request_info_and_response.py::test_checkpoint_with_pending_request_info_events (a
    fresh workflow restored from the checkpoint holding the pending request answers it). The code
    before the ``interrupt`` runs again on resume: put side effects after it."""
    counter = Counter()
    first = approval(counter).run("checkpoint test operation", store=store)
    done = approval(counter).resume(first.run_id, store=store, answer=True)

    assert done.output == "APPROVED: checkpoint test operation"
    assert counter.count("approval_executor") == 2


def test_a_rejected_approval_loops_back_and_asks_again_on_the_next_visit(store: RunStore) -> None:
    """From test_workflow.py::MockExecutorRequestApproval (a denied approval sends the number back
    into the workflow, which asks again; an approval yields it)."""
    f = (Formation("loop").add_function("start", lambda x: x)
         .add_function("approval_executor", lambda x: (x, interrupt({"approve": x})))
         .add_function("again", lambda pair: pair[0] + 1).add_function("done", lambda pair: pair[0])
         .connect("start", "approval_executor").connect("approval_executor", "again", when=lambda p: not p[1])
         .connect("again", "approval_executor").connect("approval_executor", "done", otherwise=True))
    first = f.run(42, store=store)
    assert first.interrupt is not None and first.interrupt["payload"] == {"approve": 42}
    second = f.resume(first.run_id, store=store, answer=False)
    assert second.interrupt is not None and second.interrupt["payload"] == {"approve": 43}
    done = f.resume(first.run_id, store=store, answer=True)

    assert done.output == 43
    assert done.nodes["approval_executor"].visits == 2


def test_a_loop_that_keeps_being_denied_fails_at_its_visit_limit_counting_visits_across_resumes(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_run_not_completed with MockExecutorRequestApproval (a
    workflow that never converges fails). Ours: the per-node ``max_visits`` counts the visits made
    before each resume too."""
    f = (Formation("loop").add_function("start", lambda x: x)
         .add_function("approval_executor", lambda x: (x, interrupt({"approve": x})), max_visits=3)
         .add_function("again", lambda pair: pair[0] + 1).add_function("done", lambda pair: pair[0])
         .connect("start", "approval_executor").connect("approval_executor", "again", when=lambda p: not p[1])
         .connect("again", "approval_executor").connect("approval_executor", "done", otherwise=True))
    result = f.run(0, store=store)
    with pytest.raises(FormationRuntimeError, match="max_visits"):
        for _ in range(5):
            assert result.status == "suspended"
            result = f.resume(result.run_id, store=store, answer=False)


# -- checkpoints: resume, restore, validation -------------------------------------------------------


def test_resuming_a_run_the_store_does_not_know_names_the_id(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_run_stream_from_checkpoint_invalid_checkpoint ("No
    checkpoint found with ID nonexistent_checkpoint_id")."""
    with pytest.raises(UnknownRunError, match="nonexistent_checkpoint_id"):
        approval().resume("nonexistent_checkpoint_id", store=store)


def test_resuming_a_finished_run_is_refused_saying_it_succeeded(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_run_from_checkpoint_non_streaming (a run restored from a
    checkpoint of a finished workflow). Ours: a succeeded run has nothing left to resume."""
    f = approval()
    first = f.run("op", store=store)
    f.resume(first.run_id, store=store, answer=True)

    with pytest.raises(RunNotResumableError, match="succeeded"):
        f.resume(first.run_id, store=store, answer=True)


def test_an_answer_for_a_run_waiting_for_none_is_refused(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_run_inflight_messages_guard and test_request_info_mixin.py
    (a response to no pending request is an error)."""
    f = Formation("plain").add_function("fails", lambda x: 1 // x)
    failed_id = "plain-run"
    with pytest.raises(FormationRuntimeError):
        f.run(0, store=store, run_id=failed_id)

    with pytest.raises(NoPendingInterruptError):
        f.resume(failed_id, store=store, answer=True)


def test_resuming_with_a_formation_of_another_shape_is_refused_saying_what_differs(store: RunStore) -> None:
    """From test_checkpoint_validation.py (a checkpoint whose graph signature differs from the
    workflow's is refused)."""
    first = approval().run("op", store=store)
    other = approval().add_function("extra", lambda m: m).connect("collector", "extra")

    with pytest.raises(FormationMismatchError, match="extra"):
        other.resume(first.run_id, store=store, answer=True)


def test_a_resumed_stream_reports_the_journalled_visits_as_such_then_the_rest(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_run_stream_from_checkpoint_with_responses (restoring from a
    checkpoint streams the workflow's events from there on)."""
    f = (Formation("chain").add_function("first", lambda x: x + 1)
         .add_function("approval_executor", lambda x: x * 10 if interrupt({"ok?": x}) else 0)
         .connect("first", "approval_executor"))
    suspended = f.run(1, store=store)
    events: list[FormationEvent] = list(f.resume_stream(suspended.run_id, store=store, answer=True))

    journalled = [e.node for e in events if e.type == "node_finished" and e.data.get("journalled")]
    assert journalled == ["first"]
    assert not any(e.type == "node_started" and e.node == "first" for e in events)
    assert events[-1].type == "run_finished" and events[-1].data["result"].output == 20


def test_a_runs_history_lists_its_visits_in_order_ending_with_the_one_waiting(store: RunStore) -> None:
    """From test_checkpoint.py (list_checkpoints in timestamp order; the latest holds the pending
    request)."""
    f = (Formation("chain").add_function("first", lambda x: x + 1).add_function("second", lambda x: x * 2)
         .add_function("approval_executor", lambda x: interrupt({"ok?": x})).connect("first", "second", "approval_executor"))
    suspended = f.run(1, store=store)
    history = store.history(suspended.run_id)

    assert [(v.node, v.status) for v in history] == [("first", "succeeded"), ("second", "succeeded"),
                                                    ("approval_executor", "suspended")]
    assert history[-1].output == {"ok?": 4}


def test_restoring_an_earlier_point_starts_a_new_run_and_leaves_the_first_unchanged(store: RunStore) -> None:
    """From test_checkpoint.py (restoring a superstep checkpoint other than the latest, into a workflow
    that then runs on). Ours: a fork at that node's visit with a new output."""
    ran = Counter()
    f = (Formation("chain").add_function("first", lambda x: ran.hit("first") and x + 1)
         .add_function("second", lambda x: ran.hit("second") and x * 2).connect("first", "second"))
    original = f.run(1, store=store)
    forked = f.fork(original.run_id, store=store, at="first", output=100)

    assert [(v.node, v.output) for v in store.history(forked)] == [("first", 100), ("second", 200)]
    assert [(v.node, v.output) for v in store.history(original.run_id)] == [("first", 2), ("second", 4)]
    assert (ran.count("first"), ran.count("second")) == (1, 2)


def test_a_run_can_be_journalled_by_passing_the_store_to_run_alone(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_checkpoint_runtime_only_configuration (checkpointing
    configured at run time only, then resumed through a new workflow instance)."""
    first = approval().run("runtime", store=store)
    assert [r.id for r in store.runs(status="suspended")] == [first.run_id]

    assert approval().resume(first.run_id, store=store, answer=True).output == "APPROVED: runtime"


def test_resuming_without_an_answer_asks_the_pending_question_again(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_run_stream_from_checkpoint_with_responses (restoring a
    checkpoint with a pending request re-emits the request, still unanswered)."""
    f = approval()
    first = f.run("op", store=store)
    again = f.resume(first.run_id, store=store)

    assert (again.status, again.interrupt) == ("suspended", first.interrupt)
    assert f.resume(first.run_id, store=store, answer=True).output == "APPROVED: op"


def sub_with_question(counter: Counter) -> Formation:
    """MAF's email validation sub-workflow whose domain validator asks the outside (request_info)."""

    def email_domain_validator(email: str) -> dict[str, Any]:
        approved = interrupt({"domain": email.split("@")[1], "email": email})
        return {"email": email, "is_valid": bool(approved)}

    return (Formation("validation").add_function("email_format_validator", lambda e: counter.hit("format") and e)
            .add_function("email_domain_validator", email_domain_validator)
            .connect("email_format_validator", "email_domain_validator"))


def test_a_question_inside_a_sub_workflow_suspends_the_parent_and_its_answer_reaches_the_inner_node(store: RunStore) -> None:
    """From test_sub_workflow.py::test_basic_sub_workflow (the sub-workflow's DomainCheckRequest
    surfaces from the main workflow; the response sent there completes the validation). The inner
    visits before the question are not run again."""
    counter = Counter()
    f = (Formation("parent").add_function("basic_parent", lambda e: e)
         .add_formation("email_validation_workflow", sub_with_question(counter)).add_function("collect", lambda r: r)
         .connect("basic_parent", "email_validation_workflow", "collect"))
    first = f.run("test@example.com", store=store)
    assert first.status == "suspended"
    assert first.interrupt is not None
    assert first.interrupt["payload"] == {"domain": "example.com", "email": "test@example.com"}
    done = f.resume(first.run_id, store=store, answer=True)

    assert done.output == {"email": "test@example.com", "is_valid": True}
    assert counter.count("format") == 1


def test_questions_from_two_parallel_sub_workflows_are_each_answered_to_the_one_that_asked(store: RunStore) -> None:
    """From test_sub_workflow.py::test_workflow_scoped_interception (workflow_a and workflow_b forward
    their requests to the outside; each response goes back to its own sub-workflow)."""
    counter = Counter()
    f = (Formation("multi_parent").add_function("start", lambda d: d)
         .add_function("to_a", lambda d: d["email1"]).add_function("to_b", lambda d: d["email2"])
         .add_formation("workflow_a", sub_with_question(counter)).add_formation("workflow_b", sub_with_question(counter))
         .add_function("collect", lambda workflow_a, workflow_b: {r["email"]: r["is_valid"] for r in (workflow_a, workflow_b)})
         .connect("start", "to_a", "workflow_a", "collect").connect("start", "to_b", "workflow_b", "collect"))
    verdicts = {"strict.com": True, "random.org": False}
    result = f.run({"email1": "user@strict.com", "email2": "user@random.org"}, store=store)
    asked = []
    while result.status == "suspended":
        assert result.interrupt is not None
        asked.append(result.interrupt["payload"]["domain"])
        result = f.resume(result.run_id, store=store, answer=verdicts[result.interrupt["payload"]["domain"]])

    assert sorted(asked) == ["random.org", "strict.com"]
    assert result.output == {"user@strict.com": True, "user@random.org": False}
    assert counter.count("format") == 2


def test_many_invocations_of_a_sub_workflow_that_asks_are_answered_one_by_one_into_their_places(store: RunStore) -> None:
    """From test_sub_workflow.py::test_concurrent_sub_workflow_execution (several emails through one
    WorkflowExecutor, every request forwarded outside and answered; each result matches its email)."""
    counter = Counter()
    emails = ["a@one.com", "b@two.com", "c@three.com"]
    f = Formation("concurrent_processor").add_map("email_workflow", formation=sub_with_question(counter), max_workers=3)
    result = f.run(emails, store=store)
    asked = []
    while result.status == "suspended":
        assert result.interrupt is not None
        email = result.interrupt["payload"]["email"]
        asked.append(email)
        result = f.resume(result.run_id, store=store, answer=email != "b@two.com")

    assert sorted(asked) == sorted(emails)
    assert result.output == [{"email": "a@one.com", "is_valid": True}, {"email": "b@two.com", "is_valid": False},
                             {"email": "c@three.com", "is_valid": True}]
    assert counter.count("format") == 3
