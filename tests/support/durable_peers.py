"""Helpers shared by the tests ported from durable-execution peers' suites
(tests/durable/test_peer_awsdurable*.py, test_peer_inngest*.py, test_peer_temporal.py): a run
taken to its failure, a node that counts its calls, a step that fails its first calls and notes
when it was called, and an error no retry can help."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore


class Final(Exception):
    """An error that says no retry can help (``retryable = False``): AWS's ``FatalError``,
    Inngest's ``NonRetriableError``."""

    retryable = False


def failed_run(f: Formation, input: Any, store: RunStore) -> str:
    """Run ``f`` to its failure; the failed run's id."""
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(input, store=store)
    run_id = caught.value.run_id
    assert run_id is not None and store.get(run_id).status == "failed"
    return run_id


def counted(counter: Counter, name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` that counts its calls under ``name``."""

    def node(x: Any) -> Any:
        counter.hit(name)
        return fn(x)

    return node


def fails_first(times: list[float], failures: int = 1) -> Callable[[str], str]:
    """A step that notes when each call began (``time.monotonic()``, appended to ``times``),
    raises ``ConnectionError`` on its first ``failures`` calls and then returns its input: the
    gaps in ``times`` are the delays before its retries."""

    def step(x: str) -> str:
        times.append(time.monotonic())
        if len(times) <= failures:
            raise ConnectionError("down")
        return x

    return step
