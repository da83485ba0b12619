"""Routes: ``when=`` types and narrowing, ``otherwise`` edges, ``NoRouteError``, and
the sink rule for loop bodies."""

from __future__ import annotations

import pickle
import sys
import typing
from typing import Any, TypeGuard

import pytest
import typing_extensions

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError
from wingman_actors.formation._result import NodeStatus


def parse(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def shout(text: str) -> str:
    return text.upper()


def twice(n: int) -> int:
    return n * 2


def typed_router() -> Formation:
    return (
        Formation("typed")
        .add_function("parse", parse)
        .add_function("shout", shout)
        .add_function("twice", twice)
        .connect("parse", "shout", when=str)
        .connect("parse", "twice", when=int)
    )


def test_when_a_type_routes_by_isinstance() -> None:
    f = typed_router()
    assert f.run("abc").outputs == {"shout": "ABC"}
    assert f.run("21").outputs == {"twice": 42}


def test_when_a_type_narrows_a_union_output_for_validation() -> None:
    plan = typed_router().validate()  # str | int feeds str and int through when=str / when=int
    assert [e.label for e in plan.nodes["parse"].out_edges] == ["str", "int"]


def test_without_a_narrowing_condition_a_union_output_is_refused() -> None:
    f = (
        Formation("typed")
        .add_function("parse", parse)
        .add_function("shout", shout)
        .connect("parse", "shout", when=lambda v: len(str(v)) > 1)
    )
    with pytest.raises(FormationSetupError, match=r"'parse' outputs str \| int but parameter 'text' of 'shout'"):
        f.validate()


@pytest.mark.parametrize("when", [(int, float), int | float, typing.Union[int, float]],
                         ids=["tuple", "pipe", "typing.Union"])
def test_when_a_tuple_or_a_union_of_types_routes_narrows_and_is_drawn_by_its_members(when: Any) -> None:
    def parse3(text: str) -> str | int | float:
        return float(text) if "." in text else int(text) if text.isdigit() else text

    def number(n: int | float) -> str:
        return f"number {n}"

    f = (
        Formation("types")
        .add_function("parse", parse3)
        .add_function("number", number)
        .add_function("word", shout)
        .connect("parse", "number", when=when)
        .connect("parse", "word", when=str)
    )
    assert f.run("1.5").outputs == {"number": "number 1.5"}
    assert f.run("7").outputs == {"number": "number 7"}
    assert f.run("x").outputs == {"word": "X"}
    assert f.validate().nodes["parse"].out_edges[0].label == "int | float"
    assert "-->|when: int #124; float| number" in f.to_mermaid()  # drawn as the tuple is ("|" escaped)


def test_a_union_of_something_not_a_class_is_refused_as_when() -> None:
    f = Formation("f").add_function("a", lambda x: x).add_function("b", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"when=int \| list\[int\] must be a union of classes"):
        f.connect("a", "b", when=int | list[int])


def test_a_union_when_that_the_output_can_never_match_is_refused() -> None:
    def text(x: str) -> str:
        return x

    f = Formation("f").add_function("a", text).add_function("b", lambda x: x)
    f.connect("a", "b", when=int | float)
    with pytest.raises(FormationSetupError, match=r"the edge never fires"):
        f.validate()


def is_text_guard(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def is_text_is(value: object) -> typing_extensions.TypeIs[str]:
    return isinstance(value, str)


@pytest.mark.parametrize("is_text", [is_text_guard, is_text_is])
def test_a_type_guard_predicate_narrows_like_a_type(is_text: Any) -> None:
    f = (
        Formation("guarded")
        .add_function("parse", parse)
        .add_function("shout", shout)
        .add_function("twice", twice)
        .connect("parse", "shout", when=is_text)
        .connect("parse", "twice", otherwise=True)
    )
    f.validate()  # str | int: str along the guard, int along otherwise
    assert f.run("hi").outputs == {"shout": "HI"}
    assert f.run("2").outputs == {"twice": 4}


def test_otherwise_narrows_to_what_the_type_conditions_leave() -> None:
    f = (
        Formation("typed")
        .add_function("parse", parse)
        .add_function("shout", shout)
        .add_function("twice", twice)
        .connect("parse", "shout", when=str)
        .connect("parse", "twice", otherwise=True)
    )
    f.validate()
    assert f.run("4").outputs == {"twice": 8}


def test_a_type_condition_that_can_never_hold_is_refused() -> None:
    f = Formation("never").add_function("a", shout).add_function("b", shout).connect("a", "b", when=bool)
    with pytest.raises(FormationSetupError, match=r"when=bool means isinstance\(output, bool\), but 'a' outputs str"):
        f.validate()


def test_otherwise_is_taken_when_no_condition_fires() -> None:
    f = (
        Formation("grade")
        .add_function("score", lambda n: n)
        .add_function("high", lambda n: "high")
        .add_function("low", lambda n: "low")
        .add_function("middle", lambda n: "middle")
        .connect("score", "high", when=lambda n: n > 80)
        .connect("score", "low", when=lambda n: n < 20)
        .connect("score", "middle", otherwise=True)
    )
    assert f.run(90).outputs == {"high": "high"}
    assert f.run(10).outputs == {"low": "low"}
    result = f.run(50)
    assert result.outputs == {"middle": "middle"}
    assert result.nodes["high"].status is NodeStatus.SKIPPED


def test_otherwise_is_not_taken_when_a_condition_fires_beside_an_unconditional_edge() -> None:
    f = (
        Formation("mixed")
        .add_function("start", lambda n: n)
        .add_function("log", lambda n: f"log {n}")
        .add_function("big", lambda n: "big")
        .add_function("small", lambda n: "small")
        .connect("start", "log")
        .connect("start", "big", when=lambda n: n > 5)
        .connect("start", "small", otherwise=True)
    )
    assert f.run(9).outputs == {"log": "log 9", "big": "big"}
    assert f.run(1).outputs == {"log": "log 1", "small": "small"}


def test_a_decision_that_matches_no_branch_fails_the_run_with_no_route_error() -> None:
    f = (
        Formation("decide")
        .add_function("classify", lambda text: {"label": text})
        .add_function("spam", lambda x: "spam")
        .add_function("ham", lambda x: "ham")
        .connect("classify", "spam", when=lambda c: c["label"] == "spam")
        .connect("classify", "ham", when=lambda c: c["label"] == "ham")
    )
    with pytest.raises(NoRouteError) as info:
        f.run("eggs")
    err = info.value
    assert isinstance(err, FormationRuntimeError)
    assert err.node == "classify"
    assert err.preview == "{'label': 'eggs'}"
    assert "otherwise=True" in str(err)
    assert err.run_id is not None
    assert pickle.loads(pickle.dumps(err)).preview == err.preview


def test_a_loop_whose_conditions_all_stay_shut_fails_with_no_route_error() -> None:
    f = (
        Formation("loop")
        .add_function("entry", lambda n: n)
        .add_function("step", lambda n: n + 1)
        .add_function("check", lambda n: n)
        .add_function("done", lambda n: n)
        .connect("entry", "step", "check")
        .connect("check", "step", when=lambda n: n < 3)
        .connect("check", "done", when=lambda n: n == 10)
    )
    with pytest.raises(NoRouteError, match="node 'check' output 3"):
        f.run(0)


def test_no_route_fails_the_run_even_when_the_node_has_on_error_skip() -> None:
    # on_error decides what a *failed* node does; classify finished, and its output matched
    # no route: skipping it would end the run with no output, silently (found by
    # test_route_fuzz.py: the node's trace said succeeded while the run went on as if skipped)
    f = (
        Formation("decide")
        .add_function("classify", lambda x: x, on_error="skip")
        .add_function("yes", lambda x: "yes")
        .connect("classify", "yes", when=lambda x: x == "y")
    )
    with pytest.raises(NoRouteError) as info:
        f.run("n")
    assert info.value.node == "classify"
    assert info.value.nodes["classify"].status is NodeStatus.SUCCEEDED
    assert info.value.nodes["yes"].status is not NodeStatus.SUCCEEDED


def test_a_loop_body_node_is_not_a_run_output() -> None:
    # LangGraph's agent loop: agent → tools while there are tool calls, tools → agent
    # always (its only outgoing edge is a back edge), agent → answer otherwise.
    f = (
        Formation("agent_loop")
        .add_function("start", lambda n: n)  # LangGraph's START
        .add_function("agent", lambda n: n + 1)
        .add_function("tools", lambda n: n * 10)
        .add_function("answer", lambda n: f"answer {n}")
        .connect("start", "agent")
        .connect("agent", "tools", when=lambda n: n < 20)
        .connect("tools", "agent")
        .connect("agent", "answer", otherwise=True)
    )
    plan = f.validate()
    assert plan.sinks == ("answer",)
    result = f.run(0)
    assert result.output == "answer 111"
    assert result.outputs == {"answer": "answer 111"}
    assert result.nodes["tools"].visits == 2


def test_otherwise_with_when_is_refused() -> None:
    f = Formation("f").add_function("a", lambda x: x).add_function("b", lambda x: x)
    with pytest.raises(FormationSetupError, match="both when= and otherwise=True"):
        f.connect("a", "b", when=int, otherwise=True)


def test_two_otherwise_edges_from_one_node_are_refused() -> None:
    f = (
        Formation("f").add_function("a", lambda x: x).add_function("b", lambda x: x).add_function("c", lambda x: x)
        .connect("a", "b", otherwise=True)
    )
    with pytest.raises(FormationSetupError, match="'a' has an otherwise edge already"):
        f.connect("a", "c", otherwise=True)
    f.graph.add_edge("a", "c", otherwise=True)  # by hand: validation finds it
    with pytest.raises(FormationSetupError, match="'a' has 2 otherwise edges"):
        f.validate()


def test_a_bad_when_tuple_is_refused() -> None:
    f = Formation("f").add_function("a", lambda x: x).add_function("b", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"must be a tuple of types"):
        f.connect("a", "b", when=(int, "str"))  # type: ignore[arg-type]


def test_otherwise_must_be_a_bool_on_a_hand_built_edge() -> None:
    f = Formation("f").add_function("a", lambda x: x).add_function("b", lambda x: x)
    f.graph.add_edge("a", "b", otherwise="yes")
    with pytest.raises(FormationSetupError, match="otherwise must be True or False"):
        f.validate()


def test_a_cycle_closed_only_by_an_otherwise_edge_counts_as_conditional() -> None:
    f = (
        Formation("f")
        .add_function("entry", lambda n: n)
        .add_function("a", lambda n: n + 1)
        .add_function("b", lambda n: n)
        .add_function("out", lambda n: n)
        .connect("entry", "a", "b")
        .connect("b", "out", when=lambda n: n >= 3)
        .connect("b", "a", otherwise=True)
    )
    assert f.run(0).output == 3


def test_the_mermaid_drawing_labels_types_and_otherwise() -> None:
    text = (
        Formation("typed")
        .add_function("parse", parse)
        .add_function("shout", shout)
        .add_function("rest", lambda v: v)
        .connect("parse", "shout", when=str)
        .connect("parse", "rest", otherwise=True)
        .to_mermaid()
    )
    assert "|when: str|" in text and "|otherwise|" in text


@pytest.mark.skipif(sys.version_info < (3, 13), reason="typing.TypeIs is new in Python 3.13")
def test_typing_type_is_narrows_too() -> None:  # pragma: no cover - 3.13+
    from typing import TypeIs  # type: ignore[attr-defined]

    def is_int(value: object) -> TypeIs[int]:
        return isinstance(value, int)

    f = (
        Formation("g")
        .add_function("parse", parse)
        .add_function("twice", twice)
        .add_function("rest", lambda v: v)
        .connect("parse", "twice", when=is_int)
        .connect("parse", "rest", otherwise=True)
    )
    f.validate()


def test_a_condition_that_raises_fails_the_run_naming_its_own_edge() -> None:
    # the error named the node's first conditional edge, whichever one raised
    def small(n: int) -> bool:
        return n < 10

    def broken(n: int) -> bool:
        raise KeyError("no rule")

    f = (Formation("r").add_function("a", lambda n: n).add_function("b", str).add_function("c", str)
         .connect("a", "b", when=small).connect("a", "c", when=broken))
    with pytest.raises(FormationRuntimeError, match=r"condition broken of edge 'a' → 'c' raised KeyError") as info:
        f.run(20)
    assert info.value.node == "a" and isinstance(info.value.__cause__, KeyError)
