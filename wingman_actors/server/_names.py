"""The strings a request names things with: names (an agent's, a fleet's, a formation's, a
node's) and file paths, and the patterns the OpenAPI document gives them."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic.json_schema import WithJsonSchema
from pydantic_core import PydanticCustomError

__all__ = ["NO_NUL", "SPACES", "VISIBLE", "Name", "NameOrNull", "PathText"]


NO_NUL = r"^[^\x00]*$"
"""The pattern the document gives file paths: no path can hold a NUL character (the server
refuses one itself, naming the field)."""

PathText = Annotated[str, Field(json_schema_extra={"pattern": NO_NUL})]
"""A file path in a request: a string without NUL characters."""

SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
         "\u2028\u2029\u202f\u205f\u3000"
"""Every character Python counts as whitespace (``str.isspace``)."""

VISIBLE = "[^" + "".join(f"\\u{ord(c):04x}" for c in SPACES) + "]"
"""The pattern the document gives names: a character Python does not count as whitespace
(spelled out, as JSON Schema's ``\\S`` and Python's disagree on a few, U+0085 among them)."""


def _visible(name: str | None) -> str | None:
    if name is not None and (not name or name.isspace()):
        raise PydanticCustomError("blank_name", "must be a non-empty name, not only whitespace: give it a visible "
                                                "character, e.g. \"reviewer\"")
    return name


Name = Annotated[str, Field(min_length=1, json_schema_extra={"pattern": VISIBLE}), AfterValidator(_visible)]
"""A name declared in a request (an agent's, a fleet's, a formation's or a node's): at least
one character that is not whitespace. What a name is refused for is the same everywhere."""

NameOrNull = Annotated[str | None, AfterValidator(_visible),
                       WithJsonSchema({"type": "string", "minLength": 1, "pattern": VISIBLE})]
""":data:`Name` in a partial update, where ``null`` reaches the route (which refuses it, saying
so); the document declares the name only, as a null name is never accepted."""
