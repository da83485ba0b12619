"""A run's own timeout raises ``RunTimeoutError`` (a ``FormationRuntimeError`` and a
``TimeoutError``), told apart from a node's timeout by its type, on every way of running."""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Iterator

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError, RunTimeoutError


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _stuck_after_a_step(release: threading.Event, **node: float) -> Formation:
    def stuck(x: int) -> int:
        release.wait(10)
        return x

    return (Formation("slow").add_function("first", lambda x: x + 1).add_function("stuck", stuck, **node)
            .add_function("last", lambda x: x).connect("first", "stuck", "last"))


def test_a_run_timeout_is_a_run_timeout_error_naming_the_limit_and_the_unfinished_nodes(
        release: threading.Event) -> None:
    with pytest.raises(TimeoutError) as caught:
        _stuck_after_a_step(release).run(1, timeout=0.2)
    err = caught.value
    assert isinstance(err, RunTimeoutError) and isinstance(err, FormationRuntimeError)
    assert (err.timeout, err.unfinished, err.node, err.outputs) == (0.2, ["stuck"], None, {"first": 2})
    assert "timed out after 0.2s" in str(err) and err.run_id
    assert err.nodes["first"].status == "succeeded" and err.nodes["stuck"].status != "succeeded"


def test_a_node_timeout_is_not_a_run_timeout_error(release: threading.Event) -> None:
    with pytest.raises(FormationRuntimeError) as caught:
        _stuck_after_a_step(release, timeout=0.2).run(1)
    assert not isinstance(caught.value, TimeoutError)
    assert isinstance(caught.value.__cause__, NodeTimeoutError) and caught.value.node == "stuck"


def test_submit_and_arun_fail_with_the_run_timeout_error_too(release: threading.Event) -> None:
    f = _stuck_after_a_step(release)
    with f.start() as running:
        future = running.submit(1, timeout=0.2)
        with pytest.raises(RunTimeoutError):
            future.result(5)

    async def main() -> None:
        with pytest.raises(RunTimeoutError) as caught:
            await f.arun(1, timeout=0.2)
        assert caught.value.unfinished == ["stuck"]

    asyncio.run(main())


def test_a_run_timeout_error_survives_pickling_with_its_facts() -> None:
    err = RunTimeoutError("run r timed out after 1s", timeout=1.0, unfinished=["a"], run_id="r", outputs={"b": 2})
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.timeout, back.unfinished, back.run_id, back.outputs) == (
        RunTimeoutError, "run r timed out after 1s", 1.0, ["a"], "r", {"b": 2})
