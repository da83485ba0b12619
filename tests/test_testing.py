"""The testkit: run_node, and the pytest plugin's fixtures and leak check."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

import wingman_actors.testing
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.testing import ActorProbe, ReplyKind, ScriptedProvider, node_actor, run_node, work

pytest_plugins = ["pytester"]


def budget() -> Formation:
    def total(amounts: list[float]) -> float:
        return sum(amounts)

    advisor = Agent("advisor", provider=ScriptedProvider(["never used"]))
    return (
        Formation("budget")
        .add_function("total", total)
        .add_agent("advise", advisor, prompt="Total spent: {input}")
        .connect("total", "advise")
    )


def test_run_node_runs_a_function_node_alone_and_returns_output_and_trace() -> None:
    run = run_node(budget(), "total", [1.5, 2.5])
    assert run.output == 4.0
    assert run.trace.status is NodeStatus.SUCCEEDED and run.trace.attempts == 1
    assert run.envelope.type == "result"


def test_run_node_s_trace_carries_the_output_and_outputs_of_its_one_visit() -> None:
    trace = run_node(budget(), "total", [1.5, 2.5]).trace
    assert (trace.output, trace.outputs, trace.visits) == (4.0, [4.0], 1)


def test_node_statuses_come_from_the_testkit_without_a_private_import() -> None:
    from wingman_actors.testing import NodeStatus as Public

    assert "NodeStatus" in wingman_actors.testing.__all__ and Public is NodeStatus
    assert run_node(budget(), "total", [1]).trace.status is Public.SUCCEEDED


def fan_in() -> Formation:
    """``left`` and ``right`` feed ``pair`` (keyword arguments) and ``both`` (one dict)."""

    def pair(left: str, right: str) -> str:
        return left + right

    def both(values: dict[str, str]) -> str:
        return "".join(values.values())

    f = Formation("fan-in").add_function("left", str.strip).add_function("right", str.strip)
    f.add_function("pair", pair).add_function("both", both)
    return f.connect("left", "pair").connect("right", "pair").connect("left", "both").connect("right", "both")


def test_run_node_of_a_fan_in_node_given_no_dict_names_the_predecessors_it_needs() -> None:
    for name in ("pair", "both"):
        with pytest.raises(TypeError, match=r"predecessors \('left', 'right'\).*dict keyed by predecessor.*got str"):
            run_node(fan_in(), name, "ab")


def test_run_node_of_a_keyword_fan_in_node_given_an_unknown_key_names_it() -> None:
    with pytest.raises(TypeError, match=r"no predecessor 'lfet'.*'left', 'right'"):
        run_node(fan_in(), "pair", {"lfet": "a", "right": "b"})


def test_run_node_runs_a_fan_in_node_given_the_dict_of_its_predecessors() -> None:
    assert run_node(fan_in(), "pair", {"left": "a", "right": "b"}).output == "ab"
    assert run_node(fan_in(), "both", {"left": "a", "right": "b"}).output == "ab"


def test_run_node_with_a_provider_override_unit_tests_an_agent_node() -> None:
    provider = ScriptedProvider(["Spend less on coffee."])
    run = run_node(budget(), "advise", 4.0, provider=provider)
    assert run.output == "Spend less on coffee."
    assert provider.requests[0].messages[-1].text == "Total spent: 4.0"
    assert run.trace.usage.output_tokens > 0


def test_run_node_can_override_the_function() -> None:
    assert run_node(budget(), "total", [1, 2], fn=lambda xs: max(xs)).output == 2


def test_run_node_raises_the_node_failure_with_its_cause() -> None:
    with pytest.raises(FormationRuntimeError, match="node 'total' failed") as info:
        run_node(budget(), "total", ["a", 1])
    assert info.value.__cause__ is not None


def test_run_node_names_the_nodes_when_the_name_is_unknown() -> None:
    with pytest.raises(KeyError, match="nodes: total, advise"):
        run_node(budget(), "totl", [1])


def test_run_node_refuses_overrides_it_cannot_apply() -> None:
    with pytest.raises(TypeError, match="cannot override"):
        run_node(budget(), "total", [1], retries=3)


def test_plugin_fixtures_and_leak_check_fail_a_test_that_leaks_an_actor(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nfilterwarnings = error\nwingman_leak_check = true\n")
    pytester.makepyfile(
        """
        from wingman_actors.testing import ReplyKind, node_actor, work

        def test_probe_fixture(actor_probe, scripted_provider):
            assert scripted_provider(["x"]).run_inference is not None
            ref = node_actor(lambda x: x + 1, reply_to=actor_probe)
            ref.tell(work(1))
            assert actor_probe.expect_message(ReplyKind.RESULT).payload == 2
            ref.stop()

        def test_leaks_an_actor():
            node_actor(lambda x: x)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*left 1 actor(s)*"])


def test_plugin_leak_check_can_be_disabled_with_a_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import threading, pytest

        @pytest.mark.wingman_allow_leaks
        def test_allowed():
            threading.Thread(target=threading.Event().wait, args=(0.5,), daemon=True).start()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_function_node_actor_replies_a_result_to_a_work_message(actor_probe: ActorProbe) -> None:
    ref = node_actor(lambda x: x * 2, name="double", reply_to=actor_probe)
    try:
        ref.tell(work(21, run_id="r1"))
        reply = actor_probe.expect_message(ReplyKind.RESULT)
    finally:
        ref.stop()
    assert (reply.payload, reply.sender, reply.run_id, reply.type) == (42, "double", "r1", ReplyKind.RESULT)


def test_every_reply_of_a_node_actor_has_an_envelope_id_of_its_own(actor_probe: ActorProbe) -> None:
    def half(x: int) -> int:
        if x % 2:
            raise ValueError("odd")
        return x // 2

    ref = node_actor(half, reply_to=actor_probe)
    sent = [work(n) for n in (2, 3, 4)]
    try:
        for message in sent:
            ref.tell(message)
        replies = [actor_probe.expect_message(kind) for kind in (ReplyKind.RESULT, ReplyKind.FAILURE, ReplyKind.RESULT)]
    finally:
        ref.stop()
    ids = [reply.id for reply in replies] + [message.id for message in sent]
    assert all(isinstance(i, int) and i > 0 for i in ids) and len(set(ids)) == len(ids)
    assert [reply.cause.id for reply in replies] == [message.id for message in sent]


def test_a_node_actor_that_raises_replies_a_failure_carrying_the_exception(actor_probe: ActorProbe) -> None:
    def fail(x: int) -> int:
        raise ValueError(f"no {x}")

    ref = node_actor(fail, reply_to=actor_probe)
    try:
        ref.tell(work(3))
        reply = actor_probe.expect_message(ReplyKind.FAILURE)
    finally:
        ref.stop()
    assert isinstance(reply.payload, ValueError) and str(reply.payload) == "no 3"
    assert reply.sender == "fail"  # named after the function


def test_an_agent_node_actor_answers_with_its_provider_and_prompt(actor_probe: ActorProbe) -> None:
    provider = ScriptedProvider(["Owls hunt at night."])
    ref = node_actor(Agent("owl", provider=provider), prompt="Summarise: {input}", reply_to=actor_probe)
    try:
        ref.tell(work("Owls are nocturnal."))
        reply = actor_probe.expect_message(ReplyKind.RESULT)
    finally:
        ref.stop()
    assert reply.payload == "Owls hunt at night." and reply.sender == "owl"
    assert provider.requests[0].messages[-1].text == "Summarise: Owls are nocturnal."


def test_node_actor_refuses_what_is_neither_a_function_nor_an_agent() -> None:
    with pytest.raises(TypeError, match="takes a function or an Agent, got int"):
        node_actor(42)  # type: ignore[arg-type]


def test_node_actor_refuses_a_prompt_for_a_function() -> None:
    with pytest.raises(TypeError, match="prompt= applies to an agent node"):
        node_actor(lambda x: x, prompt="{input}")


def test_reply_kinds_compare_equal_to_the_envelope_types() -> None:
    assert [k.value for k in ReplyKind] == ["result", "failure"]
    assert ReplyKind.RESULT == "result"


def test_the_testkit_examples_in_its_docstrings_run() -> None:
    failed, attempted = doctest.testmod(wingman_actors.testing)
    assert attempted >= 10 and failed == 0


def test_the_testkit_example_imports_no_private_module() -> None:
    import ast
    from pathlib import Path

    source = (Path(__file__).parent.parent / "examples" / "testkit.py").read_text()
    modules = [
        node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
    ] + [alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import) for alias in node.names]
    private = [m for m in modules if any(part.startswith("_") for part in m.split(".") if part != "__future__")]
    assert private == []


@pytest.mark.parametrize("wait", [float("nan"), -1, "1", True])
def test_expect_message_refuses_a_timeout_that_is_not_a_number_of_seconds(wait: Any) -> None:
    # a nan waited forever; a negative one reported "no message within -1s"
    with ActorProbe.start() as probe, pytest.raises((TypeError, ValueError), match=r"timeout must be a number of seconds"):
        probe.expect_message(timeout=wait)


@pytest.mark.parametrize("wait", [float("nan"), -1, "1", True])
def test_expect_no_message_refuses_a_duration_that_is_not_a_number_of_seconds(wait: Any) -> None:
    # a negative one passed at once, checking nothing
    with ActorProbe.start() as probe, pytest.raises((TypeError, ValueError), match=r"duration must be a number of seconds"):
        probe.expect_no_message(wait)


@pytest.mark.parametrize("wait", [float("nan"), 0, -1, "1"])
def test_run_node_refuses_a_timeout_that_is_not_a_number_of_seconds(wait: Any) -> None:
    # it ran the node, then failed it with "gave no reply within -1s"
    formation = Formation("f").add_function("inc", lambda x: x + 1)
    with pytest.raises((TypeError, ValueError), match=r"timeout must be a number of seconds > 0"):
        run_node(formation, "inc", 1, timeout=wait)


def test_run_node_refuses_what_is_not_a_formation() -> None:
    # it was "AttributeError: 'str' object has no attribute 'validate'"
    with pytest.raises(TypeError, match=r"run_node takes a Formation.*got str"):
        run_node("f", "inc", 1)
