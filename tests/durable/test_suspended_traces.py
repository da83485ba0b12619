"""The node traces of a suspended run say where it waits: the node that suspended it is
``suspended`` and the nodes it has not reached are ``pending`` (they run on resume), not
``skipped``; a branch its condition did not take stays ``skipped``."""

from __future__ import annotations

from wingman_actors import Formation, interrupt
from wingman_actors.formation._result import NodeStatus
from wingman_actors.store import RunStore


def inc(x: int) -> int:
    return x + 1


def ask(x: int) -> int:
    return int(interrupt({"question": x}))


def double(x: int) -> int:
    return 2 * x


def waiting_chain() -> Formation:
    return (Formation("wait").add_function("a", inc).add_function("ask", ask).add_function("c", double)
            .connect("a", "ask", "c"))


def statuses(result: object) -> dict[str, str]:
    return {name: trace.status.value for name, trace in result.nodes.items()}  # type: ignore[attr-defined]


def test_the_node_that_interrupted_is_suspended_and_the_nodes_after_it_pending(store: RunStore) -> None:
    result = waiting_chain().run(1, store=store)
    assert result.status == "suspended"
    assert statuses(result) == {"a": "succeeded", "ask": "suspended", "c": "pending"}
    resumed = waiting_chain().resume(result.run_id, store=store, answer=5)
    assert statuses(resumed) == {"a": "succeeded", "ask": "succeeded", "c": "succeeded"} and resumed.output == 10


def test_a_branch_not_taken_stays_skipped_in_a_suspended_run(store: RunStore) -> None:
    f = (Formation("branch").add_function("a", inc).add_function("ask", ask).add_function("never", double)
         .connect("a", "ask").connect("a", "never", when=lambda x: x > 100))
    result = f.run(1, store=store)
    assert statuses(result) == {"a": "succeeded", "ask": "suspended", "never": "skipped"}


def test_a_formation_node_holding_the_interrupt_is_suspended_as_its_inner_node(store: RunStore) -> None:
    outer = (Formation("outer").add_function("first", inc).add_formation("sub", waiting_chain())
             .add_function("last", double).connect("first", "sub", "last"))
    result = outer.run(1, store=store)
    assert result.interrupt is not None and result.interrupt["node"] == "sub/ask"
    assert statuses(result) == {"first": "succeeded", "sub": "suspended", "sub/a": "succeeded",
                                "sub/ask": "suspended", "sub/c": "pending", "last": "pending"}


def test_a_breakpoint_before_a_node_suspends_it_and_one_after_leaves_it_succeeded(store: RunStore) -> None:
    f = Formation("two").add_function("a", inc).add_function("b", double).connect("a", "b")
    assert statuses(f.run(1, store=store, break_before=["b"])) == {"a": "succeeded", "b": "suspended"}
    assert statuses(f.run(1, store=store, break_after=["a"])) == {"a": "succeeded", "b": "pending"}


def test_a_finished_runs_branch_not_taken_is_still_skipped() -> None:
    f = (Formation("done").add_function("a", inc).add_function("end", double).add_function("never", double)
         .connect("a", "end").connect("a", "never", when=lambda x: x > 100))
    result = f.run(1)
    assert result.nodes["never"].status is NodeStatus.SKIPPED and result.nodes["end"].status is NodeStatus.SUCCEEDED


def test_a_node_that_interrupts_on_its_retry_is_traced_with_that_attempt_and_no_error(store: RunStore) -> None:
    # langgraph test_retry.py::test_graph_with_single_retry_policy, the retried node calling interrupt()
    calls: list[int] = []

    def flaky_ask(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise ConnectionError("down")
        return x + int(interrupt("ok?"))

    f = Formation("retry_ask").add_function("flaky_ask", flaky_ask, retries=2, backoff=0)
    first = f.run(1, store=store)
    trace = first.nodes["flaky_ask"]
    assert (first.status, trace.status.value) == ("suspended", "suspended")
    assert (trace.attempts, trace.error) == (2, None)  # the failed attempt was retried past
    resumed = f.resume(first.run_id, store=store, answer=4)
    assert resumed.output == 5 and resumed.nodes["flaky_ask"].error is None
