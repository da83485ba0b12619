"""Payload isolation: a value fanned out to several receivers, or kept in the result,
is never changed by a receiver's in-place mutation."""

from __future__ import annotations

import enum
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from wingman_actors import Formation
from wingman_actors.actors._payloads import is_immutable, isolate
from wingman_actors.errors import FormationRuntimeError


def fan_out(mutate: Any, keep: Any) -> Formation:
    return (
        Formation("fan")
        .add_function("make", lambda x: {"items": [1, 2], "meta": {"n": x}})
        .add_function("mutate", mutate)
        .add_function("keep", keep)
        .connect("make", "mutate")
        .connect("make", "keep")
    )


def test_a_dict_fanned_out_to_two_receivers_is_not_shared() -> None:
    both_in = threading.Barrier(2, timeout=5)

    def mutate(payload: dict[str, Any]) -> str:
        payload["items"].append(99)
        payload["meta"]["n"] = -1
        payload["new"] = True
        both_in.wait()
        return "changed"

    def keep(payload: dict[str, Any]) -> dict[str, Any]:
        both_in.wait()  # runs while the sibling mutates its input
        return payload

    result = fan_out(mutate, keep).run(7)
    assert result.outputs["keep"] == {"items": [1, 2], "meta": {"n": 7}}


def test_a_receiver_mutating_its_input_does_not_change_the_kept_output() -> None:
    def mutate_then_fail(payload: dict[str, Any]) -> int:
        payload["items"].clear()
        raise RuntimeError("after mutating")

    f = (
        Formation("chain")
        .add_function("make", lambda x: {"items": [x]})
        .add_function("mutate", mutate_then_fail)
        .connect("make", "mutate")
    )
    with pytest.raises(FormationRuntimeError) as info:
        f.run(3)
    assert info.value.outputs["make"] == {"items": [3]}  # the partial outputs kept on the error


def test_the_run_input_is_not_changed_by_a_source() -> None:
    data = {"n": [1]}

    def grab(payload: dict[str, Any]) -> int:
        payload["n"].append(2)
        return len(payload["n"])

    assert Formation("f").add_function("grab", grab).run(data).output == 2
    assert data == {"n": [1]}


def test_immutable_values_pass_as_they_are() -> None:
    class Frozen(BaseModel):
        model_config = ConfigDict(frozen=True)
        x: int

    class Colour(enum.Enum):
        RED = 1

    for value in ("text", 3, 2.5, None, b"x", (1, "a"), frozenset({1}), Frozen(x=1), Colour.RED):
        assert is_immutable(value)
        assert isolate(value) is value


def test_mutable_values_are_copied_deeply() -> None:
    class Loose(BaseModel):
        tags: list[str]

    nested = {"a": [{"b": [1]}], "t": (1, [2])}
    copied = isolate(nested)
    assert copied == nested
    assert copied["a"][0]["b"] is not nested["a"][0]["b"]
    assert copied["t"][1] is not nested["t"][1]
    model = Loose(tags=["x"])
    twin = isolate(model)
    assert twin == model and twin is not model and twin.tags is not model.tags


def test_a_structure_that_contains_itself_is_copied() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    copied = isolate(loop)
    assert copied is not loop and copied[1] is copied


def test_a_back_edge_delivery_is_isolated_too() -> None:
    seen: list[list[int]] = []

    def grow(items: list[int]) -> list[int]:
        items.append(len(items))
        seen.append(items)
        return items

    f = (
        Formation("loop")
        .add_function("grow", grow)
        .add_function("done", lambda items: items)
        .connect("grow", "grow", when=lambda items: len(items) < 3)
        .connect("grow", "done", otherwise=True)
    )
    assert f.run([]).output == [0, 1, 2]
    assert seen == [[0], [0, 1], [0, 1, 2]]


def test_a_dataclass_is_rebuilt_with_copies_of_its_fields_and_exceptions_pass() -> None:
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Failure:
        error: Exception
        input: dict[str, Any]

    error = ValueError("x")
    failure = Failure(error, {"k": [1]})
    twin = isolate(failure)
    assert twin == failure and twin is not failure
    assert twin.error is error and twin.input["k"] is not failure.input["k"]
    assert isolate(Failure(error, {})) == Failure(error, {})


def test_a_value_deepcopy_refuses_passes_as_it_is() -> None:
    lock = threading.Lock()
    payload = {"lock": lock}
    assert isolate(payload)["lock"] is lock


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list | tuple):
        return ([value] if isinstance(value, list) else []) + [c for v in value for c in _containers(v)]
    return []


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=20,
)


@given(_json)
@settings(max_examples=300, deadline=None)
def test_isolate_equals_deepcopy_and_shares_no_mutable_container(value: Any) -> None:
    import copy

    twin = isolate(value)
    assert twin == copy.deepcopy(value)
    assert not {id(c) for c in _containers(twin)} & {id(c) for c in _containers(value)}
