"""``@tool`` refuses what it cannot turn into a tool with an error naming the tool, the
parameter and the fix (not pydantic's or the regex module's own message)."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors import tool


class Opaque:
    """A class pydantic has no schema for."""


def test_a_parameter_type_without_a_json_schema_is_refused_naming_the_parameter_and_the_fix() -> None:
    def place(where: Opaque) -> str:
        """Place it."""
        return "ok"

    with pytest.raises(TypeError, match=r"tool 'place': parameter 'where' \(Opaque\) has no JSON schema.*pydantic model"):
        tool(place)


@pytest.mark.parametrize("name", [3, b"bytes"])
def test_a_name_that_is_not_a_str_is_refused_naming_it(name: Any) -> None:
    def act() -> str:
        """Act."""
        return "ok"

    with pytest.raises(TypeError, match=r"tool name must be a str"):
        tool(name=name)(act)


def test_a_description_that_is_not_a_str_is_refused() -> None:
    def act() -> str:
        """Act."""
        return "ok"

    with pytest.raises(TypeError, match=r"tool 'act': description must be a str"):
        tool(description=3)(act)  # type: ignore[arg-type]
