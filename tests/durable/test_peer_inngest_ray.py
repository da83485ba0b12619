"""The Inngest port's failure behaviours on ``backend="ray"`` (inngest/inngest-py,
``tests/test_function/cases/non_retriable_error.py``, ``on_failure.py``): the node runs in
a Ray worker process, so its error crosses a process boundary before the supervisor
judges it; the outcome must be the threads backend's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.durable_peers import Final
from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


class ResponseError(Exception):
    """An error whose ``__str__`` raises (it reads a response it was not given)."""

    def __str__(self) -> str:
        raise AttributeError("'NoneType' object has no attribute 'text'")


def final(x: str) -> str:
    raise Final("foo")


def broken(x: str) -> str:
    raise ResponseError()


def describe(failure: NodeFailure) -> str:
    return f"{failure.node} {failure.attempts} {type(failure.error).__name__}"


def told(failure: NodeFailure) -> str:
    return f"{failure.node} {failure.attempts} {failure.error}"


def test_a_non_retryable_error_on_ray_fails_after_one_attempt_as_on_threads() -> None:
    """From inngest-py tests/test_function/cases/non_retriable_error.py on backend="ray"."""
    f = Formation("final").add_function("step_1", final, retries=3, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", backend="ray", timeout=120)
    assert (caught.value.node, caught.value.attempts) == ("step_1", 1)
    assert isinstance(caught.value.__cause__, Final) and str(caught.value.__cause__) == "foo"


class Logged:
    """A node that appends its name to a file at each call (calls made in Ray's worker
    processes, counted where the test reads them), failing its first ``failures`` calls."""

    def __init__(self, log: Path, name: str, fn: Any, failures: int = 0) -> None:
        self.log, self.name, self.fn, self.failures = log, name, fn, failures

    def __call__(self, x: Any) -> Any:
        with self.log.open("a") as out:
            out.write(self.name + "\n")
        if self.log.read_text().split().count(self.name) <= self.failures:
            raise ConnectionError(f"{self.name} is down")
        return self.fn(x)


def test_a_journalled_failure_handler_on_ray_gets_the_error_and_a_resume_does_not_run_the_node_again(
        tmp_path: Path) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py on backend="ray", across a resume."""
    log = tmp_path / "calls.txt"
    f = (Formation("handled").add_function("step_1", Logged(log, "step_1", final))
         .add_function("handler", Logged(log, "handler", told, failures=1))
         .connect("step_1", "handler", on_error=True))
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run("x", store=store, backend="ray", timeout=120)
        assert caught.value.node == "handler"
        run_id = str(caught.value.run_id)
        result = f.resume(run_id, store=store, backend="ray", timeout=120)
        history = [(v.node, v.status) for v in store.history(run_id)]
    # the error is rebuilt from the journal (a FormationRuntimeError whose message starts with its class's name)
    assert result.outputs == {"handler": "step_1 1 Final: foo"}
    assert log.read_text().split() == ["step_1", "handler", "handler"]
    # the handler's failed visit, which failed the run, then its visit on resume
    assert history == [("step_1", "failed"), ("handler", "failed"), ("handler", "succeeded")]


def test_an_error_whose_str_raises_on_ray_is_retried_and_reaches_the_failure_handler() -> None:
    """From inngest-py tests/test_function/cases/on_failure.py on backend="ray" (see
    tests/formation/test_peer_inngest_errors.py)."""
    f = (Formation("broken").add_function("call_api", broken, retries=1, backoff=0.01)
         .add_function("handler", describe).connect("call_api", "handler", on_error=True))
    result = f.run("x", backend="ray", timeout=120)
    assert result.outputs == {"handler": "call_api 2 ResponseError"}
    assert result.nodes["call_api"].error == "ResponseError: <str() failed: AttributeError>"
