"""Failures whose exception cannot describe itself, from the Inngest Python SDK's own test
suite (inngest/inngest-py, ``tests/test_function/cases/on_failure.py``,
``non_retriable_error.py``, ``change_step_error.py``: a step's error is reported with its
class name and message, retried by the function's ``retries`` and handed to
``on_failure``). A user's exception whose ``__str__`` raises (it reads an attribute an
``__init__`` did not set, as client libraries' response errors do) is still the node's
failure: retried, routed to its error edges or skipped, and reported as
``"Class: <str() failed: ...>"``, as Python's own tracebacks show it; the runtime used to fail
the run with "this is a bug in wingman-actors", ignoring retries, error edges and ``on_error``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


class ResponseError(Exception):
    """A client library's error whose message is read from a response it was not given."""

    def __init__(self, response: Any = None) -> None:
        super().__init__()
        self.response = response

    def __str__(self) -> str:
        return str(self.response.text)  # (raises AttributeError when response is None)


def raising(counter: Counter, name: str, failures: int = 99) -> Any:
    """A node that raises ``ResponseError()`` its first ``failures`` calls, then echoes."""

    def node(x: Any) -> Any:
        if counter.hit(name) <= failures:
            raise ResponseError()
        return x

    return node


def test_a_node_error_whose_str_raises_fails_the_run_naming_the_node_and_the_errors_class() -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (the run's error names the
    exception's class)."""
    f = Formation("broken_str").add_function("call_api", raising(Counter(), "call_api"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x")
    err = caught.value
    assert (err.node, err.attempts) == ("call_api", 1)
    assert isinstance(err.__cause__, ResponseError)
    assert "bug in wingman-actors" not in str(err)
    assert "ResponseError: <str() failed: AttributeError>" in str(err)
    assert err.nodes["call_api"].error == "ResponseError: <str() failed: AttributeError>"


def test_a_node_error_whose_str_raises_is_retried_by_the_nodes_retries() -> None:
    """From inngest-py tests/test_function/cases/non_retriable_error.py (an ordinary error is
    retried ``retries`` times)."""
    counter = Counter()
    f = Formation("retried").add_function("call_api", raising(counter, "call_api", failures=2), retries=2,
                                          backoff=0.01)
    result = f.run("x")
    assert (result.output, result.nodes["call_api"].attempts, counter.count("call_api")) == ("x", 3, 3)


def test_a_node_error_whose_str_raises_reaches_the_failure_handler() -> None:
    """From inngest-py tests/test_function/cases/on_failure.py and change_step_error.py."""
    failures: list[NodeFailure] = []

    def handler(failure: NodeFailure) -> str:
        failures.append(failure)
        return str(failure)

    f = (Formation("handled").add_function("call_api", raising(Counter(), "call_api")).add_function("handler", handler)
         .connect("call_api", "handler", on_error=True))
    result = f.run("x")
    assert result.outputs == {
        "handler": "node 'call_api' failed after 1 attempt(s): ResponseError: <str() failed: AttributeError>"}
    assert isinstance(failures[0].error, ResponseError)


def test_a_node_error_whose_str_raises_is_skipped_under_on_error_skip() -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (the node's failure policy
    applies, whatever the error)."""
    f = (Formation("skipped").add_function("call_api", raising(Counter(), "call_api"), on_error="skip")
         .add_function("after", str).add_function("other", str.upper).connect("call_api", "after"))
    result = f.run("x")
    assert result.outputs == {"other": "X"}
    assert (result.nodes["call_api"].status, result.nodes["after"].status) == ("skipped", "skipped")
    assert result.nodes["call_api"].error == "ResponseError: <str() failed: AttributeError>"


def test_a_map_item_error_whose_str_raises_fails_the_map_with_its_items_error() -> None:
    """From inngest-py tests/test_function/cases/parallel_steps.py with on_failure.py (one of
    the parallel steps fails)."""
    counter = Counter()

    def item(x: int) -> int:
        if x == 2:
            counter.hit("two")
            raise ResponseError()
        return x

    f = Formation("each").add_map("each", item, retries=1, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run([1, 2, 3])
    items = caught.value.__cause__
    assert isinstance(items, MapItemsError) and isinstance(items.errors[1], ResponseError)
    assert "item 1: ResponseError: <str() failed: AttributeError>" in str(caught.value)
    assert counter.count("two") == 2


def test_a_journalled_failure_whose_str_raises_is_given_to_the_handler_again_on_resume(tmp_path: Any) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (the failure event carries the
    error's class), across a resume."""
    counter = Counter()

    def handler(failure: NodeFailure) -> str:
        if counter.hit("handler") == 1:
            raise ConnectionError("handler down")
        return str(failure.error)

    f = (Formation("handled").add_function("call_api", raising(counter, "call_api")).add_function("handler", handler)
         .connect("call_api", "handler", on_error=True))
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run("x", store=store)
        assert caught.value.node == "handler"
        result = f.resume(str(caught.value.run_id), store=store)
    assert result.outputs == {"handler": "ResponseError: <str() failed: AttributeError>"}
    assert counter.calls == {"call_api": 1, "handler": 2}
