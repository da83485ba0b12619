"""A join after a loop: the loop's visits that go round again do not resolve the edges
that leave the loop, so the join waits for the visit that leaves it (DESIGN: joins are
per visit, and nothing is lost)."""

from __future__ import annotations

import time
from typing import Any

from wingman_actors import Formation
from wingman_actors.formation.events import FormationEvent, FormationEventType


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
    result = f.run(1)
    assert result.outputs == {"answer": "context for 1: None"}
    assert result.nodes["tools"].status == "skipped"
    assert result.nodes["agent"].outputs == [2]
    assert result.nodes["answer"].visits == 1
    with f.start() as running:  # pipelined runs each release their own held exit
        futures = [running.submit(n) for n in range(25)]  # from 19 on, agent leaves the loop at once
        assert [fut.result(30).outputs for fut in futures] == [
            {"answer": f"context for {n}: {None if n < 19 else n + 1}"} for n in range(25)]


def _loop_whose_body_turns_back_no_more() -> Formation:
    # the body decides: back to agent while the value is small, else out to report; agent's
    # last visit went round, so its exit to answer never fires
    return (
        Formation("body_leaves")
        .add_function("start", lambda n: n)
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", lambda n: n * 2)
        .add_function("report", lambda n: f"report {n}")
        .add_function("context", lambda n: f"context for {n}")
        .add_function("answer", lambda agent=None, context=None: f"{context}: {agent}")
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 20)
        .connect("tools", "agent", when=lambda n: n < 5)
        .connect("tools", "report", otherwise=True)
        .connect("agent", "answer", otherwise=True)
        .connect("start", "context", "answer")
    )


def test_a_join_after_a_loop_left_through_its_body_runs_once_without_the_loop_s_value() -> None:
    result = _loop_whose_body_turns_back_no_more().run(0)
    assert result.outputs == {"report": "report 6", "answer": "context for 0: None"}
    assert result.nodes["agent"].outputs == [1, 3]
    assert result.nodes["tools"].outputs == [2, 6]
    assert result.nodes["answer"].visits == 1


def test_a_held_exit_is_released_only_after_every_visit_in_flight_has_ended() -> None:
    # context is slow: when the loop's body is skipped, answer must still wait for it
    def slow_context(n: int) -> str:
        time.sleep(0.2)
        return f"slow context for {n}"

    f = (
        Formation("slow_branch")
        .add_function("start", lambda n: n)
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", lambda n: 1 / 0, on_error="skip")
        .add_function("context", slow_context)
        .add_function("answer", lambda agent=None, context=None: f"{context}: {agent}")
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 20)
        .connect("tools", "agent")
        .connect("agent", "answer", otherwise=True)
        .connect("start", "context", "answer")
    )
    result = f.run(3)
    assert result.outputs == {"answer": "slow context for 3: None"}
    assert result.nodes["answer"].visits == 1



def test_a_join_after_the_handler_of_a_loop_body_receives_the_failure_it_handled() -> None:
    # tools' visits that go round do not resolve its error edge: the handler hears of the
    # loop once, when tools fails on the third round
    def tools(n: int) -> int:
        if n > 5:
            raise ValueError("too big")
        return n * 2

    f = (
        Formation("handled_body")
        .add_function("start", lambda n: n)
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", tools)
        .add_function("handler", lambda failure: f"handled {failure.input}")
        .add_function("context", lambda n: f"context for {n}")
        .add_function("answer", lambda agent=None, handler=None, context=None: f"{context}: {agent} {handler}")
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 20)
        .connect("tools", "agent")
        .connect("tools", "handler", on_error=True)
        .connect("agent", "answer", otherwise=True)
        .connect("handler", "answer")
        .connect("start", "context", "answer")
    )
    result = f.run(0)
    assert result.outputs == {"answer": "context for 0: None handled 7"}
    assert result.nodes["agent"].outputs == [1, 3, 7]
    assert result.nodes["tools"].status == "failed"
    assert result.nodes["handler"].outputs == ["handled 7"]
    assert result.nodes["answer"].visits == 1

    def expected(start: int) -> str:
        n = start + 1  # agent
        while n < 20:
            if n > 5:  # tools fails
                return f"context for {start}: None handled {n}"
            n = n * 2 + 1
        return f"context for {start}: {n} None"

    with f.start() as running:  # pipelined runs each hold and release their own exits
        futures = [running.submit(n) for n in range(25)]
        assert [fut.result(30).outputs["answer"] for fut in futures] == [expected(n) for n in range(25)]


def test_a_join_after_a_loop_whose_body_leaves_or_fails_hears_of_each_once() -> None:
    # tools turns back while small, else leaves to report; it fails on some values into
    # handler: report and handler each resolve answer's join once, whichever way the loop ended
    def tools(n: int) -> int:
        if n % 3 == 0:
            raise ValueError("a multiple of 3")
        return n * 2

    f = (
        Formation("body_leaves_or_fails")
        .add_function("start", lambda n: n)
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", tools)
        .add_function("report", lambda n: f"report {n}")
        .add_function("handler", lambda failure: f"handled {failure.input}")
        .add_function("answer", lambda start=None, agent=None, report=None, handler=None:
                      f"{start}: {agent} {report} {handler}")
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 50)
        .connect("tools", "agent", when=lambda n: n < 10)
        .connect("tools", "report", otherwise=True)
        .connect("tools", "handler", on_error=True)
        .connect("agent", "answer", otherwise=True)
        .connect("report", "answer")
        .connect("handler", "answer")
        .connect("start", "answer")
    )

    def expected(start: int) -> str:
        n = start
        while (n := n + 1) < 50:  # agent
            if n % 3 == 0:
                return f"{start}: None None handled {n}"
            if (n := n * 2) >= 10:  # tools
                return f"{start}: None report {n} None"
        return f"{start}: {n} None None"

    events: list[FormationEvent] = []
    assert f.run(0, on_event=events.append).outputs == {"answer": "0: None None handled 3"}
    # report is skipped once, by the failure; the handler that ran is never skipped after
    assert [e.node for e in events if e.type is FormationEventType.NODE_SKIPPED] == ["report"]
    with f.start() as running:
        futures = [running.submit(n) for n in range(60)]
        assert [fut.result(30).outputs["answer"] for fut in futures] == [expected(n) for n in range(60)]
