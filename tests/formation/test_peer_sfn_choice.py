"""Choice states and task tokens of AWS Step Functions, as LocalStack's own suite tests them
(localstack/localstack, ``tests/aws/services/stepfunctions/v2/choice_operators/``
(``test_is_operators.py``, ``test_boolean_equals.py``, ``test_numeric.py``,
``test_string_operators.py``, ``test_timestamp_operators.py``), ``scenarios/test_base_scenarios.py``
(``test_choice_aws_docs_scenario``) and ``callback/test_callback.py``). A Choice state is a
node whose out-edges carry ``when=`` (a predicate or a type: ``IsNull``, ``IsBoolean``,
``IsNumeric``, ``IsString``, ``IsTimestamp`` are ``when=type(None)``, ``bool``, ``int | float``,
``str``, ``datetime``), its ``Default`` an ``otherwise=True`` edge; ``States.NoChoiceMatched`` is
``NoRouteError``. A ``.waitForTaskToken`` task is a node calling ``interrupt()``;
``SendTaskSuccess`` is ``resume(run_id, answer=...)``.

Deliberately different (DESIGN.md "Routes" documents ours):
- ``when=int`` means ``isinstance(output, int)``, and a Python ``bool`` is an ``int``: a boolean
  takes an ``int`` route (SFN's ``IsNumeric`` is false for ``true``). ``when=bool`` before it
  does not stop it: every condition that holds fires.
- A comparison operator on a value of the wrong type is no match in SFN; a predicate that
  raises (``"x" > 10``) fails its node's visit naming the edge, so a typed route goes first.
- ``SendTaskFailure`` has no counterpart: the answer is a value, and the task turns a refusal
  into its own exception, which its error edge (Catch) handles.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.store import RunNotResumableError, RunStore


def typed_choice() -> Formation:
    """The Is* operators of test_is_operators.py, each on its own route, with a Default."""
    return (Formation("is_operators").add_function("choice", lambda v: v)
            .add_function("is_null", lambda v: "null").add_function("is_boolean", lambda v: "boolean")
            .add_function("is_string", lambda v: "string").add_function("is_timestamp", lambda v: "timestamp")
            .add_function("default", lambda v: "default")
            .connect("choice", "is_null", when=type(None)).connect("choice", "is_boolean", when=bool)
            .connect("choice", "is_string", when=str).connect("choice", "is_timestamp", when=datetime.datetime)
            .connect("choice", "default", otherwise=True))


@pytest.mark.parametrize(("value", "route"), [
    (None, "is_null"), (True, "is_boolean"), (False, "is_boolean"), ("", "is_string"),
    (datetime.datetime(2016, 3, 14, 1, 59, tzinfo=datetime.UTC), "is_timestamp"), (1.5, "default"),
    ({"a": 1}, "default"), ([], "default"),
])
def test_is_operators_route_a_value_by_its_type_and_the_rest_to_the_default(value: Any, route: str) -> None:
    """From LocalStack choice_operators/test_is_operators.py (test_is_null, test_is_boolean,
    test_is_string, test_is_timestamp: each operator against values of every JSON type)."""
    result = typed_choice().run(value)
    assert list(result.outputs) == [route]
    assert sum(t.status == "skipped" for t in result.nodes.values()) == 4


def test_is_numeric_routes_ints_and_floats_and_a_boolean_too_as_python_counts_it() -> None:
    """From LocalStack choice_operators/test_is_operators.py::test_is_numeric (``IsNumeric`` is
    false for ``true``): ours routes by ``isinstance``, and ``True`` is an ``int``; both the
    boolean and the numeric routes fire for it."""
    f = (Formation("numeric").add_function("choice", lambda v: v)
         .add_function("numeric", lambda v: "numeric").add_function("boolean", lambda v: "boolean")
         .add_function("default", lambda v: "default")
         .connect("choice", "boolean", when=bool).connect("choice", "numeric", when=int | float)
         .connect("choice", "default", otherwise=True))
    assert f.run(0).outputs == {"numeric": "numeric"}
    assert f.run(-2.5).outputs == {"numeric": "numeric"}
    assert f.run("1").outputs == {"default": "default"}
    assert f.run(True).outputs == {"boolean": "boolean", "numeric": "numeric"}
    strict = (Formation("strict").add_function("choice", lambda v: v)
              .add_function("numeric", lambda v: "numeric").add_function("default", lambda v: "default")
              .connect("choice", "numeric", when=lambda v: isinstance(v, int | float) and not isinstance(v, bool))
              .connect("choice", "default", otherwise=True))
    assert strict.run(True).outputs == {"default": "default"}


@pytest.mark.parametrize(("value", "route"), [(0, "low"), (9.99, "low"), (10, "mid"), (20, "mid"), (20.5, "high")])
def test_numeric_comparisons_route_each_boundary_to_its_range(value: float, route: str) -> None:
    """From LocalStack choice_operators/test_numeric.py (NumericLessThan, NumericGreaterThanEquals,
    NumericLessThanEquals at their boundaries)."""
    f = (Formation("numeric_ranges").add_function("choice", lambda v: v)
         .add_function("low", lambda v: v).add_function("mid", lambda v: v).add_function("high", lambda v: v)
         .connect("choice", "low", when=lambda v: v < 10).connect("choice", "mid", when=lambda v: 10 <= v <= 20)
         .connect("choice", "high", when=lambda v: v > 20))
    assert f.run(value).outputs == {route: value}


def test_a_numeric_comparison_on_a_string_fails_the_visit_naming_the_edge_unless_a_type_route_goes_first() -> None:
    """From LocalStack choice_operators/test_numeric.py (a NumericEquals on a string value does
    not match): ours raises in the predicate, so the run fails naming the edge."""
    f = (Formation("mismatch").add_function("choice", lambda v: v)
         .add_function("big", lambda v: v).add_function("default", lambda v: "default")
         .connect("choice", "big", when=lambda v: v > 10).connect("choice", "default", otherwise=True))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("eleven")
    assert caught.value.node == "choice" and "'big'" in str(caught.value)
    guarded = (Formation("guarded").add_function("choice", lambda v: v)
               .add_function("big", lambda v: v).add_function("default", lambda v: "default")
               .connect("choice", "big", when=lambda v: isinstance(v, int) and v > 10)
               .connect("choice", "default", otherwise=True))
    assert guarded.run("eleven").outputs == {"default": "default"}


def test_timestamp_comparisons_route_by_time_and_a_non_timestamp_to_the_default() -> None:
    """From LocalStack choice_operators/test_timestamp_operators.py (TimestampGreaterThan, and
    IsTimestamp false for a string that is not one)."""
    cutoff = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)

    def parse(text: str) -> datetime.datetime | str:
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            return text

    f = (Formation("timestamps").add_function("parse", parse)
         .add_function("after", lambda t: t.year).add_function("before", lambda t: t.year)
         .add_function("default", lambda v: f"not a timestamp: {v}")
         .connect("parse", "after", when=lambda t: isinstance(t, datetime.datetime) and t > cutoff)
         .connect("parse", "before", when=lambda t: isinstance(t, datetime.datetime) and t <= cutoff)
         .connect("parse", "default", otherwise=True))
    assert f.run("2016-03-14T01:59:00+00:00").outputs == {"before": 2016}
    assert f.run("2024-03-14T01:59:00+00:00").outputs == {"after": 2024}
    assert f.run("yesterday").outputs == {"default": "not a timestamp: yesterday"}


def test_a_choice_that_matches_no_rule_and_has_no_default_fails_with_no_choice_matched_naming_the_value() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_choice_aws_docs_scenario (a value no
    rule takes fails the execution with States.NoChoiceMatched)."""
    f = (Formation("aws_docs").add_function("choice", lambda v: v)
         .add_function("public", lambda v: "public").add_function("private", lambda v: "private")
         .connect("choice", "public", when=lambda v: v.get("type") == "Public")
         .connect("choice", "private", when=lambda v: v.get("type") == "Private" and 20 <= v.get("value", 0) < 30))
    assert f.run({"type": "Private", "value": 22}).outputs == {"private": "private"}
    with pytest.raises(NoRouteError) as caught:
        f.run({"type": "Private", "value": 99})
    assert caught.value.node == "choice" and "99" in caught.value.preview


def test_a_choice_after_a_parallel_state_routes_on_the_joined_outputs() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_parallel_state followed by a Choice on
    the branches' results."""
    f = (Formation("after_parallel").add_function("start", lambda x: x)
         .add_function("left", lambda x: x + 1).add_function("right", lambda x: x * 2)
         .add_function("join", lambda v: v["left"] + v["right"])
         .add_function("even", lambda n: f"{n} even").add_function("odd", lambda n: f"{n} odd")
         .connect("start", "left", "join").connect("start", "right", "join")
         .connect("join", "even", when=lambda n: n % 2 == 0).connect("join", "odd", otherwise=True))
    assert f.run(3).outputs == {"even": "10 even"}
    assert f.run(2).outputs == {"odd": "7 odd"}


def test_a_task_token_answer_is_the_tasks_output_and_the_states_before_it_do_not_run_again(store: RunStore) -> None:
    """From LocalStack callback/test_callback.py::test_sqs_wait_for_task_token (the execution waits
    at the task until SendTaskSuccess gives its output)."""
    counter = Counter()

    def send(x: dict[str, str]) -> dict[str, str]:
        counter.hit("send")
        return {"QueueUrl": x["QueueUrl"], "Message": x["Message"]}

    def wait_for_token(msg: dict[str, str]) -> Any:
        counter.hit("wait")
        return interrupt({"TaskToken": "token", "Message": msg["Message"]})

    f = (Formation("task_token").add_function("send", send).add_function("wait", wait_for_token)
         .add_function("end", lambda out: f"done: {out}").connect("send", "wait", "end"))
    first = f.run({"QueueUrl": "q", "Message": "test_message_txt"}, store=store)
    assert first.status == "suspended"
    assert first.interrupt == {"node": "wait", "payload": {"TaskToken": "token", "Message": "test_message_txt"}}
    assert store.get(first.run_id).status == "suspended"
    done = f.resume(first.run_id, store=store, answer={"ok": True})
    assert (done.status, done.output) == ("succeeded", "done: {'ok': True}")
    assert (counter.count("send"), counter.count("wait")) == (1, 2)


def test_a_task_token_answered_with_a_failure_reaches_the_tasks_catcher(store: RunStore) -> None:
    """From LocalStack callback/test_callback.py::test_sqs_failure_in_wait_for_task_token
    (SendTaskFailure fails the task with the given error; a Catch takes it)."""
    class TaskRefused(Exception):
        pass

    def wait_for_token(order: str) -> str:
        answer = interrupt({"order": order})
        if answer.get("error"):
            raise TaskRefused(answer["error"])
        return str(answer["output"])

    f = (Formation("token_failure").add_function("wait", wait_for_token)
         .add_function("next", lambda out: f"next: {out}").add_function("caught", lambda f: f"caught: {f.error}")
         .connect("wait", "next").connect("wait", "caught", on_error=True))
    first = f.run("o-1", store=store)
    done = f.resume(first.run_id, store=store, answer={"error": "Failure cause"})
    assert done.outputs == {"caught": "caught: Failure cause"}
    assert done.nodes["wait"].status == "failed" and done.nodes["next"].status == "skipped"
    ok = f.run("o-2", store=store)
    assert f.resume(ok.run_id, store=store, answer={"output": 7}).outputs == {"next": "next: 7"}


def test_a_task_token_answered_twice_is_refused_the_second_time(store: RunStore) -> None:
    """From LocalStack callback/test_callback.py (a task token that was already used is refused:
    ``TaskTimedOut``/``InvalidToken`` from SendTaskSuccess)."""
    f = Formation("twice").add_function("wait", lambda x: interrupt({"x": x}))
    first = f.run(1, store=store)
    assert f.resume(first.run_id, store=store, answer="a").output == "a"
    with pytest.raises(RunNotResumableError) as caught:
        f.resume(first.run_id, store=store, answer="b")
    assert "succeeded" in str(caught.value) and first.run_id in str(caught.value)
    assert store.get(first.run_id).status == "succeeded"
