"""More of Microsoft Agent Framework's workflow tests (python/packages/core/tests/workflow/ in
microsoft/agent-framework): the runner's (test_runner.py: delivery order, concurrent edges,
cancellation, a failing executor) and the sub-workflows' (test_sub_workflow.py: a WorkflowExecutor
is our ``add_formation`` node, several invocations of one sub-workflow our ``add_map`` of a
formation). Sub-workflows that ask the user (request_info) are in
tests/durable/test_peer_maf_durable.py.

Deliberately different: MAF's sub-workflow talks to its parent with request/response messages
while it runs (the parent may answer from a cache); ours is one node whose input is the inner run's
input and whose output is the inner sinks', so the parent's "cache" is a route around the nested
node."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.peers import Counter, sleeps_until_cancelled, until
from wingman_actors import Agent, Formation
from wingman_actors.errors import NoRouteError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider

APPROVED = {"example.com": True, "internal.org": True, "unknown.com": False}


def validation() -> Formation:
    """MAF's email validation sub-workflow: a format validator, then a domain validator; a malformed
    address ends at ``invalid`` with its reason."""
    return (Formation("validation")
            .add_function("email_format_validator", lambda email: email)
            .add_function("invalid", lambda email: {"email": email, "is_valid": False, "reason": "Invalid email format"})
            .add_function("email_domain_validator",
                          lambda email: {"email": email, "is_valid": APPROVED.get(email.split("@")[1], False),
                                         "reason": "Domain checked"})
            .connect("email_format_validator", "email_domain_validator", when=lambda e: "@" in e)
            .connect("email_format_validator", "invalid", otherwise=True))


# -- the runner ----------------------------------------------------------------------------------


def test_a_nodes_successive_values_reach_the_next_node_in_the_order_they_were_made() -> None:
    """From test_runner.py::test_runner_run_iteration_preserves_message_order_per_edge_runner (five
    messages on one edge arrive in order)."""
    f = (Formation("order").add_function("start", lambda x: x).add_function("count", lambda x: x + 1)
         .add_function("record", lambda x: x)
         .connect("start", "count").connect("count", "count", when=lambda v: v < 5).connect("count", "record"))
    result = f.run(0)

    assert result.nodes["record"].outputs == [1, 2, 3, 4, 5]


def test_a_fan_out_delivers_to_a_fast_branch_while_a_slow_branch_is_still_working() -> None:
    """From test_runner.py::test_runner_run_iteration_delivers_different_edge_runners_concurrently
    (a blocked edge does not hold back its sibling)."""
    release, probed = threading.Event(), threading.Event()

    def blocking(x: int) -> int:
        assert release.wait(10)
        return x

    def probe(x: int) -> int:
        probed.set()
        return x

    f = (Formation("edges").add_function("source", lambda x: x).add_function("blocking", blocking)
         .add_function("probe", probe).connect("source", "blocking").connect("source", "probe"))
    with f.start() as running:
        future = running.submit(1)
        try:
            assert probed.wait(10)
            assert not future.done()
        finally:
            release.set()
        assert future.result(20).outputs == {"blocking": 1, "probe": 1}


def test_cancelling_a_run_cancels_the_node_at_work_and_nothing_after_it_runs() -> None:
    """From test_runner.py::test_runner_cancellation_stops_active_executor (executor_a completed once,
    executor_b started and never completed)."""
    cancelled = threading.Event()
    counter = Counter()
    events: list[FormationEvent] = []
    slow = sleeps_until_cancelled(cancelled, seconds=30)

    async def executor_b(x: Any) -> str:
        counter.hit("b")
        return await slow(x)

    f = (Formation("cancel").add_function("executor_a", lambda x: counter.hit("a") and x)
         .add_function("executor_b", executor_b).add_function("after", lambda x: counter.hit("after") and x)
         .connect("executor_a", "executor_b", "after"))
    with f.start(on_event=events.append) as running:
        future = running.submit(0)
        assert until(lambda: counter.count("b") == 1, within=10)
        assert future.cancel()
        assert cancelled.wait(10)
        assert until(lambda: any(e.type == "run_cancelled" for e in events), within=10)

    assert (counter.count("a"), counter.count("b"), counter.count("after")) == (1, 1, 0)
    assert not any(e.type == "node_finished" and e.node == "executor_b" for e in events)


def test_a_node_failing_in_a_loop_ends_the_stream_with_what_happened_before_and_the_error() -> None:
    """From test_runner.py::test_runner_iteration_exception_drains_events (events emitted before the
    failure are delivered, then the failure)."""

    def executor_a(x: int) -> int:
        if x == 2:
            raise RuntimeError("Simulated executor failure")
        return x + 1

    f = (Formation("fails").add_function("start", lambda x: x).add_function("executor_a", executor_a)
         .add_function("executor_b", lambda x: x + 1).add_function("out", lambda x: x)
         .connect("start", "executor_a").connect("executor_a", "executor_b", when=lambda v: v < 10)
         .connect("executor_b", "executor_a").connect("executor_a", "out", otherwise=True))
    events = list(f.run_stream(0))

    finished = [(e.node, e.data["output"]) for e in events if e.type == "node_finished"]
    assert finished == [("start", 0), ("executor_a", 1), ("executor_b", 2)]
    [failed] = [e for e in events if e.type == "node_failed"]
    assert failed.node == "executor_a" and "Simulated executor failure" in str(failed.data["error"])
    assert events[-1].type == "run_failed"
    assert "Simulated executor failure" in str(events[-1].data["error"])


# -- sub-workflows -------------------------------------------------------------------------------


def parent(sub: Formation) -> Formation:
    """MAF's Coordinator -> WorkflowExecutor -> Coordinator: start, the nested validation, collect."""
    return (Formation("parent").add_function("start", lambda email: email).add_formation("email_validation_workflow", sub)
            .add_function("collect", lambda result: result)
            .connect("start", "email_validation_workflow", "collect"))


def test_a_sub_workflow_runs_as_one_node_and_its_result_reaches_the_parent() -> None:
    """From test_sub_workflow.py::test_basic_sub_workflow (the parent collects the sub-workflow's
    ValidationResult)."""
    result = parent(validation()).run("test@example.com")

    # the sub-workflow's two ends exclude each other (a route and its otherwise): its one output passes on
    assert result.output == {"email": "test@example.com", "is_valid": True, "reason": "Domain checked"}


def test_a_sub_workflow_that_ends_early_on_a_malformed_input_gives_that_ends_result() -> None:
    """From test_sub_workflow.py (EmailFormatValidator yields an invalid result at once for an address
    without "@"; the domain validator never runs)."""
    events: list[FormationEvent] = []
    result = parent(validation()).run("not-an-email", on_event=events.append)

    assert result.output == {"email": "not-an-email", "is_valid": False, "reason": "Invalid email format"}
    assert not any(e.type == "node_started" and e.node == "email_validation_workflow/email_domain_validator" for e in events)


def test_a_parent_may_answer_from_its_cache_and_route_around_the_sub_workflow() -> None:
    """From test_sub_workflow.py::test_sub_workflow_with_interception (a cached domain is answered by
    the parent; an unknown one goes to the sub-workflow). Deliberately different: MAF intercepts the
    sub-workflow's request while it runs; ours routes around the nested node."""
    cache = {"example.com": True}
    sub_runs = Counter()
    sub = validation()
    sub.add_function("count", lambda e: sub_runs.hit("sub") and e).connect("count", "email_format_validator")
    f = (Formation("parent").add_function("start", lambda email: email).add_formation("email_workflow", sub)
         .add_function("cached", lambda email: {"email": email, "is_valid": cache[email.split("@")[1]]})
         .add_function("collect", lambda result: result, join="any")
         .connect("start", "cached", when=lambda e: e.split("@")[-1] in cache)
         .connect("start", "email_workflow", otherwise=True)
         .connect("cached", "collect").connect("email_workflow", "collect"))

    assert f.run("user@example.com").output == {"cached": {"email": "user@example.com", "is_valid": True}}
    assert sub_runs.count("sub") == 0
    unknown = f.run("user@unknown.com").output
    assert unknown["email_workflow"]["is_valid"] is False
    assert sub_runs.count("sub") == 1


def test_two_copies_of_a_sub_workflow_run_side_by_side_each_on_its_own_input() -> None:
    """From test_sub_workflow.py::test_workflow_scoped_interception (workflow_a and workflow_b, two
    WorkflowExecutors of identical sub-workflows, each sent its own email)."""
    f = (Formation("multi_parent").add_function("start", lambda data: data)
         .add_function("to_a", lambda data: data["email1"]).add_function("to_b", lambda data: data["email2"])
         .add_formation("workflow_a", validation()).add_formation("workflow_b", validation())
         .add_function("collect", lambda workflow_a, workflow_b: {r["email"]: r["is_valid"] for r in
                                                                  (workflow_a, workflow_b)})
         .connect("start", "to_a", "workflow_a", "collect").connect("start", "to_b", "workflow_b", "collect"))
    result = f.run({"email1": "user@internal.org", "email2": "user@unknown.com"})

    assert result.output == {"user@internal.org": True, "user@unknown.com": False}


def test_one_sub_workflow_serves_many_inputs_concurrently_each_result_in_its_place() -> None:
    """From test_sub_workflow.py::test_concurrent_sub_workflow_execution (one WorkflowExecutor given
    several emails at once; every result comes back, matched to its email)."""
    emails = ["a@example.com", "b@unknown.com", "broken", "c@internal.org"]
    f = Formation("concurrent_processor").add_map("email_workflow", formation=validation(), max_workers=4)
    result = f.run(emails)

    assert [r["email"] for r in result.output] == emails
    assert [r["is_valid"] for r in result.output] == [True, False, False, True]


def test_a_sub_workflows_events_reach_the_parents_stream_under_the_nodes_path() -> None:
    """From test_sub_workflow.py (the sub-workflow's events surface through the parent's run)."""
    events = list(parent(validation()).run_stream("test@example.com"))

    started = [e.node for e in events if e.type == "node_started"]
    assert started == ["start", "email_validation_workflow", "email_validation_workflow/email_format_validator",
                       "email_validation_workflow/email_domain_validator", "collect"]


# -- run states ------------------------------------------------------------------------------------


def test_the_start_nodes_failure_is_reported_before_the_runs() -> None:
    """From test_workflow_states.py::test_executor_failed_and_workflow_failed_events_streaming
    (ExecutorFailedEvent for "f", then WorkflowFailedEvent). Deliberately different: MAF's stream
    raises the error after its events; ours ends with ``run_failed`` carrying it, and ``run()``
    raises."""

    def f(msg: int) -> None:
        raise RuntimeError("boom")

    events = list(Formation("wf").add_function("f", f).run_stream(0))
    kinds = [(e.type, e.node) for e in events if e.type in ("node_failed", "run_failed")]

    assert kinds == [("node_failed", "f"), ("run_failed", "f")]
    assert events[-1].type == "run_failed" and "boom" in str(events[-1].data["error"])


def test_a_later_nodes_failure_is_reported_for_it_before_the_runs() -> None:
    """From test_workflow_states.py::test_executor_failed_event_from_second_executor_in_chain."""

    def failing(msg: int) -> None:
        raise RuntimeError("boom")

    f = Formation("wf").add_function("passthrough", lambda m: m).add_function("failing", failing).connect("passthrough", "failing")
    events = list(f.run_stream(0))
    failed = [(e.type, e.node) for e in events if e.type in ("node_failed", "run_failed")]

    assert failed == [("node_failed", "failing"), ("run_failed", "failing")]
    assert [e.node for e in events if e.type == "node_finished"] == ["passthrough"]


def test_a_completed_streams_first_event_is_run_started_and_its_last_run_finished() -> None:
    """From test_workflow_states.py::test_completed_status_streaming and
    ::test_started_and_completed_event_origins (started first, IDLE last)."""
    events = list(Formation("wf").add_function("c", lambda msg: msg).run_stream("ok"))

    assert [e.type for e in events] == ["run_started", "node_started", "node_finished", "run_finished"]
    assert events[-1].data["result"].status == "succeeded"
    assert "suspended" not in events[-1].data


# -- edge groups -----------------------------------------------------------------------------------


def switch() -> Formation:
    """A switch-case on ``router``'s output: small numbers to ``small``, strings to ``text``."""
    return (Formation("switch").add_function("router", lambda x: x).add_function("small", lambda x: x)
            .add_function("text", lambda x: x)
            .connect("router", "small", when=lambda m: isinstance(m, int) and m < 5).connect("router", "text", when=str))


def test_a_switch_case_with_no_matching_case_and_no_default_fails_naming_the_node_and_the_value() -> None:
    """From test_edge.py (SwitchCaseEdgeGroup: a message no case matches, with no Default, is an
    error). Ours: ``NoRouteError`` naming the node and a preview of its output."""
    f = switch()
    assert f.run(3).outputs == {"small": 3}
    assert f.run("hi").outputs == {"text": "hi"}
    with pytest.raises(NoRouteError) as caught:
        f.run(99)

    assert caught.value.node == "router"
    assert "99" in str(caught.value)


def test_a_fan_out_selection_sends_to_the_targets_it_picks_and_skips_the_others() -> None:
    """From test_edge.py (FanOutEdgeGroup with a selection function: the message goes only to the
    targets it returns)."""
    picks = {"a": ["t1", "t3"], "b": ["t2"]}

    def tag(t: str) -> Callable[[str], str]:
        return lambda x: f"{t}:{x}"

    def picked(t: str) -> Callable[[str], bool]:
        return lambda m: t in picks[m]

    f = Formation("select").add_function("source", lambda x: x)
    for target in ("t1", "t2", "t3"):
        f.add_function(target, tag(target)).connect("source", target, when=picked(target))
    result = f.run("a")

    assert result.outputs == {"t1": "t1:a", "t3": "t3:a"}
    assert result.nodes["t2"].status == "skipped"
    assert f.run("b").outputs == {"t2": "t2:b"}


def test_an_edge_condition_sees_the_output_and_may_route_on_its_type() -> None:
    """From test_edge.py (an edge's condition is called with the message; type-based routing by the
    handler's input type)."""
    seen: list[Any] = []

    def picky(m: Any) -> bool:
        seen.append(m)
        return True

    f = (Formation("types").add_function("source", lambda x: x).add_function("ints", lambda x: x * 2)
         .add_function("strs", str.upper).add_function("log", lambda x: x)
         .connect("source", "ints", when=int).connect("source", "strs", when=str).connect("source", "log", when=picky))

    assert f.run(4).outputs == {"ints": 8, "log": 4}
    assert f.run("x").outputs == {"strs": "X", "log": "x"}
    assert seen == [4, "x"]


# -- joins and agents in cycles --------------------------------------------------------------------


def test_a_join_in_a_loop_fires_once_per_iteration_with_the_branches_that_ran_in_it() -> None:
    """From test_workflow.py::test_comprehensive_edge_groups_workflow and test_edge.py's FanInEdgeGroup
    (a fan-in fires when every source has sent), inside a cycle where one branch runs only on even
    values: each iteration's join gets that iteration's values, the skipped branch counting as sent."""
    f = (Formation("loopjoin").add_function("start", lambda x: x).add_function("hub", lambda x: x + 1)
         .add_function("even", lambda x: x * 10).add_function("always", lambda x: x)
         .add_function("join", lambda values: sum(values.values())).add_function("done", lambda x: x)
         .connect("start", "hub").connect("hub", "even", when=lambda v: v % 2 == 0).connect("hub", "always")
         .connect("even", "join").connect("always", "join")
         .connect("join", "hub", when=lambda s: s < 100).connect("join", "done", otherwise=True))
    result = f.run(0, timeout=20)

    assert result.nodes["hub"].outputs == [1, 2, 23, 24]
    assert result.nodes["even"].outputs == [20, 240]
    assert result.nodes["join"].outputs == [1, 22, 23, 264]
    assert result.output == 264


def test_a_sub_workflow_with_a_diamond_inside_a_loop_runs_whole_on_each_visit() -> None:
    """From test_sub_workflow.py (a WorkflowExecutor invoked repeatedly runs its workflow to the end each
    time) with a fan-in inside the sub-workflow."""
    inner = (Formation("inner").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2)
             .add_function("c", lambda x: x).add_function("j", lambda a, b, c: a + b + c)
             .connect("a", "b", "j").connect("a", "c", "j").connect("a", "j"))
    f = (Formation("outer").add_function("start", lambda x: x).add_formation("sub", inner).add_function("done", lambda x: x)
         .connect("start", "sub").connect("sub", "sub", when=lambda v: v < 100).connect("sub", "done", otherwise=True))
    result = f.run(1, timeout=20)

    assert result.nodes["sub"].outputs == [8, 36, 148]
    assert result.nodes["sub/j"].outputs == [8, 36, 148]
    assert result.output == 148


def test_an_agent_node_in_a_loop_starts_each_visit_with_a_fresh_conversation() -> None:
    """From test_agent_executor.py (an AgentExecutor keeps its conversation across invocations, so a
    second message sees the first exchange). Deliberately different: an agent node runs a new session
    per visit, given only that visit's input; carry context forward in the value (or a blackboard)."""
    provider = ScriptedProvider(["draft 1", "draft 2"])
    f = (Formation("loop").add_function("start", lambda x: x)
         .add_agent("writer", Agent("writer", provider=provider), max_visits=2)
         .add_function("again", lambda draft: f"improve {draft}").add_function("done", lambda x: x)
         .connect("start", "writer").connect("writer", "again", when=lambda d: d == "draft 1")
         .connect("again", "writer").connect("writer", "done", otherwise=True))
    result = f.run("write")

    assert result.output == "draft 2"
    assert [[m.text for m in r.messages] for r in provider.requests] == [["write"], ["improve draft 1"]]
