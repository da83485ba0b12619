"""Interrupts that name their attempt, in the body of a replica's Ray actor (a
:class:`NodeHost`, run here in-process: it needs no Ray). The driver sends an interrupt
as a Ray call and the input over the direct channel, so either may arrive first."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors.actors._function import FunctionActor
from wingman_actors.backends._ray_host import NodeHost
from wingman_actors.backends._ray_wire import Call, Done
from wingman_actors.errors import AgentError, ErrorKind


class Slow:
    """An async function whose input ``"slow"`` waits 30 s (recording that it started and
    that its ``finally`` ran); any other input returns at once."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.unwound = threading.Event()
        self.calls: list[Any] = []

    async def __call__(self, x: Any) -> Any:
        self.calls.append(x)
        if x != "slow":
            return x
        self.started.set()
        try:
            await asyncio.sleep(30)
        finally:
            self.unwound.set()
        return x


@pytest.fixture
def slow() -> Slow:
    return Slow()


@pytest.fixture
def host(slow: Slow) -> Iterator[NodeHost]:
    made = NodeHost(FunctionActor, (slow,), {"name": "slow"})
    try:
        yield made
    finally:
        made.node.on_stop()


def test_an_interrupt_that_arrives_before_its_attempt_cancels_the_attempt_when_it_arrives(
    host: NodeHost, slow: Slow,
) -> None:
    host.interrupt("attempt 1 timed out after 1s", 7)

    with pytest.raises(AgentError, match="attempt 1 timed out after 1s") as info:
        host.process("slow", "in", 1.0, 7)

    assert info.value.kind is ErrorKind.CANCELLED
    assert slow.calls == []  # the function never ran


def test_an_early_interrupt_cancels_its_attempt_on_the_call_path_too(host: NodeHost, slow: Slow) -> None:
    host.interrupt("the run was cancelled", 3)

    with pytest.raises(AgentError, match="the run was cancelled"):
        list(host.call(Call("slow", "in", None, key=3)))

    assert slow.calls == []


def test_an_interrupt_for_another_attempt_does_not_cancel_this_one(host: NodeHost) -> None:
    host.interrupt("attempt 1 timed out after 1s", 1)  # its attempt never arrives

    assert host.process("fast", "in", None, 2) == ("fast", None)
    assert list(host.call(Call("fast", "in", None, key=3))) == [Done("fast", None)]


def test_an_interrupt_for_an_attempt_that_ended_does_not_cancel_the_next(host: NodeHost) -> None:
    assert host.process("fast", "in", None, 1) == ("fast", None)
    host.interrupt("too late", 1)

    assert host.process("fast", "in", None, 2) == ("fast", None)


def test_an_interrupt_cancels_the_named_attempt_and_not_a_later_one_that_arrived_meanwhile(
    host: NodeHost, slow: Slow,
) -> None:
    outcomes: dict[str, Any] = {}

    def attempt(payload: str, key: int) -> None:
        try:
            outcomes[payload] = host.process(payload, "in", None, key)
        except AgentError as exc:
            outcomes[payload] = exc

    first = threading.Thread(target=attempt, args=("slow", 1))
    first.start()
    assert slow.started.wait(10)
    # a fresh proxy's attempt, sent while the replaced proxy's attempt still runs
    second = threading.Thread(target=attempt, args=("fast", 2))
    second.start()

    host.interrupt("attempt 1 timed out after 1s", 1)
    first.join(10)
    second.join(10)

    assert slow.unwound.is_set()  # the coroutine was cancelled: its finally ran
    assert isinstance(outcomes["slow"], AgentError) and outcomes["slow"].kind is ErrorKind.CANCELLED
    assert outcomes["fast"] == ("fast", None)


def test_an_interrupt_for_a_waiting_attempt_cancels_it_and_not_the_one_in_progress(
    host: NodeHost, slow: Slow,
) -> None:
    outcomes: dict[int, Any] = {}

    def attempt(payload: str, key: int) -> None:
        try:
            outcomes[key] = host.process(payload, "in", None, key)
        except AgentError as exc:
            outcomes[key] = exc

    first = threading.Thread(target=attempt, args=("slow", 1))
    first.start()
    assert slow.started.wait(10)
    second = threading.Thread(target=attempt, args=("fast", 2))
    second.start()

    host.interrupt("attempt 2 timed out", 2)  # the second waits for the first: it is dropped
    host.interrupt("attempt 1 timed out", 1)
    first.join(10)
    second.join(10)

    assert isinstance(outcomes[1], AgentError) and "attempt 1 timed out" in str(outcomes[1])
    assert isinstance(outcomes[2], AgentError) and "attempt 2 timed out" in str(outcomes[2])
    assert slow.calls == ["slow"]  # the dropped attempt never ran
