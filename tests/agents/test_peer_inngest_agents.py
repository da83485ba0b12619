"""A tool's failure that cannot describe itself, from the Inngest Python SDK's own test
suite (inngest/inngest-py, ``tests/test_function/cases/change_step_error.py`` and
``on_failure.py``: a step's error reaches the function's code with its class name and
message). A tool raising an exception whose ``__str__`` raises is answered to the model as
an error result naming the class, as any tool error is; the session used to fail with the
``__str__``'s own error."""

from __future__ import annotations

from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.testing import ScriptedProvider


class ResponseError(Exception):
    """A client library's error whose message is read from a response it was not given."""

    def __str__(self) -> str:
        raise AttributeError("'NoneType' object has no attribute 'text'")


@tool
def call_api(query: str) -> str:
    """Call the remote API."""
    raise ResponseError()


def echo_tool_result(request: InferenceRequest) -> str:
    """A model turn that repeats the tool result it was given."""
    return f"saw: {request.messages[-1].content[0].content}"


def test_a_tool_error_whose_str_raises_is_answered_to_the_model_naming_its_class() -> None:
    """From inngest-py tests/test_function/cases/change_step_error.py (the step's error is
    caught by the function's code, which goes on)."""
    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "call_api", {"query": "x"})]),
                              echo_tool_result])
    result = Session(Agent("caller", provider=model, tools=[call_api])).run("go")
    assert result.response == "saw: Error: tool 'call_api' raised ResponseError: <str() failed: AttributeError>"
    assert result.tool_calls[0].is_error


def test_a_fleet_whose_items_tools_raise_such_errors_still_finishes_every_item() -> None:
    """From inngest-py tests/test_function/cases/parallel_steps.py with change_step_error.py."""
    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "call_api", {"query": "x"})]),
                              echo_tool_result], cycle=True)
    f = Formation("fleet").add_fleet("callers", Agent("caller", provider=model, tools=[call_api]), max_workers=1)
    assert f.run(["a", "b"]).output == ["saw: Error: tool 'call_api' raised ResponseError: <str() failed: "
                                        "AttributeError>"] * 2
