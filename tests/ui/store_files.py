"""Formation files the ``ui --store`` tests run (from the launcher, and from the viewer).

A ``wait`` node waits (20 s at most) until the file ``<input>.open`` exists in the folder
named by ``UI_GATES``: a test opens the gate of its own run by its input, so a run is seen
running, is cancelled in flight, or goes on, when the test says.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

GATED = '''
import os
import time
from pathlib import Path

from wingman_actors import Formation, interrupt


def wait(text: str) -> str:
    gate = Path(os.environ["UI_GATES"]) / f"{text}.open"
    deadline = time.monotonic() + 20
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return text


def ask(text: str) -> str:
    return f"{text}: {interrupt({'question': 'publish?'})}"
'''

FILES = {
    "notes.py": GATED + '''
DEFAULT_INPUT = "  default words  "


def build(asking: bool = False):
    f = Formation("notes").add_function("clean", str.strip).add_function("shout", str.upper)
    f.connect("clean", "shout")
    if asking:
        f.add_function("ask", ask).connect("shout", "ask")
    return f
''',
    "gated.py": GATED + '''

def build(asking: bool = False):  # (takes the option the notes file takes: a viewer gives both)
    f = Formation("gated").add_function("clean", str.strip).add_function("wait", wait)
    return f.add_function("shout", str.upper).connect("clean", "wait").connect("wait", "shout")
''',
    "nested.py": GATED + '''

def build(asking: bool = False):
    inner = Formation("inner").add_function("wait", wait).add_function("shout", str.upper)
    inner.connect("wait", "shout")
    f = Formation("nested").add_function("clean", str.strip).add_formation("sub", inner)
    f.add_function("last", lambda text: f"{text}!")
    return f.connect("clean", "sub").connect("sub", "last")
''',
}
"""File name → source."""


def write_files(folder: Path) -> dict[str, Path]:
    """Write the formation files into ``folder``; their paths by name (``notes``, ``gated``, ``nested``)."""
    out = {}
    for name, text in FILES.items():
        path = folder / name
        path.write_text(textwrap.dedent(text))
        out[name.removesuffix(".py")] = path
    (folder / "gates").mkdir(exist_ok=True)
    return out


def open_gate(folder: Path, text: str) -> None:
    """Let the ``wait`` node of the run whose input is ``text`` go on."""
    (folder / "gates" / f"{text}.open").touch()
