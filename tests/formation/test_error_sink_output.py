"""A node whose only outgoing edges are error edges, and its handler's branch, are
alternatives: the run has one output, whichever of them produced it (DESIGN "Sinks",
"Error edges"; formation/_sinks.py).

Celery's ``link_error``, Dagster's and Dramatiq's ``on_failure``, Ray Workflows'
``catch_exceptions`` and Prefect's fallbacks all give the handler's value as the run's
result; three of our ports asked for it (session 29's notes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def _parse(text: str) -> int:
    return int(text)


def _fallback(failure: NodeFailure) -> int:
    return -1


def _guarded(name: str = "guarded") -> Formation:
    return (Formation(name).add_function("parse", _parse).add_function("fallback", _fallback)
            .connect("parse", "fallback", on_error=True))


def test_a_handler_s_value_is_the_run_s_output_when_the_guarded_node_fails() -> None:
    result = _guarded().run("x")
    assert (result.output, result.outputs) == (-1, {"fallback": -1})
    assert (result.nodes["parse"].status, result.nodes["fallback"].status) == ("failed", "succeeded")


def test_the_guarded_node_s_value_is_the_run_s_output_when_it_succeeds() -> None:
    result = _guarded().run("7")
    assert (result.output, result.outputs) == (7, {"parse": 7})


def test_the_end_of_a_handler_s_branch_is_the_alternative_to_the_guarded_node() -> None:
    f = (Formation("branch").add_function("start", str.strip).add_function("parse", _parse)
         .add_function("fallback", lambda failure: f"fallback for {failure.input}").add_function("end", str.upper)
         .connect("start", "parse").connect("parse", "fallback", on_error=True).connect("fallback", "end"))
    assert f.run(" x ").output == "FALLBACK FOR X"
    assert f.run(" 5 ").output == 5


def test_a_chain_of_guards_is_one_output_whichever_link_produced_it() -> None:
    def second(failure: NodeFailure) -> int:
        return int(str(failure.input).strip("!"))

    f = (Formation("guards").add_function("first", _parse).add_function("second", second)
         .add_function("last", _fallback)
         .connect("first", "second", on_error=True).connect("second", "last", on_error=True))
    assert [f.run(x).output for x in ("1", "2!", "?")] == [1, 2, -1]


def test_a_sink_reachable_without_the_guarded_node_s_failure_is_a_second_output() -> None:
    """``report`` runs on every run, whatever ``parse`` does: two outputs, ``output`` None."""
    f = (Formation("two").add_function("start", str.strip).add_function("parse", _parse)
         .add_function("fallback", _fallback).add_function("report", len)
         .connect("start", "parse").connect("start", "report").connect("parse", "fallback", on_error=True))
    result = f.run("12")
    assert (result.output, result.outputs) == (None, {"parse": 12, "report": 2})
    assert f.run("x").outputs == {"fallback": -1, "report": 1}


def test_two_guarded_branches_are_two_outputs() -> None:
    f = (Formation("both").add_function("start", str.strip)
         .add_function("a", _parse).add_function("a_failed", _fallback)
         .add_function("b", _parse).add_function("b_failed", _fallback)
         .connect("start", "a").connect("start", "b")
         .connect("a", "a_failed", on_error=True).connect("b", "b_failed", on_error=True))
    result = f.run("3")
    assert (result.output, result.outputs) == (None, {"a": 3, "b": 3})


def test_in_a_formation_with_a_loop_the_alternatives_stay_separate_outputs() -> None:
    """A loop may visit a node again, and then both alternatives could produce: the check is
    static and conservative, so such a formation keeps the dict of outputs."""
    f = (Formation("loop").add_function("count", lambda n: n + 1).add_function("parse", lambda n: int(n))
         .add_function("fallback", _fallback)
         .connect("count", "count", when=lambda n: n < 3).connect("count", "parse", otherwise=True)
         .connect("parse", "fallback", on_error=True))
    result = f.run(0)
    assert (result.output, result.outputs) == (None, {"parse": 3})
    assert f.validate().one_output is False


def test_a_formation_node_passes_on_the_alternative_that_produced_not_a_dict() -> None:
    outer = (Formation("outer").add_formation("inner", _guarded("inner")).add_function("double", lambda n: 2 * n)
             .connect("inner", "double"))
    assert outer.run("4").output == 8
    assert outer.run("four").output == -2
    assert outer.run("four").nodes["inner"].output == -1


def test_a_map_over_a_guarded_formation_gives_each_item_s_value() -> None:
    f = Formation("each").add_map("items", formation=_guarded("item"))
    assert f.run(["1", "two", "3"]).output == [1, -1, 3]


def test_validation_types_a_formation_node_s_output_as_the_union_of_its_alternatives() -> None:
    def fallback_text(failure: NodeFailure) -> str:
        return "unparsed"

    def needs_int(n: int) -> int:
        return n

    inner = (Formation("inner").add_function("parse", _parse).add_function("fallback", fallback_text)
             .connect("parse", "fallback", on_error=True))
    assert inner.validate().output_type == int | str
    refused = Formation("outer").add_formation("inner", inner).add_function("use", needs_int).connect("inner", "use")
    with pytest.raises(FormationSetupError, match="inner"):
        refused.validate()
    routed = (Formation("outer").add_formation("inner", inner).add_function("use", needs_int)
              .add_function("say", str.upper).connect("inner", "use", when=int).connect("inner", "say", when=str))
    assert routed.run("5").outputs == {"use": 5}
    assert routed.run("?").outputs == {"say": "UNPARSED"}


def test_a_guarded_node_s_handler_in_a_journalled_nested_run_resumes_to_the_same_output(tmp_path: Path) -> None:
    calls: list[Any] = []

    def fragile(failure: NodeFailure) -> int:
        calls.append(failure.input)
        if len(calls) == 1:
            raise RuntimeError("handler down once")
        return -1

    inner = (Formation("inner").add_function("parse", _parse).add_function("fallback", fragile)
             .connect("parse", "fallback", on_error=True))
    outer = (Formation("outer").add_formation("inner", inner).add_function("double", lambda n: 2 * n)
             .connect("inner", "double"))
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        with pytest.raises(Exception, match="handler down once"):
            outer.run("x", store=store, run_id="r1")
        assert outer.resume("r1", store=store).output == -2
    finally:
        store.close()
    assert calls == ["x", "x"]


def test_a_node_s_success_branch_and_its_handler_are_alternatives() -> None:
    """The common shape: ``fetch → parse`` and ``fetch →(error) cached``."""
    def fetch(url: str) -> str:
        if url == "down":
            raise ConnectionError("offline")
        return f"<{url}>"

    f = (Formation("web").add_function("fetch", fetch).add_function("parse", str.upper)
         .add_function("cached", lambda failure: f"cached {failure.input}")
         .connect("fetch", "parse").connect("fetch", "cached", on_error=True))
    assert (f.run("up").output, f.run("down").output) == ("<UP>", "cached down")


def test_an_otherwise_branch_and_the_conditional_branches_are_alternatives() -> None:
    f = (Formation("route").add_function("size", len).add_function("big", lambda n: f"big {n}")
         .add_function("small", lambda n: f"small {n}")
         .connect("size", "big", when=lambda n: n > 3).connect("size", "small", otherwise=True))
    assert (f.run("abcdef").output, f.run("ab").output) == ("big 6", "small 2")


def test_two_conditional_branches_without_otherwise_may_both_fire_so_stay_two_outputs() -> None:
    f = (Formation("route").add_function("size", len).add_function("even", lambda n: "even")
         .add_function("big", lambda n: "big")
         .connect("size", "even", when=lambda n: n % 2 == 0).connect("size", "big", when=lambda n: n > 3))
    result = f.run("abcd")
    assert (result.output, result.outputs) == (None, {"even": "even", "big": "big"})
