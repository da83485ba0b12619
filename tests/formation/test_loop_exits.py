"""A join after a loop: the loop's visits that go round again do not resolve the edges
that leave the loop, so the join waits for the visit that leaves it (DESIGN: joins are
per visit, and nothing is lost)."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors import Formation


def test_a_join_after_a_self_loop_receives_the_loop_s_last_output() -> None:
    seen: list[dict[str, Any]] = []

    def finish(values: dict[str, Any]) -> dict[str, Any]:
        seen.append(values)
        return values

    f = (
        Formation("loop_then_join")
        .add_function("step", lambda n: n + 1)
        .add_function("other", lambda n: 100)
        .add_function("finish", finish)
        .connect("step", "step", when=lambda n: n < 3)
        .connect("step", "finish", when=lambda n: n >= 3)
        .connect("other", "finish")
    )
    result = f.run(0)
    assert result.output == {"step": 3, "other": 100}
    assert seen == [{"step": 3, "other": 100}]
    assert result.nodes["step"].outputs == [1, 2, 3]


def test_a_join_after_an_agent_style_loop_waits_for_the_answer_that_leaves_it() -> None:
    # LangGraph's agent loop: agent → tools while there is work, tools → agent (a back
    # edge), agent → answer otherwise; answer also joins a branch outside the loop.
    f = (
        Formation("agent_loop_join")
        .add_function("start", lambda n: n)
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", lambda n: n * 10)
        .add_function("context", lambda n: f"context for {n}")
        .add_function("answer", lambda agent, context: f"{context}: {agent}")
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 20)
        .connect("tools", "agent")
        .connect("agent", "answer", otherwise=True)
        .connect("start", "context", "answer")
    )
    result = f.run(1)
    assert result.outputs == {"answer": "context for 1: 21"}
    assert result.nodes["agent"].outputs == [2, 21]
    assert result.nodes["answer"].visits == 1


@pytest.mark.xfail(strict=True, reason=(
    "known gap: a visit that goes round its loop holds its exit edges' skips for the next visit "
    "(formation/_firing.py loops_on); when the loop's body is then skipped (on_error='skip'), the skip "
    "does not travel the back edge, so the held exit skip is never sent and the join after the loop "
    "never resolves: it ends 'skipped' instead of running with the branch that delivered. Needs the "
    "run to remember held exits and release them when the body's skip reaches its back edge."))
def test_a_join_after_a_loop_whose_body_is_skipped_runs_with_what_was_delivered() -> None:
    def broken_tool(n: int) -> int:
        raise ValueError("tool broke")

    def answer(agent: int | None = None, context: str | None = None) -> str:
        return f"{context}: {agent}"

    f = (
        Formation("agent_loop_skip")
        .add_function("start", lambda n: n)
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", broken_tool, on_error="skip")
        .add_function("context", lambda n: f"context for {n}")
        .add_function("answer", answer)
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 20)
        .connect("tools", "agent")
        .connect("agent", "answer", otherwise=True)
        .connect("start", "context", "answer")
    )
    assert f.run(1).outputs == {"answer": "context for 1: None"}
