"""Model instances built from values the runtime made itself, without validating them again.

A fleet item's session builds a handful of pydantic models (its user message, the
assistant message, a trace entry, the result); validating values the runtime has just
made, with types it knows, was a third of an item's CPU. :func:`built` stores them as
validation would. Data from users and providers is validated as before.

Not a public API.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["built"]

_M = TypeVar("_M", bound=BaseModel)
_setattr = object.__setattr__


def built(cls: type[_M], values: dict[str, Any], fields_set: frozenset[str]) -> _M:
    """An instance of ``cls`` holding ``values`` as they are, without validation.

    ``values`` must hold every field of ``cls``, in declaration order, with values of the
    fields' types (what validation would store); ``fields_set`` names the fields the
    equivalent ``cls(...)`` call passes explicitly (``model_fields_set``). It stores what
    ``model_construct`` stores, without its per-field look-ups, for models with no private
    attributes, no ``model_post_init`` and ``extra`` other than ``"allow"``.
    tests/test_trusted.py fails if pydantic changes what a validated instance holds.
    """
    obj = cls.__new__(cls)
    _setattr(obj, "__dict__", values)
    _setattr(obj, "__pydantic_fields_set__", set(fields_set))
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj
