"""The retry policy of a node: ``retry_on`` (which errors are retried), ``max_backoff``
(the longest wait) and ``jitter`` (random waits, or exactly ``backoff * 2**(attempt-1)``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import networkx as nx
import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import (
    FleetItemsError,
    FormationRuntimeError,
    FormationSetupError,
    NodeTimeoutError,
    PayloadError,
)
from wingman_actors.formation._supervision import backoff_delay, retryable
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


class Failing:
    """A node function that raises ``errors`` one after the other, then returns its input."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, x: Any) -> Any:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return x


def attempts_of(error: BaseException) -> int:
    assert isinstance(error, FormationRuntimeError)
    return error.attempts


# -- backoff_delay --------------------------------------------------------------------------


def test_backoff_without_jitter_is_exactly_base_times_two_to_the_attempt() -> None:
    assert [backoff_delay(0.1, n, jitter=False) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.4, 0.8]


def test_backoff_without_jitter_is_capped_by_max_backoff() -> None:
    assert [backoff_delay(1.0, n, cap=3.0, jitter=False) for n in (1, 2, 3, 4, 10)] == [1.0, 2.0, 3.0, 3.0, 3.0]


def test_backoff_with_jitter_stays_in_the_upper_half_of_the_capped_delay() -> None:
    delays = [backoff_delay(1.0, 5, cap=4.0) for _ in range(200)]
    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len(set(delays)) > 1


def test_backoff_of_a_huge_attempt_number_is_the_cap() -> None:
    assert backoff_delay(0.5, 5000, cap=7.0, jitter=False) == 7.0


def test_backoff_zero_means_retry_at_once() -> None:
    assert backoff_delay(0.0, 3, jitter=False) == 0.0


# -- retryable ------------------------------------------------------------------------------


def test_by_default_every_error_but_a_payload_error_is_retried() -> None:
    assert retryable(None, ValueError("x")) and retryable(None, NodeTimeoutError("t"))
    assert not retryable(None, PayloadError("bad input"))


def test_retry_on_names_the_errors_that_are_retried() -> None:
    assert retryable((ConnectionError,), ConnectionResetError("reset"))
    assert not retryable((ConnectionError,), ValueError("x"))


def test_an_error_that_says_it_is_not_retryable_is_never_retried_whatever_retry_on_says() -> None:
    assert not retryable((PayloadError,), PayloadError("bad input"))


def test_a_fleet_failure_is_retried_when_retry_on_names_every_failed_item_error() -> None:
    assert retryable((ConnectionError,), FleetItemsError("f", 3, {0: ConnectionError("a"), 2: ConnectionError("b")}))
    assert not retryable((ConnectionError,), FleetItemsError("f", 3, {0: ConnectionError("a"), 1: KeyError("b")}))


# -- runs -----------------------------------------------------------------------------------


def test_an_error_retry_on_does_not_name_gives_up_at_once() -> None:
    fn = Failing(KeyError("missing"), KeyError("missing"))
    f = Formation("f").add_function("a", fn, retries=3, backoff=0, retry_on=ConnectionError)
    with pytest.raises(FormationRuntimeError, match="KeyError") as info:
        f.run(1)
    assert (attempts_of(info.value), fn.calls) == (1, 1)


def test_an_error_retry_on_names_is_retried() -> None:
    fn = Failing(ConnectionError("down"), TimeoutError("slow"))
    f = Formation("f").add_function("a", fn, retries=3, backoff=0, retry_on=(ConnectionError, TimeoutError))
    result = f.run(5)
    assert (result.output, result.nodes["a"].attempts, fn.calls) == (5, 3, 3)


def test_retry_on_may_be_a_list_in_a_hand_built_graph() -> None:
    fn = Failing(ConnectionError("down"))
    graph = nx.DiGraph()
    graph.add_node("a", kind="function", fn=fn, retries=1, backoff=0, retry_on=[ConnectionError])
    assert Formation("hand", graph).run(2).output == 2


def test_by_default_a_payload_error_is_not_retried_but_other_errors_are() -> None:
    fn = Failing(ValueError("flaky"), PayloadError("bad input"))
    f = Formation("f").add_function("a", fn, retries=5, backoff=0)
    with pytest.raises(FormationRuntimeError, match="PayloadError") as info:
        f.run(1)
    assert (attempts_of(info.value), fn.calls) == (2, 2)


def test_the_retry_events_of_a_run_without_jitter_carry_the_exact_delays() -> None:
    events: list[FormationEvent] = []
    fn = Failing(ValueError("1"), ValueError("2"), ValueError("3"))
    f = Formation("f").add_function("a", fn, retries=3, backoff=0.01, max_backoff=0.03, jitter=False)
    assert f.run(1, on_event=events.append).output == 1
    assert [e.data["delay_s"] for e in events if e.type == "node_retry"] == [0.01, 0.02, 0.03]


def test_a_run_waits_the_backoff_between_attempts() -> None:
    fn = Failing(ValueError("1"), ValueError("2"))
    f = Formation("f").add_function("a", fn, retries=2, backoff=0.1, jitter=False)
    t0 = time.perf_counter()
    assert f.run(1).output == 1
    assert time.perf_counter() - t0 >= 0.3  # 0.1 then 0.2


def test_max_backoff_caps_the_wait_of_a_run() -> None:
    fn = Failing(ValueError("1"), ValueError("2"), ValueError("3"))
    f = Formation("f").add_function("a", fn, retries=3, backoff=5.0, max_backoff=0.01, jitter=False)
    t0 = time.perf_counter()
    assert f.run(1).output == 1
    assert time.perf_counter() - t0 < 2.0


def test_a_timeout_is_not_retried_when_retry_on_names_only_other_errors() -> None:
    gate = threading.Event()
    f = Formation("f").add_function("a", lambda x: gate.wait(5), timeout=0.1, retries=3, retry_on=ValueError)
    try:
        with pytest.raises(FormationRuntimeError) as info:
            f.run(1)
    finally:
        gate.set()
    assert isinstance(info.value.__cause__, NodeTimeoutError)
    assert info.value.attempts == 1


@pytest.mark.parametrize("retry_on", [None, TimeoutError, NodeTimeoutError, OSError])  # None: the default
def test_a_timeout_is_retried_by_default_or_when_retry_on_covers_timeouts(retry_on: type[BaseException] | None) -> None:
    gate = threading.Event()
    calls: list[int] = []

    def slow_once(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            gate.wait(5)
        return x

    f = Formation("f").add_function("a", slow_once, timeout=0.1, retries=1, backoff=0, retry_on=retry_on)
    try:
        assert f.run(4).output == 4
    finally:
        gate.set()


def flaky_fleet(retry_on: type[BaseException]) -> Formation:
    """A fleet of two items whose first model call raises ConnectionError."""
    agent = Agent("w", provider=ScriptedProvider([ConnectionError("down"), "ok", "ok"]))
    return (Formation("fl").add_function("split", str.split)
            .add_fleet("fleet", agent, max_workers=1, retries=1, backoff=0, retry_on=retry_on)
            .connect("split", "fleet"))


def test_a_fleet_is_retried_when_retry_on_names_its_failed_items_errors() -> None:
    result = flaky_fleet(ConnectionError).run("a b")
    assert (result.output, result.nodes["fleet"].attempts) == (["ok", "ok"], 2)


def test_a_fleet_is_not_retried_when_retry_on_names_other_errors() -> None:
    with pytest.raises(FormationRuntimeError, match=r"FleetItemsError: .*down") as info:
        flaky_fleet(KeyError).run("a b")
    assert info.value.attempts == 1


# -- declarations ---------------------------------------------------------------------------


@pytest.mark.parametrize(("policy", "value", "expected"), [
    ("retry_on", "ValueError", "retry_on must be an exception class or a tuple of them"),
    ("retry_on", (ValueError, 3), "retry_on must be an exception class or a tuple of them"),
    ("retry_on", int, "retry_on must be an exception class or a tuple of them"),
    ("max_backoff", -1, "max_backoff must be a number of seconds >= 0"),
    ("max_backoff", float("inf"), "max_backoff must be a number of seconds >= 0"),
    ("jitter", "no", "jitter must be True"),
    ("jitter", 0, "jitter must be True"),
])
def test_a_bad_retry_policy_is_refused_naming_the_node(policy: str, value: Any, expected: str) -> None:
    with pytest.raises(FormationSetupError, match=expected) as info:
        Formation("f").add_function("fetch", abs, **{policy: value})
    assert "node 'fetch'" in str(info.value)


def test_a_bad_retry_policy_in_a_hand_built_graph_is_refused_by_validate() -> None:
    graph = nx.DiGraph()
    graph.add_node("fetch", kind="function", fn=abs, retry_on="ConnectionError", jitter="yes")
    with pytest.raises(FormationSetupError) as info:
        Formation("hand", graph).validate()
    assert [p.split(":")[0] for p in info.value.problems] == ["node 'fetch'", "node 'fetch'"]


def test_the_policies_are_accepted_by_agent_and_fleet_nodes() -> None:
    agent = Agent("w", provider=ScriptedProvider(["ok"]))
    f = (Formation("f").add_agent("one", agent, retry_on=ConnectionError, max_backoff=1, jitter=False)
         .add_fleet("many", agent, retry_on=(ConnectionError,), max_backoff=2.5, jitter=True))
    plan = f.validate()
    assert (plan.nodes["one"].retry_on, plan.nodes["one"].max_backoff, plan.nodes["one"].jitter) == (
        (ConnectionError,), 1.0, False)
    assert plan.nodes["many"].max_backoff == 2.5


def test_the_plan_applies_the_retry_policy_defaults() -> None:
    spec = Formation("f").add_function("a", abs).validate().nodes["a"]
    assert (spec.retry_on, spec.max_backoff, spec.jitter) == (None, 30.0, True)


def test_a_misspelt_retry_policy_is_refused_with_a_suggestion() -> None:
    with pytest.raises(FormationSetupError, match="did you mean 'retry_on' for 'retry_only'"):
        Formation("f").add_function("a", abs, retry_only=ValueError)


# -- agent and fleet nodes out of time: the node's timeout, not the session's own error ---------
# The node's timeout is also its session's deadline: when the session noticed it first, its
# AgentError(kind=timeout) used to fail the attempt, so retry_on=TimeoutError did not retry it
# and an error edge's NodeFailure did not carry a NodeTimeoutError (about 4 runs in 5).


def test_an_agent_node_out_of_time_fails_with_a_node_timeout_error() -> None:
    for _ in range(3):  # the session and the node's timer race for it
        slow = Agent("w", provider=ScriptedProvider(["late"], latency_s=2, cycle=True))
        with pytest.raises(FormationRuntimeError) as info:
            Formation("f").add_agent("a", slow, timeout=0.1).run("q")
        assert isinstance(info.value.__cause__, NodeTimeoutError)


def test_an_agent_node_out_of_time_is_retried_when_retry_on_names_timeout_error() -> None:
    for _ in range(3):
        slow = Agent("w", provider=ScriptedProvider(["late"], latency_s=2, cycle=True))
        f = Formation("f").add_agent("a", slow, timeout=0.1, retries=2, backoff=0, retry_on=TimeoutError)
        with pytest.raises(FormationRuntimeError) as info:
            f.run("q")
        assert info.value.attempts == 3


def test_a_fleet_node_out_of_time_fails_with_a_node_timeout_error() -> None:
    for _ in range(3):
        slow = Agent("w", provider=ScriptedProvider(["late"], latency_s=2, cycle=True))
        with pytest.raises(FormationRuntimeError) as info:
            Formation("f").add_fleet("a", slow, timeout=0.1).run(["q", "r"])
        assert isinstance(info.value.__cause__, NodeTimeoutError)
