"""A custom tool: ``@tool`` on a typed function with a Google-style docstring gives the
tool's name, description and JSON Schema; a scripted model calls it, once with good
arguments and once with bad ones. The bad call is not a crash: it goes back to the model
as an ``is_error`` tool result and the loop continues.

Run it with::

    python examples/custom_tool.py
"""

from __future__ import annotations

import json
from typing import Literal

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.testing import ScriptedProvider


@tool
def convert_temperature(value: float, unit: Literal["C", "F"], decimals: int = 1) -> str:
    """Convert a temperature between Celsius and Fahrenheit.

    Args:
        value: the temperature to convert.
        unit: the unit `value` is in: "C" or "F".
        decimals: digits after the decimal point in the answer.
    """
    if unit == "C":
        return f"{round(value * 9 / 5 + 32, decimals)} F"
    return f"{round((value - 32) * 5 / 9, decimals)} C"


def main() -> None:
    definition = convert_temperature.definition
    print(f"tool {definition.name!r}: {definition.description}")
    print("input schema:")
    print(json.dumps(definition.input_schema, indent=2))

    script = [
        # Step 1: the model calls the tool twice in one step: good arguments, then bad ones.
        InferenceResponse.of_tool_calls([
            ("call_1", "convert_temperature", {"value": 21.5, "unit": "C"}),
            ("call_2", "convert_temperature", {"value": "warm", "unit": "K"}),
        ]),
        # Step 2: it reads the error result and retries with fixed arguments.
        InferenceResponse.of_tool_calls([("call_3", "convert_temperature", {"value": 70, "unit": "F"})]),
        # Step 3: the final answer.
        "21.5 C is 70.7 F, and 70 F is 21.1 C.",
    ]
    provider = ScriptedProvider(script)
    agent = Agent("converter", provider=provider, tools=[convert_temperature])
    with Session(agent) as session:
        result = session.run("Convert 21.5 C to F, and 70 F to C.")

    print("\ntool calls:")
    for call in result.tool_calls:
        flag = "ERROR" if call.is_error else "ok   "
        print(f"  {flag} {call.id} {call.input} -> {call.output}")
    print(f"\nthe loop went on after the error: {result.steps} model calls; answer: {result.response!r}")
    # What the model saw for the bad call (the second request's last message):
    bad = [b for b in provider.requests[1].messages[-1].content if b.type == "tool_result" and b.is_error]
    print(f"the model received {len(bad)} error result(s), e.g.: {bad[0].content[:80]}...")


if __name__ == "__main__":
    main()
