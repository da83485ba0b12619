"""Built-in tools named by string: ``write``, ``read``, ``bash`` and ``grep`` in a
temporary ``work_dir``, driven by a scripted model. The file tools are confined to the
work_dir: reading ``../outside.txt`` is refused with an ``is_error`` result the model can
read, and the run goes on.

Run it with::

    python examples/builtin_tools.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from wingman_actors import Agent, Session
from wingman_actors.core import InferenceResponse
from wingman_actors.testing import ScriptedProvider

NOTES = "TODO: buy milk\ndone: write report\nTODO: call Ana\n"


def main() -> None:
    script = [
        InferenceResponse.of_tool_calls([("c1", "write", {"path": "notes/todo.txt", "content": NOTES})]),
        InferenceResponse.of_tool_calls([("c2", "read", {"path": "notes/todo.txt"})]),
        InferenceResponse.of_tool_calls([("c3", "grep", {"pattern": r"^TODO", "glob": "*.txt"})]),
        # The bash shell persists for the session: the `cd` carries over to the next call.
        InferenceResponse.of_tool_calls([("c4", "bash", {"command": "cd notes && wc -l todo.txt"})]),
        InferenceResponse.of_tool_calls([("c5", "bash", {"command": "pwd | sed 's#.*/##'; ls"})]),
        # Out of bounds: the work_dir's parent holds outside.txt, but read refuses to go there.
        InferenceResponse.of_tool_calls([("c6", "read", {"path": "../outside.txt"})]),
        "You have 2 TODO items: buy milk, call Ana.",
    ]
    agent = Agent("clerk", provider=ScriptedProvider(script), tools=["write", "read", "bash", "grep"])

    with tempfile.TemporaryDirectory() as root:
        work_dir = Path(root) / "work"
        work_dir.mkdir()
        (Path(root) / "outside.txt").write_text("secret\n")

        with Session(agent, work_dir=work_dir) as session:  # closing the session ends its shell
            result = session.run("Write my notes, then tell me what is left to do.")

        for call in result.tool_calls:
            status = "is_error" if call.is_error else "ok"
            print(f"--- {call.name}({call.input}) [{status}]")
            print(call.output.rstrip())
        print(f"\nfinal answer: {result.response}")
        print(f"file on disk: {(work_dir / 'notes' / 'todo.txt').read_text().count('TODO')} TODO lines")

        refused = result.tool_calls[-1]
        assert refused.is_error and "outside the working directory" in refused.output
        print(f"\nreading '../outside.txt' was refused: {refused.output}")


if __name__ == "__main__":
    main()
