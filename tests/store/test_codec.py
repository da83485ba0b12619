"""Values come back from the journal as the same type; what cannot be journalled is refused
with an error naming the node, the type and the fixes."""

from __future__ import annotations

import datetime
import decimal
import math
import threading
import uuid
from collections import Counter, OrderedDict
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from wingman_actors.store import Codec, FormationShape, RunStore, SerializationError
from wingman_actors.store._codec import PICKLED, PLAIN, TAGGED

from .models import Colour, Line, Point, Statement

STATEMENT = Statement(ownerName="ada", lines=[Line(label="tea", amount=2.5, tags=("food", "daily"))],
                      colour=Colour.BLUE)

ROUND_TRIPS: list[Any] = [
    None, True, False, 0, -7, 2**70, 1.5, "text", "ünïcødé ✓", "",
    [], {}, [1, "two", None, [3.0]], {"a": {"b": [1, {"c": None}]}},
    (1, 2), (), ((1, "a"), [2, (3,)]), {"pair": (1, 2)}, [(1, 2), (3, 4)],
    {1: "one", 2: "two"}, {(1, 2): "tuple key"}, {"__t": "a user's key"},
    {1, 2, 3}, frozenset({"x"}), b"\x00\xffbytes",
    Counter("hello"), OrderedDict([("z", 1), ("a", 2)]),
    STATEMENT, [STATEMENT, STATEMENT], {"by_owner": STATEMENT}, (STATEMENT, 1),
    Line(label="x", amount=1.0),
    Point(1, 2), Colour.RED,
    datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), datetime.date(2026, 1, 2),
    datetime.timedelta(seconds=90), uuid.UUID(int=7), decimal.Decimal("1.10"), PurePosixPath("/tmp/x"),
]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=lambda v: type(v).__name__)
def test_a_visit_output_comes_back_as_the_same_type_and_value(store: RunStore, shape: FormationShape,
                                                               value: Any) -> None:
    run_id = store.begin_run("f", shape, value)
    store.record_visit(run_id, "a", 1, value)
    journal = store.load(run_id)
    got = journal.visits["a"][1]
    assert _same(got, value), (got, value)
    assert _same(journal.run.input, value)


def test_nested_values_keep_their_inner_types(store: RunStore, shape: FormationShape) -> None:
    value = {"points": [Point(1, 2), Point(3, 4)], "span": (datetime.date(2026, 1, 1), datetime.date(2026, 2, 1)),
             "statement": STATEMENT}
    run_id = store.begin_run("f", shape, None)
    store.record_visit(run_id, "a", 1, value)
    got = store.load(run_id).visits["a"][1]
    assert got == value
    assert type(got["points"][0]) is Point and type(got["span"]) is tuple
    assert type(got["statement"].lines[0]) is Line and got["statement"].lines[0].tags == ("food", "daily")
    assert got["statement"].colour is Colour.BLUE


def test_nan_and_infinities_round_trip() -> None:
    codec = Codec()
    got = codec.decode(*codec.encode([math.inf, -math.inf, math.nan], "x"), "x")
    assert got[:2] == [math.inf, -math.inf] and math.isnan(got[2])


def test_plain_json_is_stored_untagged_and_other_types_tagged() -> None:
    codec = Codec()
    assert codec.encode({"a": [1, 2.5, None, True]}, "x") == (PLAIN, '{"a":[1,2.5,null,true]}')
    assert codec.encode((1, 2), "x") == (TAGGED, '{"__t":"tuple","v":[1,2]}')


class Opaque:
    """Not serialisable as JSON, not a model."""


def test_a_non_serialisable_output_is_refused_naming_node_type_and_fixes(store: RunStore,
                                                                         shape: FormationShape) -> None:
    run_id = store.begin_run("f", shape, None)
    with pytest.raises(SerializationError) as err:
        store.record_visit(run_id, "b", 2, {"rows": [1, Opaque()]})
    text = str(err.value)
    assert "node 'b'" in text and "visit 2" in text and "['rows'][1]" in text
    assert "Opaque" in text and "allow_pickle=True" in text and "pydantic model" in text
    assert err.value.type_name.endswith("test_codec:Opaque")


def test_a_lock_is_refused_even_inside_a_tuple(store: RunStore, shape: FormationShape) -> None:
    run_id = store.begin_run("f", shape, None)
    with pytest.raises(SerializationError, match="lock"):
        store.record_visit(run_id, "a", 1, (1, threading.Lock()))


def test_a_model_defined_in_a_function_is_refused_because_it_cannot_be_imported_back(
        store: RunStore, shape: FormationShape) -> None:
    from pydantic import BaseModel

    class Local(BaseModel):
        x: int

    run_id = store.begin_run("f", shape, None)
    with pytest.raises(SerializationError, match="define it at module level"):
        store.record_visit(run_id, "a", 1, Local(x=1))


def test_an_unserialisable_input_is_refused_by_begin_run(store: RunStore, shape: FormationShape) -> None:
    with pytest.raises(SerializationError, match="input of run"):
        store.begin_run("f", shape, Opaque())
    assert store.runs() == []


def test_a_refusal_says_pass_for_a_value_given_and_return_for_one_returned_whatever_the_wording() -> None:
    codec = Codec()
    for where in ("the input of run 'r'", "the output of node 'a'"):
        with pytest.raises(SerializationError, match=r"cannot journal\. Pass JSON data"):
            codec.encode(Opaque(), where, given=True)
        with pytest.raises(SerializationError, match=r"cannot journal\. Return JSON data"):
            codec.encode(Opaque(), where, given=False)


def test_pickle_is_used_only_when_allowed_and_loading_it_needs_the_opt_in(path: Path,
                                                                            shape: FormationShape) -> None:
    with RunStore(path, allow_pickle=True) as store:
        run_id = store.begin_run("f", shape, None)
        store.record_visit(run_id, "a", 1, {"when": Opaque, "n": 1})  # a class pickles by reference
        assert store.load(run_id).visits["a"][1] == {"when": Opaque, "n": 1}
        assert store._codec.encode(Opaque, "x")[0] == PICKLED
    with RunStore(path) as store, pytest.raises(SerializationError) as err:
        store.load(run_id)
    assert "node 'a'" in str(err.value) and "pickle" in str(err.value) and "trust" in str(err.value)


def test_a_value_whose_class_is_gone_gives_a_clear_error_on_load() -> None:
    codec = Codec()
    text = '{"__t":"obj","c":"no_such_module_xyz:Thing","v":{}}'
    with pytest.raises(SerializationError, match="cannot be imported here"):
        codec.decode(TAGGED, text, "the output of node 'a'")


def test_a_path_naming_a_non_model_class_is_refused_on_load() -> None:
    codec = Codec()
    with pytest.raises(SerializationError, match="tampered"):
        codec.decode(TAGGED, '{"__t":"obj","c":"subprocess:Popen","v":["ls"]}', "the output of node 'a'")


def test_a_model_whose_fields_changed_gives_a_clear_error_on_load() -> None:
    codec = Codec()
    with pytest.raises(SerializationError, match="no longer validates"):
        codec.decode(TAGGED, '{"__t":"obj","c":"tests.store.models:Line","v":{"label":1}}', "the output of node 'a'")


def test_an_unknown_codec_or_tag_asks_for_an_upgrade() -> None:
    codec = Codec()
    with pytest.raises(SerializationError, match="upgrade"):
        codec.decode(9, "1", "x")
    with pytest.raises(SerializationError, match="upgrade"):
        codec.decode(TAGGED, '{"__t":"warp","v":1}', "x")


def test_a_path_object_round_trips(store: RunStore, shape: FormationShape, tmp_path: Path) -> None:
    run_id = store.begin_run("f", shape, tmp_path)
    assert store.get(run_id).input == tmp_path


def test_a_value_journalled_under_a_module_name_from_before_the_rename_still_loads() -> None:
    from wingman_actors.agents import Result

    codec = Codec()
    kind, text = codec.encode(Result(response="hi"), "visit a")
    assert "wingman_actors.agents._result" in text
    old = text.replace("wingman_actors.agents._result", "wingman_actors.result")
    back = codec.decode(kind, old, "visit a")
    assert isinstance(back, Result) and back.response == "hi"


def test_a_pickled_value_from_before_the_rename_still_loads() -> None:
    import base64
    import json
    import pickle

    from wingman_actors.formation import NodeFailure

    codec = Codec(allow_pickle=True)
    data = pickle.dumps(NodeFailure(node="a", error=ValueError("x"), input=1, attempts=1, run_id="r"), protocol=0)
    old = data.replace(b"wingman_actors.formation._failure", b"wingman_actors.formation.failure")
    assert old != data
    text = json.dumps({"__t": "pickle", "v": base64.b64encode(old).decode()})
    back = codec.decode(PICKLED, text, "visit a")
    assert isinstance(back, NodeFailure) and back.node == "a"
