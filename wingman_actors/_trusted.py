"""Model instances built from values the runtime made itself, without validating them again.

A fleet item's session builds a handful of pydantic models (its user message, the
assistant message, a trace entry, the result); validating values the runtime has just
made, with types it knows, was a third of an item's CPU. :func:`built` stores them as
validation would. Data from users and providers is validated as before.

Not a public API.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["built", "fields_set"]

_M = TypeVar("_M", bound=BaseModel)
# BaseModel's slot descriptors, called directly: half the cost of object.__setattr__ each.
_set_dict, _set_fields_set, _set_extra, _set_private = (
    BaseModel.__dict__[slot].__set__
    for slot in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
)


def fields_set(cls: type[BaseModel], names: Iterable[str]) -> set[str]:
    """The ``model_fields_set`` of the ``cls`` instances :func:`built` with ``names`` set
    explicitly: one set shared by all of them, not one per instance (fewer objects for the
    garbage collector to track).

    pydantic adds a field's name to an instance's set when the field is assigned (a model
    that is not frozen), in place: for such a model the shared set must already name every
    field, so adding is a no-op and no instance changes what another reports. (It copies the
    set before changing a copy's: ``model_copy(update=...)``.)

    Raises:
        ValueError: ``cls`` is not frozen and ``names`` leaves out some of its fields.
    """
    shared = set(names)
    unknown = shared - set(cls.model_fields)
    if unknown:
        raise ValueError(f"{cls.__name__} has no fields {sorted(unknown)}")
    if not cls.model_config.get("frozen") and shared != set(cls.model_fields):
        raise ValueError(
            f"{cls.__name__} is not frozen: its instances can share a fields set only if it names every field"
        )
    return shared


def built(cls: type[_M], values: dict[str, Any], fields_set: set[str]) -> _M:
    """An instance of ``cls`` holding ``values`` as they are, without validation.

    ``values`` must hold every field of ``cls``, in declaration order, with values of the
    fields' types (what validation would store); ``fields_set`` (from :func:`fields_set`)
    names the fields the equivalent ``cls(...)`` call passes explicitly
    (``model_fields_set``). It stores what ``model_construct`` stores, without its per-field
    look-ups, for models with no private attributes, no ``model_post_init`` and ``extra``
    other than ``"allow"``. tests/test_trusted.py fails if pydantic changes what a
    validated instance holds.
    """
    obj = cls.__new__(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj
