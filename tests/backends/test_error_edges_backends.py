"""Error edges and the retry policy on both backends: routing and supervision stay in the
driver, so a NodeFailure (its error, its input) is shipped to a handler in a Ray worker."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
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
    assert (result.outputs, result.output) == ({"handler": "a QuotaError 3 2"}, "a QuotaError 3 2")
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


class CodedError(Exception):
    """An error whose class takes other arguments than its message (as many libraries' do)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code


def _coded(x: int) -> int:
    raise CodedError(x, "refused")


def _code_of(failure: NodeFailure) -> str:
    return f"{type(failure.error).__name__} {getattr(failure.error, 'code', None)} {failure.error}"


def test_an_error_whose_class_takes_other_arguments_keeps_its_class_on_each_backend(backend: str) -> None:
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("coded").add_function("a", _coded).run(7, backend=backend)
    cause = caught.value.__cause__
    assert isinstance(cause, CodedError) and cause.code == 7 and str(cause) == "7: refused"


def test_an_error_whose_class_takes_other_arguments_reaches_the_handler_on_each_backend(backend: str) -> None:
    f = Formation("coded").add_function("a", _coded).add_function("handler", _code_of)
    result = f.connect("a", "handler", on_error=True).run(7, backend=backend)
    assert result.outputs == {"handler": "CodedError 7 7: refused"}
