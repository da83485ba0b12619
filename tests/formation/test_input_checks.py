"""A function node's input is checked against its parameter's annotation; a payload
skips pydantic only when pydantic would hand it over unchanged (read from the adapter's
public core schema, not pydantic's private attributes)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
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
