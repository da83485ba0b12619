"""More of Microsoft Agent Framework's checkpoint and human-in-the-loop tests
(python/packages/core/tests/workflow/ in microsoft/agent-framework: test_checkpoint_isolation_7683.py,
test_pause_checkpoint_resolve.py, test_checkpoint.py, test_request_info_mixin.py,
test_sub_workflow.py), ported to journalled runs as in tests/durable/test_peer_maf_durable.py: what a
reader of the store gets is a copy, a suspended run's journal is what resume and fork start from,
and a request is not a failure."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.agents.test_peer_agno import calls, text
from tests.support.peers import Counter
from wingman_actors import Agent, Formation, interrupt, tool
from wingman_actors.cli import main
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

# -- isolation of what the store hands out -----------------------------------------------------


def test_mutating_a_visits_output_read_from_the_history_does_not_change_the_store(store: RunStore) -> None:
    """From test_checkpoint_isolation_7683.py::test_load_returns_isolated_checkpoint (mutating a loaded
    checkpoint's state must not affect the storage)."""
    f = Formation("demo").add_function("history", lambda x: ["step-1"])
    run_id = f.run(0, store=store).run_id
    [visit] = store.history(run_id)
    visit.output.append("step-2")

    assert [v.output for v in store.history(run_id)] == [["step-1"]]


def test_mutating_a_suspended_results_interrupt_payload_does_not_change_the_pending_request(store: RunStore) -> None:
    """From test_checkpoint_isolation_7683.py::test_get_latest_returns_isolated_snapshot (the latest
    snapshot, with its pending request, cannot be changed through what a reader got)."""
    f = Formation("demo").add_function("ask", lambda x: interrupt({"history": ["step-1"]}))
    first = f.run(0, store=store)
    assert first.interrupt is not None
    first.interrupt["payload"]["history"].append("step-2")

    record = store.get(first.run_id).interrupt
    assert record is not None and record.payload == {"history": ["step-1"]}


def test_a_node_that_changed_its_input_in_place_before_asking_gets_the_original_again_on_resume(store: RunStore) -> None:
    """From test_checkpoint_isolation_7683.py::test_load_returns_isolated_messages (the messages a
    checkpoint holds for an executor are isolated from what the executor did with them)."""
    seen: list[list[str]] = []

    def approve(messages: list[str]) -> list[str]:
        seen.append(list(messages))
        messages.append("msg-2")
        return messages if interrupt({"count": len(messages)}) else []

    f = Formation("demo").add_function("src", lambda x: ["msg-1"]).add_function("approve", approve).connect("src", "approve")
    first = f.run(0, store=store)
    done = f.resume(first.run_id, store=store, answer=True)

    assert seen == [["msg-1"], ["msg-1"]]
    assert done.output == ["msg-1", "msg-2"]
    assert store.history(first.run_id)[0].output == ["msg-1"]


# -- a request is not a failure ----------------------------------------------------------------------


def test_a_node_with_retries_that_asks_is_not_retried_and_its_trace_says_suspended(store: RunStore) -> None:
    """From test_request_info_mixin.py (request_info marks a request pending; the executor did not
    fail). Ours: an interrupt is not an attempt's failure, so retries do not apply to it."""
    counter = Counter()
    events: list[FormationEvent] = []

    def ask(x: int) -> int:
        counter.hit("ask")
        return int(interrupt({"n": x}))

    f = Formation("demo").add_function("ask", ask, retries=2, backoff=0.01)
    first = f.run(1, store=store, on_event=events.append)

    assert first.status == "suspended"
    assert counter.count("ask") == 1
    assert not any(e.type in ("node_retry", "node_failed") for e in events)
    assert (first.nodes["ask"].status, first.nodes["ask"].attempts) == ("suspended", 1)


def test_a_node_with_an_error_edge_that_asks_suspends_instead_of_taking_the_edge(store: RunStore) -> None:
    """From test_request_info_mixin.py (a pending request is not an error: no error handling runs).
    Ours: the error edge is not taken for an interrupt; it is after the answer makes the node fail."""
    handled = Counter()

    def ask(x: int) -> int:
        if not interrupt({"n": x}):
            raise ValueError("denied")
        return x

    f = (Formation("demo").add_function("ask", ask).add_function("handler", lambda failure: handled.hit("h") and "handled")
         .add_function("after", lambda x: x)
         .connect("ask", "after").connect("ask", "handler", on_error=True))
    first = f.run(5, store=store)
    assert (first.status, handled.count("h")) == ("suspended", 0)
    done = f.resume(first.run_id, store=store, answer=False)

    assert (done.status, done.outputs) == ("succeeded", {"handler": "handled"})
    assert handled.count("h") == 1


def test_an_async_node_asks_and_is_answered_like_a_sync_one(store: RunStore) -> None:
    """From test_request_info_and_response.py (the executors' handlers are coroutines)."""

    async def approval_executor(message: str) -> str:
        return f"APPROVED: {message}" if interrupt({"prompt": message}) else "DENIED"

    f = Formation("demo").add_function("approval_executor", approval_executor)
    first = f.run("op", store=store)

    assert first.interrupt == {"node": "approval_executor", "payload": {"prompt": "op"}}
    assert f.resume(first.run_id, store=store, answer=True).output == "APPROVED: op"


# -- what resume and fork start from ------------------------------------------------------------------


def test_the_branch_that_finished_before_the_other_asked_is_not_run_again_on_resume(store: RunStore) -> None:
    """From test_checkpoint.py (a checkpoint keeps the messages already delivered to a fan-in; the
    restored run does not redo the work that produced them)."""
    counter = Counter()
    f = (Formation("fan").add_function("start", lambda x: x)
         .add_function("fast", lambda x: counter.hit("fast") and x + 1)
         .add_function("asks", lambda x: x * int(interrupt({"factor?": x})))
         .add_function("aggregator", lambda fast, asks: fast + asks)
         .connect("start", "fast", "aggregator").connect("start", "asks", "aggregator"))
    first = f.run(2, store=store)
    done = f.resume(first.run_id, store=store, answer=10)

    assert done.output == 23
    assert counter.count("fast") == 1


def test_a_fork_before_a_question_asks_it_again_in_the_new_run_and_the_original_still_waits(store: RunStore) -> None:
    """From test_checkpoint.py (restoring a checkpoint taken before a request was made re-emits the
    request in the restored run) and test_pause_checkpoint_resolve.py (the pause checkpoint of a run is
    its own, not another run's)."""
    f = (Formation("chain").add_function("first", lambda x: x + 1)
         .add_function("approval_executor", lambda x: x * 10 if interrupt({"ok?": x}) else 0)
         .connect("first", "approval_executor"))
    original = f.run(1, store=store)
    forked = f.fork(original.run_id, store=store, at="first", output=5)

    fork_record, original_record = store.get(forked), store.get(original.run_id)
    assert fork_record.status == original_record.status == "suspended"
    assert fork_record.interrupt is not None and fork_record.interrupt.payload == {"ok?": 5}
    assert original_record.interrupt is not None and original_record.interrupt.payload == {"ok?": 2}
    assert f.resume(forked, store=store, answer=True).output == 50
    assert f.resume(original.run_id, store=store, answer=True).output == 20


def test_a_sub_workflow_visited_twice_in_a_loop_asks_on_each_visit_and_each_answer_stays_in_its_visit(store: RunStore) -> None:
    """From test_sub_workflow.py (a sub-workflow's request per invocation, each response routed to
    the invocation that asked) with a parent that loops."""
    inner = Formation("inner").add_function("ask", lambda n: (n, interrupt({"n": n})))
    f = (Formation("parent").add_function("start", lambda x: x).add_formation("sub", inner)
         .add_function("next", lambda pair: pair[0] + 1).add_function("done", lambda pair: pair)
         .connect("start", "sub").connect("sub", "next", when=lambda p: p[0] < 2).connect("next", "sub")
         .connect("sub", "done", otherwise=True))
    result = f.run(1, store=store)
    asked = []
    while result.status == "suspended":
        assert result.interrupt is not None
        n = result.interrupt["payload"]["n"]
        asked.append(n)
        result = f.resume(result.run_id, store=store, answer=f"answer {n}")

    assert asked == [1, 2]
    assert result.output == (2, "answer 2")
    assert result.nodes["sub"].outputs == [(1, "answer 1"), (2, "answer 2")]


def test_runs_submitted_to_a_started_formation_each_wait_and_each_resume_gets_its_own_answer(store: RunStore) -> None:
    """From test_request_info_and_response.py (each workflow's request answered by its own response),
    for several runs in flight through one started formation."""
    f = Formation("demo").add_function("approval_executor", lambda m: f"{m}: {interrupt({'prompt': m})}")
    with f.start(store=store) as running:
        futures = [running.submit(m) for m in ("one", "two", "three")]
        first = [fut.result(20) for fut in futures]
        assert [r.status for r in first] == ["suspended"] * 3
        resumed = [running.resume(r.run_id, answer=r.interrupt["payload"]["prompt"].upper()) for r in first if r.interrupt]
        outputs = [fut.result(20).output for fut in resumed]

    assert outputs == ["one: ONE", "two: TWO", "three: THREE"]


@tool
def submit_refund(order_id: str) -> str:
    """Submit a refund (needs a person's approval first)."""
    return f"refunded {order_id}" if interrupt({"approve": "submit_refund", "order_id": order_id}) else "refund declined"


def test_an_agent_inside_a_sub_workflow_asking_for_tool_approval_resumes_without_asking_the_model_again(store: RunStore) -> None:
    """From test_pause_checkpoint_resolve.py (an executor pauses on a function approval request for
    submit_refund; the approval is resolved against that run's pause) with the agent inside a
    sub-workflow as in test_sub_workflow.py."""
    provider = ScriptedProvider([calls(("refund-call", "submit_refund", {"order_id": "12345"})), text("Refund done.")])
    inner = Formation("inner").add_agent("approval_executor", Agent("refunds", provider=provider, tools=[submit_refund]))
    f = Formation("outer").add_function("start", lambda m: m).add_formation("refund", inner).connect("start", "refund")
    first = f.run("refund order 12345", store=store)

    assert first.status == "suspended"
    assert first.interrupt is not None and first.interrupt["payload"] == {"approve": "submit_refund", "order_id": "12345"}
    done = f.resume(first.run_id, store=store, answer=True)
    assert done.output == "Refund done."
    assert provider.calls == 2
    [result] = provider.requests[-1].messages[-1].tool_results_blocks
    assert result.content == "refunded 12345"


def test_a_journalled_stream_left_early_can_be_resumed_without_redoing_its_finished_visits(store: RunStore) -> None:
    """From test_workflow.py::test_workflow_unconsumed_stream_releases_run_lock with checkpointing (a
    stream dropped part-way leaves a run that a later call continues). Ours: leaving a journalled
    stream early interrupts its run; resume finishes it."""
    counter = Counter()
    gate = threading.Event()

    def second(x: int) -> int:
        counter.hit("second")
        gate.wait(10)
        return x * 2

    f = (Formation("chain").add_function("first", lambda x: counter.hit("first") and x + 1)
         .add_function("second", second).connect("first", "second"))
    stream = f.run_stream(1, store=store)
    run_id = None
    for event in stream:
        run_id = event.run_id
        if event.type == "node_started" and event.node == "second":
            break
    stream.close()  # type: ignore[attr-defined]
    gate.set()
    assert run_id is not None
    assert store.get(run_id).status == "interrupted"
    done = f.resume(run_id, store=store)

    assert done.output == 4
    assert (counter.count("first"), counter.count("second")) == (1, 2)


NESTED_ASK = '''
from wingman_actors import Formation, interrupt

inner = Formation("validation").add_function("email_domain_validator", lambda email: (email, interrupt({"domain": email})))
formation = Formation("parent").add_function("start", lambda email: email).add_formation("sub", inner).connect("start", "sub")
'''


def test_a_fork_from_the_cli_that_asks_inside_a_sub_workflow_names_the_inner_node_as_run_does(
    tmp_path: Path, store: RunStore, capsys: pytest.CaptureFixture[str],
) -> None:
    """From test_checkpoint.py with test_sub_workflow.py (a workflow restored from a checkpoint taken
    before its sub-workflow's request re-emits that request, from the sub-workflow's executor). Before
    the fix, ``wingman-actors fork`` said the new run waited at node 'sub', where ``run``, ``resume``
    and ``runs show`` name the node that asked, 'sub/email_domain_validator'."""
    module = tmp_path / "nested.py"
    module.write_text(NESTED_ASK)
    location = str(tmp_path / "cli.sqlite")
    assert main(["run", str(module), "--input", '"a@b.c"', "--store", location]) == 0
    ran = capsys.readouterr().err
    assert "'sub/email_domain_validator'" in ran
    assert main(["runs", "--store", location, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)[0]["run_id"]

    assert main(["fork", run_id, "--at", "start", "--output", '"x@y.z"', "--store", location]) == 0
    told = capsys.readouterr().err
    assert "is waiting at node 'sub/email_domain_validator'" in told
    assert '{"domain": "x@y.z"}' in told


def test_the_store_records_a_sub_workflows_question_at_the_formation_node_and_its_inner_run_at_the_asker(
    store: RunStore,
) -> None:
    """From test_sub_workflow.py (a request from inside a WorkflowExecutor is surfaced by the parent
    workflow, with the sub-workflow's own request recorded inside it). Ours: the outer run's record
    names the formation node ``sub`` (where resume answers it), the inner run's record the node that
    asked, and ``FormationResult.interrupt`` the path ``sub/ask``."""
    inner = Formation("validation").add_function("ask", lambda email: interrupt({"domain": email}))
    f = Formation("parent").add_function("start", lambda e: e).add_formation("sub", inner).connect("start", "sub")
    first = f.run("a@b.c", store=store)

    assert first.interrupt == {"node": "sub/ask", "payload": {"domain": "a@b.c"}}
    outer = store.get(first.run_id).interrupt
    assert outer is not None and (outer.node, outer.payload) == ("sub", {"domain": "a@b.c"})
    [nested] = [r for r in store.runs(nested=True) if r.parent == first.run_id]
    inner_pending = store.get(nested.id).interrupt
    assert inner_pending is not None and inner_pending.node == "ask"
