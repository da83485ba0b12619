"""A failed run's ``FormationRuntimeError`` carries the run's node traces (``nodes``):
which nodes ran, their attempts, outputs and errors, as ``FormationResult.nodes`` has
them for a run that succeeds."""

from __future__ import annotations

import asyncio

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.formation.events import FormationEventType


def inc(x: int) -> int:
    return x + 1


def broken(x: int) -> int:
    raise ValueError(f"no luck with {x}")


def _failing() -> Formation:
    return (
        Formation("fails")
        .add_function("first", inc)
        .add_function("boom", broken, retries=1, backoff=0.001)
        .add_function("after", inc)
        .connect("first", "boom", "after")
    )


def _check(err: FormationRuntimeError) -> None:
    assert set(err.nodes) == {"first", "boom", "after"}
    first, boom, after = err.nodes["first"], err.nodes["boom"], err.nodes["after"]
    assert first.status is NodeStatus.SUCCEEDED and first.output == 2 and first.attempts == 1
    assert boom.status is NodeStatus.FAILED and boom.attempts == 2
    assert boom.error is not None and "no luck with 2" in boom.error
    assert after.status is not NodeStatus.SUCCEEDED and after.attempts == 0


def test_a_failed_run_error_carries_the_traces_of_its_nodes() -> None:
    with pytest.raises(FormationRuntimeError) as info:
        _failing().run(1)
    assert info.value.node == "boom"
    _check(info.value)


def test_the_run_failed_event_exception_carries_the_traces_of_the_nodes() -> None:
    events = list(_failing().run_stream(1))
    assert events[-1].type is FormationEventType.RUN_FAILED
    err = events[-1].data["exception"]
    assert isinstance(err, FormationRuntimeError)
    _check(err)


def test_arun_raises_an_error_carrying_the_traces_of_the_nodes() -> None:
    with pytest.raises(FormationRuntimeError) as info:
        asyncio.run(_failing().arun(1))
    _check(info.value)


def test_an_error_not_raised_by_a_run_has_no_node_traces() -> None:
    assert FormationRuntimeError("made by hand").nodes == {}
