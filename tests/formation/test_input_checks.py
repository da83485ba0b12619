"""A function node's input is checked against its parameter's annotation; a payload
skips pydantic only when pydantic would hand it over unchanged (read from the adapter's
public core schema, not pydantic's private attributes)."""

from __future__ import annotations

import sys
import typing
from typing import Annotated, Any

import pytest
import typing_extensions
from pydantic import BaseModel, Field, TypeAdapter, field_validator

from wingman_actors import Formation
from wingman_actors.actors._function import _plain_class
from wingman_actors.errors import FormationRuntimeError, PayloadError


class Point(BaseModel):
    x: int


class Tree(BaseModel):
    kids: list[Tree] = []


class Always(BaseModel, revalidate_instances="always"):
    x: int


@pytest.mark.parametrize(("annotation", "plain"), [
    (int, int), (float, float), (str, str), (bytes, bytes), (dict, dict), (list, list), (Point, Point), (Tree, Tree),
    (Annotated[int, Field(gt=0)], None), (dict[str, int], None), (list[int], None), (int | None, None),
    (Always, None), (bool, None), (Any, None),
])
def test_only_a_type_pydantic_passes_through_unchanged_skips_validation(annotation: Any, plain: Any) -> None:
    assert _plain_class(TypeAdapter(annotation)) is plain


def test_a_constrained_int_parameter_still_refuses_an_int_outside_its_bounds() -> None:
    def make(x: int) -> int:
        return -x

    def positive(x: Annotated[int, Field(gt=0)]) -> int:
        return x

    formation = Formation("bounds").add_function("make", make).add_function("positive", positive).connect("make", "positive")
    with pytest.raises(FormationRuntimeError) as info:
        formation.run(3)
    cause = info.value.__cause__
    assert isinstance(cause, PayloadError)
    assert "greater than 0" in str(cause) and "'make' → 'positive'" in str(cause)


def test_a_function_whose_annotations_cannot_be_resolved_is_logged_once_naming_the_missing_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # with postponed annotations, a class defined inside a function is invisible to get_type_hints
    class Local(BaseModel):
        name: str

    def make(x: str) -> dict[str, str]:
        return {"name": x}

    def read(n: Local) -> str:
        return n["name"]  # type: ignore[index]  # it gets the dict: nothing could convert it

    formation = Formation("models").add_function("make", make).add_function("read", read).connect("make", "read")
    with caplog.at_level("WARNING", logger="wingman_actors.formation._typecheck"):
        assert formation.run("ada").output == "ada"
        formation.run("bob")
    warned = [r.getMessage() for r in caplog.records if "cannot be resolved" in r.getMessage()]
    assert len(warned) == 1
    assert "node 'read'" in warned[0] and "'Local' is not defined" in warned[0] and "module level" in warned[0]


class Named(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def upper(cls, v: str) -> str:
        return v.upper()


def test_a_dict_reaching_a_model_parameter_is_validated_into_the_model() -> None:
    def make(x: str) -> dict[str, str]:
        return {"name": x}

    def read(n: Named) -> str:
        return n.name

    formation = Formation("models").add_function("make", make).add_function("read", read).connect("make", "read")
    assert formation.run("ada").output == "ADA"


class _StdlibPoint(typing.TypedDict):  # pydantic validates typing's TypedDict only from Python 3.12
    x: int


class _ExtPoint(typing_extensions.TypedDict):
    x: int


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic validates typing.TypedDict from Python 3.12")
def test_a_typing_typeddict_parameter_on_python_3_11_is_logged_as_unchecked_naming_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the node runs, but its input goes unchecked: the user hears why, and how to get the check
    def first(p: _StdlibPoint) -> Any:
        return p.get("x")

    f = Formation("td").add_function("src", lambda v: v).add_function("first", first).connect("src", "first")
    with caplog.at_level("WARNING", logger="wingman_actors.formation._typecheck"):
        assert f.run({"y": 1}).output is None
        f.run({"y": 1})  # logged once per type, not per run
    warned = [r.getMessage() for r in caplog.records if "typing.TypedDict" in r.getMessage()]
    assert len(warned) == 1
    assert "_StdlibPoint" in warned[0] and "use typing_extensions.TypedDict" in warned[0]


def test_a_typing_extensions_typeddict_parameter_is_checked() -> None:
    def first(p: _ExtPoint) -> Any:
        return p["x"]

    f = Formation("td").add_function("src", lambda v: v).add_function("first", first).connect("src", "first")
    assert f.run({"x": "3"}).output == 3
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({"y": 1})
    assert isinstance(caught.value.__cause__, PayloadError)
