"""Blackboard: thread-safe shared state, watch, and tools for agents."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from wingman_actors import Agent, Session
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.orchestration import (
    AgentRegistry,
    Blackboard,
    blackboard_tools,
    current_blackboard,
    use_blackboard,
)
from wingman_actors.testing import ScriptedProvider


def test_set_get_delete_and_keys() -> None:
    board = Blackboard()
    board.set("b", 2)
    board.set("a", {"x": [1, 2]})

    assert (board.get("a"), board.get("b"), board.get("c", "none"), board.keys()) == ({"x": [1, 2]}, 2, "none", ["a", "b"])
    board.delete("a")
    assert board.keys() == ["b"] and "a" not in board


def test_deleting_a_missing_key_names_the_keys_present() -> None:
    board = Blackboard({"here": 1})

    with pytest.raises(KeyError, match=r"no key 'gone'; keys: \['here'\]"):
        board.delete("gone")


def test_a_value_that_is_not_json_is_refused_on_set() -> None:
    with pytest.raises(TypeError, match="value for 'k' is not JSON-serialisable \\(object"):
        Blackboard().set("k", object())


def test_keys_must_be_non_empty_strings() -> None:
    with pytest.raises(TypeError, match="keys are non-empty strings"):
        Blackboard().set("", 1)


def test_values_are_copies_so_a_reader_cannot_change_the_board() -> None:
    board = Blackboard()
    value = {"items": [1]}
    board.set("k", value)
    value["items"].append(2)
    board.get("k")["items"].append(3)

    assert board.get("k") == {"items": [1]}


def test_concurrent_updates_are_never_lost() -> None:
    board = Blackboard()

    def work(i: int) -> None:
        for _ in range(200):
            board.update("count", lambda n: n + 1, 0)
        board.set(f"writer-{i}", i)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(8)))

    assert board.get("count") == 1600
    assert len(board.keys()) == 9


def test_watch_returns_at_once_when_the_key_is_set() -> None:
    assert Blackboard({"k": 1}).watch("k", timeout=0) == 1


def test_watch_wakes_when_another_thread_sets_the_key() -> None:
    board = Blackboard()
    writer = threading.Timer(0.1, board.set, args=("answer", 42))
    writer.start()
    try:
        t0 = time.perf_counter()
        assert board.watch("answer", timeout=5) == 42
        assert time.perf_counter() - t0 < 2
    finally:
        writer.join()


def test_watch_times_out_with_a_clear_error() -> None:
    board = Blackboard({"other": 1})

    with pytest.raises(TimeoutError, match=r"key 'late' was not set within 0.05s; keys set: \['other'\]"):
        board.watch("late", timeout=0.05)


@pytest.mark.parametrize("timeout", [-1, float("nan")])
def test_watch_refuses_a_timeout_below_zero_or_nan_rather_than_waiting_forever(timeout: float) -> None:
    with pytest.raises(ValueError, match=r"watch: timeout must be a number of seconds >= 0 or None, got"):
        Blackboard().watch("k", timeout=timeout)


def test_watch_refuses_a_timeout_that_is_not_a_number() -> None:
    with pytest.raises(TypeError, match=r"watch: timeout must be a number of seconds >= 0 or None, got '5'"):
        Blackboard().watch("k", timeout="5")  # type: ignore[arg-type]


@pytest.mark.parametrize("initial", [[("k", 1)], "k=1"])
def test_initial_values_that_are_not_a_dict_are_refused(initial: Any) -> None:
    with pytest.raises(TypeError, match=r"Blackboard\(initial\) takes a dict of keys to JSON values, got"):
        Blackboard(initial)


def test_tools_are_named_after_the_namespace() -> None:
    assert [t.name for t in Blackboard().tools("team")] == ["team_state_get", "team_state_set", "team_state_list"]


def test_a_bad_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="namespace must be 1-40 letters"):
        Blackboard().tools("has space")


def test_a_namespace_that_is_not_a_str_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"namespace must be a str .* got 3"):
        Blackboard().tools(3)  # type: ignore[arg-type]


def test_an_update_given_a_value_instead_of_a_function_says_to_use_set_and_changes_nothing() -> None:
    board = Blackboard()
    board.set("count", 1)
    with pytest.raises(TypeError, match=r"fn must be a callable .* use set\('count', value\)"):
        board.update("count", 3)  # type: ignore[arg-type]
    assert board.get("count") == 1


def test_a_scripted_agent_writes_lists_and_reads_through_the_tools() -> None:
    board = Blackboard()

    def tool_output(request: InferenceRequest) -> str:
        return " | ".join(b.content or "" for b in request.messages[-1].tool_results_blocks)

    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("s1", "team_state_set", {"key": "finding", "value": {"risk": "low"}})]),
        InferenceResponse.of_tool_calls([("l1", "team_state_list", {}), ("g1", "team_state_get", {"key": "finding"})]),
        tool_output,
    ])
    agent = Agent("writer", provider=provider, tools=board.tools("team"))

    result = Session(agent).run("record it")

    assert board.get("finding") == {"risk": "low"}
    assert result.response == '["finding"] | {"risk": "low"}'


def test_getting_a_missing_key_through_the_tool_is_an_error_the_model_sees() -> None:
    board = Blackboard({"a": 1})
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("g", "ns_state_get", {"key": "b"})]), "ok"])

    call = Session(Agent("x", provider=provider, tools=board.tools("ns"))).run("go").tool_calls[0]

    assert call.is_error and "no key 'b' in the shared state; keys: ['a']" in call.output


def test_bound_tools_work_on_an_empty_board() -> None:
    board = Blackboard()
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("l", "t_state_list", {})]), "ok"])

    call = Session(Agent("x", provider=provider, tools=board.tools("t"))).run("go").tool_calls[0]

    assert (call.is_error, call.output) == (False, "[]")


def test_current_blackboard_is_the_one_made_active_and_only_inside_the_block() -> None:
    board = Blackboard()

    with use_blackboard(board) as active:
        assert active is board and current_blackboard() is board
    assert current_blackboard() is None


def test_unbound_tools_act_on_the_board_active_when_they_run() -> None:
    first, second = Blackboard(), Blackboard()
    replies = [InferenceResponse.of_tool_calls([("s", "team_state_set", {"key": "k", "value": 1})]), "ok"]
    agent = Agent("x", provider=ScriptedProvider(replies, cycle=True), tools=blackboard_tools("team"))

    with use_blackboard(first):
        Session(agent).run("go")
    with use_blackboard(second):
        Session(agent).run("go")

    assert first.get("k") == 1 and second.get("k") == 1


def test_concurrent_tool_calls_see_the_active_board() -> None:
    board = Blackboard()
    calls = [(f"s{i}", "team_state_set", {"key": f"k{i}", "value": i}) for i in range(3)]
    agent = Agent("x", provider=ScriptedProvider([InferenceResponse.of_tool_calls(calls), "ok"]),
                  tools=blackboard_tools("team"))

    with use_blackboard(board):
        result = Session(agent).run("go")

    assert not any(c.is_error for c in result.tool_calls) and board.keys() == ["k0", "k1", "k2"]


def test_delegated_agents_see_the_board_active_for_their_parent() -> None:
    board = Blackboard()
    writer = Agent("writer", provider=ScriptedProvider([
        InferenceResponse.of_tool_calls([("s", "team_state_set", {"key": "by", "value": "writer"})]), "written",
    ]), tools=blackboard_tools("team"))
    registry = AgentRegistry()
    registry.register(writer, description="writes")
    lead = Agent("lead", delegates=registry, provider=ScriptedProvider([
        InferenceResponse.of_tool_calls([("d", "delegate", {"tasks": [{"agent": "writer", "task": "write"}]})]), "ok",
    ]))

    with use_blackboard(board):
        Session(lead).run("go")

    assert board.get("by") == "writer"


def test_unbound_tools_without_an_active_board_are_a_tool_error() -> None:
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("l", "team_state_list", {})]), "ok"])

    call = Session(Agent("x", provider=provider, tools=blackboard_tools("team"))).run("go").tool_calls[0]

    assert call.is_error and "no blackboard is shared with this run" in call.output


def test_a_blackboard_refuses_to_be_pickled_with_a_clear_error() -> None:
    import pickle

    with pytest.raises(TypeError, match="shared memory of one process and cannot be pickled"):
        pickle.dumps(Blackboard({"a": 1}))
