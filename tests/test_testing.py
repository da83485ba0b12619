"""The testkit: run_node, and the pytest plugin's fixtures and leak check."""

from __future__ import annotations

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.testing import ScriptedProvider, run_node

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
        from wingman_actors.actors._nodes import FunctionActor
        from wingman_actors.actors._envelope import new_envelope

        def test_probe_fixture(actor_probe, scripted_provider):
            assert scripted_provider(["x"]).run_inference is not None
            ref = FunctionActor.start(lambda x: x + 1, reply_to=actor_probe)
            ref.tell(new_envelope("work", 1))
            assert actor_probe.expect_message(type="result").payload == 2
            ref.stop()

        def test_leaks_an_actor():
            FunctionActor.start(lambda x: x)
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
