"""Step Functions' Catch, Fail, Choice and task tokens on ``backend="ray"``, as LocalStack's own
suite tests them (localstack/localstack ``tests/aws/services/stepfunctions/v2/``): the same
declarations as ``test_peer_sfn_errors.py``, ``test_peer_sfn_parallel.py`` and
``test_peer_sfn_choice.py``, with every node replica a Ray actor, so failures, routes and answers
cross process boundaries (pickled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


class FailureType(Exception):
    """``"Error": "FailureType"`` of parallel_state_catch.json5."""


class TaskRefused(Exception):
    """What a task raises when its token is answered with a failure."""


def identity(x: Any) -> Any:
    return x


def fail_branch(x: Any) -> Any:
    raise FailureType("Cause description")


def fail_empty(x: Any) -> Any:
    raise FailureType()


def times_ten(x: int) -> int:
    return x * 10


def join(v: dict[str, Any]) -> Any:
    return v


def failure_summary(f: NodeFailure) -> tuple[str, str, Any]:
    return (f.node, str(f.error), f.input)


def test_a_catcher_on_a_parallel_state_takes_a_branchs_failure_on_ray() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_parallel_state_catch on backend="ray"."""
    branches = (Formation("branches").add_function("start", identity).add_function("branch1", fail_branch)
                .add_function("branch2", times_ten).add_function("join", join)
                .connect("start", "branch1", "join").connect("start", "branch2", "join"))
    f = (Formation("parallel_catch").add_formation("parallel", branches).add_function("final", identity)
         .add_function("final_caught", failure_summary)
         .connect("parallel", "final").connect("parallel", "final_caught", on_error=True))
    result = f.run(1, backend="ray", timeout=120)
    node, error, given = result.outputs["final_caught"]
    assert (node, given) == ("parallel", 1)
    assert "branch1" in error and "Cause description" in error
    assert result.nodes["final"].status == "skipped"


def test_a_fail_state_without_a_cause_reports_the_error_name_alone_on_ray() -> None:
    """From LocalStack base/test_base.py::test_state_fail_empty on backend="ray"."""
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("raise_empty_failure").add_function("fail", fail_empty).run({}, backend="ray", timeout=120)
    assert caught.value.node == "fail" and caught.value.nodes["fail"].error == "FailureType"


def wait_for_token(order: str) -> str:
    answer = interrupt({"order": order})
    if answer.get("error"):
        raise TaskRefused(answer["error"])
    return str(answer["output"])


def caught_text(f: NodeFailure) -> str:
    return f"caught {type(f.error).__name__}: {f.error}"


def next_text(out: str) -> str:
    return f"next: {out}"


def test_a_task_token_answered_with_a_failure_reaches_the_catcher_on_ray(tmp_path: Path) -> None:
    """From LocalStack callback/test_callback.py::test_sqs_failure_in_wait_for_task_token on
    backend="ray" (the run suspends, the answer resumes it in Ray actors, the task raises and its
    Catch takes it)."""
    f = (Formation("token_failure").add_function("wait", wait_for_token)
         .add_function("next", next_text).add_function("caught", caught_text)
         .connect("wait", "next").connect("wait", "caught", on_error=True))
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = f.run("o-1", store=store, backend="ray", timeout=120)
        assert first.status == "suspended" and first.interrupt == {"node": "wait", "payload": {"order": "o-1"}}
        done = f.resume(first.run_id, store=store, answer={"error": "Failure cause"}, backend="ray", timeout=120)
        assert done.outputs == {"caught": "caught TaskRefused: Failure cause"}
        assert done.nodes["wait"].status == "failed"


def is_numeric(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def label(name: str) -> Any:
    def node(v: Any) -> str:
        return name

    return node


def test_is_operators_route_null_boolean_and_numeric_values_on_ray() -> None:
    """From LocalStack choice_operators/test_is_operators.py on backend="ray" (type routes decided in
    the Ray actor of the choice node)."""
    f = (Formation("is_operators").add_function("choice", identity)
         .add_function("is_null", label("null")).add_function("is_boolean", label("boolean"))
         .add_function("is_numeric", label("numeric")).add_function("default", label("default"))
         .connect("choice", "is_null", when=type(None)).connect("choice", "is_boolean", when=bool)
         .connect("choice", "is_numeric", when=is_numeric).connect("choice", "default", otherwise=True))
    with f.start(backend="ray") as running:
        futures = [running.submit(v) for v in (None, True, 3.5, "x")]
        outputs = [fut.result(timeout=120).outputs for fut in futures]
    assert outputs == [{"is_null": "null"}, {"is_boolean": "boolean"}, {"is_numeric": "numeric"},
                       {"default": "default"}]
