"""A node whose only incoming edges are back edges (a self-loop included) is a source:
it receives the run's input, and its loop runs end to end, bounded by ``max_visits``."""

from __future__ import annotations

import pytest

from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import Formation


def inc(n: int) -> int:
    return n + 1


def below_five(n: int) -> bool:
    return n < 5


def reached_five(n: int) -> bool:
    return n >= 5


def counter(**policies: int) -> Formation:
    return (
        Formation("count")
        .add_function("inc", inc, **policies)
        .add_function("show", lambda n: f"reached {n}")
        .connect("inc", "inc", when=below_five)
        .connect("inc", "show", when=reached_five)
    )


def test_a_self_loop_entry_is_a_source_of_the_plan() -> None:
    plan = counter().validate()
    assert plan.sources == ("inc",)
    assert plan.nodes["inc"].is_source and plan.nodes["inc"].back_preds == ("inc",)
    assert plan.nodes["inc"].forward_preds == ()


def test_a_self_loop_entry_receives_the_input_and_loops_until_its_condition_ends() -> None:
    result = counter().run(0)
    assert result.output == "reached 5"
    assert result.nodes["inc"].visits == 5


def test_a_self_loop_entry_that_never_ends_fails_at_the_visit_limit() -> None:
    f = Formation("spin").add_function("spin", inc, max_visits=3).connect("spin", "spin", when=lambda n: True)
    with pytest.raises(FormationRuntimeError, match="visited more than max_visits=3") as info:
        f.run(0)
    assert info.value.node == "spin"


def test_a_cycle_entered_from_an_entry_node_runs_from_it() -> None:
    f = (
        Formation("ping")
        .add_function("start", inc)
        .add_function("ping", inc)
        .add_function("pong", inc)
        .add_function("done", inc)
        .connect("start", "ping")
        .connect("ping", "pong", when=below_five)
        .connect("pong", "ping")
        .connect("ping", "done", otherwise=True)
    )
    plan = f.validate()
    assert plan.sources == ("start",)
    assert [(e.source, e.target, e.back) for e in plan.edges] == [
        ("start", "ping", False), ("ping", "pong", False), ("ping", "done", False), ("pong", "ping", True)
    ]
    assert f.run(-1).outputs == {"done": 6}  # start 0, ping 1, pong 2, ping 3, pong 4, ping 5 leaves the loop
