"""DESIGN's HTTP bullets read literally, as a client that knows only DESIGN and the served
OpenAPI document would check them ("Limits that hold for agents; the server's agents":
"The HTTP API conforms to its OpenAPI document: a method a path does not have is a 405 with
`Allow`, before any other check; JSON types are strict (a boolean is not an integer); the
constraints the server enforces are declared in the document").

Complements tests/server/test_conformance.py (single findings) with checks driven by the
document itself: every path, every method it does not declare; every body field, every JSON
type it does not take."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest


@pytest.mark.parametrize(("server_entry", "field"), [({"url": "http://127.0.0.1:9/mcp", "command": None}, "command"),
                                                   ({"command": [sys.executable, "-c", "pass"], "url": None}, "url")])
def test_an_mcp_servers_command_or_url_given_as_null_is_400_naming_that_field(
    client: httpx.Client, server_entry: dict[str, Any], field: str
) -> None:
    # the document declares both as non-nullable (an array, a string): null is the wrong JSON type
    response = client.post("/agents", json={"name": "a", "mcp": [server_entry]})

    assert response.status_code == 400, response.text
    assert response.json()["fields"] == [f"mcp[0].{field}"]
    assert "null" in response.json()["error"]
