"""What ``EventBus.subscribe`` refuses, each with an error naming the argument and the fix:
an ``async def`` subscriber (its events would be coroutines never awaited), kinds that are
not names, a timeout that is not a number."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors.events import Event, EventBus


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as bus:
        yield bus


def test_an_async_subscriber_is_refused_naming_the_fix(bus: EventBus) -> None:
    async def on_event(event: Event) -> None:
        pass

    with pytest.raises(TypeError, match=r"on_event is an async def function.*plain function.*run_coroutine_threadsafe"):
        bus.subscribe("tool_end", on_event)

    assert bus.kinds == frozenset()


@pytest.mark.parametrize("kinds", [None, 3, [1]])
def test_kinds_that_are_not_kind_names_are_refused_naming_them(bus: EventBus, kinds: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=r"kinds must be.*session_start"):
        bus.subscribe(kinds, print)


@pytest.mark.parametrize("timeout", ["1", [1]])
def test_a_timeout_that_is_not_a_number_is_a_type_error_naming_it(bus: EventBus, timeout: Any) -> None:
    with pytest.raises(TypeError, match=r"subscribe: timeout must be a number of seconds > 0 or None, got"):
        bus.subscribe("tool_end", print, timeout=timeout)
