"""A ``@tool`` function's parameters as the fields of the pydantic model that checks a
call's arguments and gives the model their JSON schema.

A parameter's description comes from, first, its ``Annotated`` metadata (a pydantic
``Field(description=...)`` or a plain string, as in ``Annotated[str, "the city"]``), then
a ``Field`` given as its default (``page: int = Field(1, description=...)``), then the
docstring's ``Args:`` entry. A parameter whose name pydantic keeps for itself (``json``,
``schema``, ``copy``..., or one with a leading underscore) gets a field of another name
with the parameter's name as its alias: the model sees and sends the parameter's name.
"""

from __future__ import annotations

import typing
from typing import Any

import pydantic
from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["argument_field"]


def _annotated_description(annotation: Any) -> tuple[str | None, bool]:
    """The description ``Annotated`` metadata gives, and whether a ``Field`` there sets one
    (pydantic applies that one itself)."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None, False
    text: str | None = None
    for meta in typing.get_args(annotation)[1:]:
        if isinstance(meta, FieldInfo) and meta.description is not None:
            return meta.description, True
        if isinstance(meta, str) and text is None:
            text = meta
    return text, False


def argument_field(index: int, name: str, annotation: Any, default: Any, doc: str | None) -> tuple[str, Any]:
    """The field name and ``(annotation, FieldInfo)`` for parameter ``name`` (the
    ``index``-th) with ``default`` (``...`` when it has none) and docstring text ``doc``."""
    described, by_field = _annotated_description(annotation)
    if isinstance(default, FieldInfo):  # ``x: int = Field(3, description=...)``
        given = default
        described = described or given.description
    else:
        given = pydantic.Field(default)
    options: dict[str, Any] = {}
    if not by_field and (described or doc) and given.description is None:
        options["description"] = described or doc
    field_name = name
    if name.startswith("_") or hasattr(BaseModel, name):
        field_name = f"arg{index}_{name.strip('_') or 'value'}"
        options.update(alias=name, validation_alias=name, serialization_alias=name)
    info = FieldInfo.merge_field_infos(given, **options) if options else given
    return field_name, (annotation, info)
