"""What an agent's model sees of every kind of content an MCP tool may return, ported from the
official MCP Python SDK's tests (modelcontextprotocol/python-sdk): tools of servers written with
the SDK's ``MCPServer`` (tests/integrations/mcp_peer_content.py) and low-level ``Server``
(mcp_peer_lowlevel.py), reached through ``mcp_tools`` over stdio and streamable HTTP.

Our tool results are text (DESIGN: a tool result block carries ``content: str``), so images,
audio and binary resources reach the model as a one-line note; the SDK hands its caller the
blocks themselves. Those tests pin our documented rendering."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')

from wingman_actors import Agent, Session
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import ToolError, WingmanError
from wingman_actors.integrations.mcp import MCPTool, mcp_tools
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

from . import mcp_peer_content
from .mcp_http import serve_http

CONTENT = [sys.executable, str(Path(__file__).with_name("mcp_peer_content.py"))]
LOWLEVEL = [sys.executable, str(Path(__file__).with_name("mcp_peer_lowlevel.py"))]
SDK = "modelcontextprotocol/python-sdk"


@pytest.fixture(scope="module")
def content() -> Iterator[dict[str, MCPTool]]:
    """The content peer's tools over stdio, one connection for the module."""
    with mcp_tools(command=CONTENT) as tools:
        yield {t.name: t for t in tools if isinstance(t, MCPTool)}


@pytest.fixture(scope="module")
def structured() -> Iterator[dict[str, MCPTool]]:
    """The low-level peer's tools with output schemas, over stdio."""
    with mcp_tools(command=LOWLEVEL, env={"PEER_MODE": "structured"}) as tools:
        yield {t.name: t for t in tools if isinstance(t, MCPTool)}


def _seen_by_model(tool: MCPTool, args: dict[str, Any] | None = None) -> tuple[str, bool]:
    """The tool result a model receives after calling ``tool`` once: (text, is_error)."""
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", tool.name, args or {})]), "done"])
    Session(Agent("a", provider=provider, tools=[tool])).run("go")
    block = provider.requests[1].messages[-1].content[0]
    return block.content or "", block.is_error


# --- text and unicode ---------------------------------------------------------------------------


def test_a_non_ascii_description_and_result_reach_the_model_unchanged(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServer::test_non_ascii_description."""
    hello = content["hello"]
    assert hello.definition.description == "🌟 Greets in any language: á é í ó ú ñ 漢字 🎉"
    assert hello.definition.input_schema["properties"]["name"]["default"] == "世界"
    assert _seen_by_model(hello) == ("¡Hola, 世界! 👋", False)
    assert hello.execute({"name": "Zoë ✓"}, ToolContext()) == "¡Hola, Zoë ✓! 👋"


def test_unicode_arguments_and_results_cross_streamable_http_unchanged() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_http_unicode.py::test_streamable_http_client_unicode_tool_call."""
    text = "Ελληνικά Русский 中文 日本語 한국어 עברית العربية 🎉🚀 \u200d line\nbreak \"quotes\""
    with serve_http(mcp_peer_content.build().streamable_http_app()) as server, mcp_tools(
        url=server.url, include=["hello"]
    ) as tools:
        assert tools[0].definition.description.startswith("🌟")
        assert tools[0].execute({"name": text}, ToolContext()) == f"¡Hola, {text}! 👋"


def test_a_primitive_return_reaches_the_model_as_its_text(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_return_value_conversion."""
    assert _seen_by_model(content["calculate_sum"], {"a": 5, "b": 7}) == ("12", False)


# --- images, audio, resources -------------------------------------------------------------------


def test_an_image_result_reaches_the_model_as_a_note_with_its_type_and_size(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_image_helper.
    The SDK hands its caller the base64 image; our tool results are text, so the model gets a note."""
    size = len(mcp_peer_content.PNG)
    assert _seen_by_model(content["picture"]) == (f"[image image/png, {size} bytes, not shown]", False)


def test_an_images_size_in_the_note_is_its_decoded_size_whatever_its_base64_padding(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_image_helper
    (the SDK checks the decoded bytes; a 22-byte image's base64 ends in '==')."""
    data = mcp_peer_content.PNG + b"!"
    assert base64.b64encode(data).endswith(b"==")
    assert content["thumbnail"].execute({}, ToolContext()) == f"[image image/png, {len(data)} bytes, not shown]"


def test_an_audio_result_reaches_the_model_as_a_note_with_its_type_and_size(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_audio_helper."""
    size = len(mcp_peer_content.WAV)
    assert content["sound"].execute({}, ToolContext()) == f"[audio audio/wav, {size} bytes, not shown]"


def test_mixed_content_reaches_the_model_in_the_servers_order_nothing_dropped(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_mixed_list_with_audio_and_image."""
    text, is_error = _seen_by_model(content["mixed"])
    lines = text.split("\n")
    assert not is_error
    assert lines[0] == "text message"
    assert lines[1].startswith("[image image/png,")
    assert lines[2].startswith("[audio audio/wav,")
    assert json.loads("\n".join(lines[3:-1])) == {"key": "value"}
    assert lines[-1] == "direct content"


def test_an_embedded_text_resource_reaches_the_model_as_its_text(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerResources::test_text_resource
    (a resource embedded in a tool result, as the spec's tools/call allows)."""
    assert _seen_by_model(content["document"]) == ("# To do\n- ship", False)


def test_an_embedded_binary_resource_reaches_the_model_as_a_note_naming_it(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerResources::test_binary_resource."""
    assert content["blob"].execute({}, ToolContext()) == "[resource file:///data/report.pdf (application/pdf)]"


def test_a_resource_link_reaches_the_model_with_its_uri_name_type_and_description(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_mixed_content
    (a resource_link block: the model needs what the server said of it to decide whether to read it)."""
    text = content["link"].execute({}, ToolContext())
    for part in ("file:///data/big.csv", "big.csv", "text/csv", "the whole table"):
        assert part in text


# --- structured output --------------------------------------------------------------------------


def test_a_model_returned_by_a_tool_reaches_the_model_as_its_json(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_structured_output_basemodel."""
    text, is_error = _seen_by_model(content["get_user"], {"user_id": 1})
    assert not is_error
    assert json.loads(text) == {"name": "John Doe", "age": 31, "active": True}


def test_a_nested_dict_returned_by_a_tool_reaches_the_model_whole(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_structured_output_dict_str_any."""
    assert json.loads(content["metadata"].execute({}, ToolContext())) == {
        "version": "1.0.0", "enabled": True, "tags": ["production", "stable"], "config": {"nested": {"value": 123}},
    }


def test_a_list_returned_by_a_tool_reaches_the_model_item_by_item(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_structured_output_list
    (the SDK's server writes one text block per item; the structured copy says the same)."""
    assert content["numbers"].execute({}, ToolContext()).split("\n") == ["1", "2", "3", "4", "5"]


def test_structured_content_without_text_reaches_the_model_as_json(structured: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_output_schema_validation.py::test_tool_structured_output_client_side_validation_basemodel
    (a valid structured result, here one with no text blocks at all)."""
    assert json.loads(structured["structured_only"].execute({}, ToolContext())) == {"answer": "forty-two", "ok": True}
    assert structured["good_user"].execute({}, ToolContext()) == "good_user ran"


def test_an_error_result_with_only_structured_content_reaches_the_model_as_that_error(
    structured: dict[str, MCPTool],
) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_structured_output_server_side_validation_error
    (an isError result whose only account of the failure is its structured content)."""
    text, is_error = _seen_by_model(structured["error_structured_only"])
    assert is_error and "quota exceeded" in text


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("bad_user", r"'old' is not of type 'integer'"),
        ("missing_structured", r"has an output schema but did not return structured content"),
    ],
)
def test_structured_content_breaking_the_tools_output_schema_is_a_tool_error_naming_server_and_tool(
    structured: dict[str, MCPTool], tool: str, why: str
) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_output_schema_validation.py::test_tool_structured_output_client_side_validation_primitive
    and ::test_tool_structured_output_client_side_validation_missing_required (the SDK raises a RuntimeError; we give
    the model an error result, and a direct caller a ToolError, naming the server and the tool)."""
    with pytest.raises(ToolError, match=why) as info:
        structured[tool].execute({}, ToolContext())
    assert isinstance(info.value, WingmanError)
    assert f"MCP tool {tool!r}" in str(info.value) and "mcp_peer_lowlevel.py" in str(info.value)
    text, is_error = _seen_by_model(structured[tool])
    assert is_error and tool in text and "output schema" in text


# --- errors -------------------------------------------------------------------------------------


def test_a_tool_that_raises_is_an_error_result_for_the_model(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_exception_handling.
    The SDK's server no longer puts the exception's text in the result (only 'Error executing tool ...'), so neither can we."""
    text, is_error = _seen_by_model(content["explode"])
    assert is_error and "Error executing tool explode" in text


def test_a_return_value_breaking_the_servers_own_schema_is_an_error_result(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_structured_output_server_side_validation_error."""
    text, is_error = _seen_by_model(content["bad_numbers"])
    assert is_error and "bad_numbers" in text


def test_a_tool_asking_the_client_for_sampling_is_an_error_result_not_a_hang(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_sampling_callback.py::test_sampling_callback
    (we give no sampling callback: the server's request is refused, and the tool's failure names it)."""
    text, is_error = _seen_by_model(content["ask_model"], {"question": "2+2?"})
    assert is_error and "Sampling not supported" in text and "ask_model" in text


def test_progress_notifications_during_a_call_do_not_disturb_its_result(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_progress_notifications.py::test_progress_callback_exception_logging
    (we pass no progress callback; the server's notifications are dropped and the call answers)."""
    assert _seen_by_model(content["progress"], {"steps": 5}) == ("5 steps done", False)


def test_log_messages_during_a_call_do_not_disturb_its_result(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_logging_callback.py::test_logging_callback."""
    assert content["chatty"].execute({}, ToolContext()) == "logged"


def test_a_long_result_is_cut_to_the_agents_limit_with_a_note(content: dict[str, MCPTool]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_session.py::test_client_session_initialize
    (a large message over stdio arrives whole; the agent then caps what its model sees)."""
    big = content["big"]
    assert len(big.execute({"size": 200_000}, ToolContext())) == 200_000
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "big", {"size": 5000})]), "done"])
    Session(Agent("a", provider=provider, tools=[big], max_tool_result_chars=1000)).run("go")
    sent = provider.requests[1].messages[-1].content[0].content or ""
    assert len(sent) <= 1000 and "tool result truncated" in sent
