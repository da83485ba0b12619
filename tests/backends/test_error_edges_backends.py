"""Error edges and the retry policy on both backends: routing and supervision stay in the
driver, so a NodeFailure (its error, its input) is shipped to a handler in a Ray worker."""

from __future__ import annotations

import time
from pathlib import Path

from wingman_actors import Formation
from wingman_actors.errors import NodeTimeoutError
from wingman_actors.formation import NodeFailure


class QuotaError(Exception):
    """An error class of the test module (shipped by value to Ray workers)."""


def _broken(x: int) -> int:
    raise QuotaError(f"over quota for {x}")


def _describe(failure: NodeFailure) -> str:
    return f"{failure.node} {type(failure.error).__name__} {failure.input} {failure.attempts}"


def test_an_error_edge_hands_the_failure_to_its_handler_on_each_backend(backend: str) -> None:
    f = (Formation("guarded").add_function("a", _broken, retries=1, backoff=0.01, jitter=False)
         .add_function("handler", _describe).connect("a", "handler", on_error=True))
    result = f.run(3, backend=backend)
    assert result.outputs == {"handler": "a QuotaError 3 2"}
    assert result.nodes["a"].status == "failed"


def test_a_timeout_reaches_the_handler_on_each_backend(backend: str, tmp_path: Path) -> None:
    release = tmp_path / "release"

    def stuck(x: int) -> int:
        deadline = time.monotonic() + 30
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return x

    def kind(failure: NodeFailure) -> bool:
        return isinstance(failure.error, NodeTimeoutError)

    f = (Formation("slow").add_function("a", stuck, timeout=0.5, retry_on=ValueError)
         .add_function("handler", kind).connect("a", "handler", on_error=True))
    try:
        assert f.run(1, backend=backend).outputs == {"handler": True}
    finally:
        release.write_text("go")
