"""Every ```python block of README.md and of the docs site (docs/**/*.md, and the files
its pages include) runs.

Each block runs in a fresh namespace, in this process, so every example is complete on its
own (a reader can copy any one of them). Tracebacks name the page and its line. A marker
on the line before a block changes how it runs, and says why in the page's source:

* ``<!-- docs-test: continues -->``: the block goes on from the block before it (which runs
  first, in the same namespace), as the page's text says;
* ``<!-- docs-test: own process -->`` runs the block in a fresh interpreter (for an
  example that sets process-wide state, such as OpenTelemetry's tracer provider);
* ``<!-- docs-test: ray -->``: the block uses the Ray backend; it is marked ``ray``, so it
  runs in the Ray step of the test command (``-m ray``), with the other Ray tests;
* ``<!-- docs-test: skip, REASON -->`` does not run it (only for what cannot run offline,
  such as a real provider's API key); the skips are counted below and kept few.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_SITE = sorted((ROOT / "docs").rglob("*.md"))
_INCLUDED = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)  # pymdownx.snippets: a file the site includes
PAGES = [
    ROOT / "README.md",
    *_SITE,
    *sorted({ROOT / name for page in _SITE for name in _INCLUDED.findall(page.read_text(encoding="utf-8"))}),
]
MAX_SKIPPED = 2

_FENCE = re.compile(
    r"^(?:<!-- docs-test: (?P<marker>[^\n]*?) -->\n)?(?P<indent>[ \t]*)```python[^\n]*\n(?P<code>.*?)^(?P=indent)```",
    re.DOTALL | re.MULTILINE,
)
_MARKER = re.compile(r"continues|own process|ray|skip, \S.*")


@dataclass(frozen=True)
class Block:
    page: str
    index: int
    line: int  # the page's line of the block's first line of code
    code: str
    marker: str | None
    before: Block | None  # the block this one continues

    def chain(self) -> list[Block]:
        """This block, after the blocks it continues (oldest first)."""
        return [*(self.before.chain() if self.before else []), self]

    @property
    def id(self) -> str:
        return f"{self.page}#{self.index}"


def _blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    page = path.relative_to(ROOT).as_posix()
    found: list[Block] = []
    for index, match in enumerate(_FENCE.finditer(text)):
        line = text.count("\n", 0, match.start("code")) + 1
        code = textwrap.dedent(match["code"]) if match["indent"] else match["code"]
        before = found[-1] if match["marker"] == "continues" and found else None
        found.append(Block(page, index, line, code, match["marker"], before))
    return found


BLOCKS = [block for path in PAGES for block in _blocks(path)]


def test_every_page_of_the_site_is_found() -> None:
    names = {Path(block.page).name for block in BLOCKS}
    assert {"README.md", "index.md", "formations.md", "agents.md", "durable-runs.md"} <= names


def test_markers_are_known_and_skips_are_few() -> None:
    unknown = [(b.id, b.marker) for b in BLOCKS if b.marker is not None and not _MARKER.fullmatch(b.marker)]
    assert unknown == [], "markers: 'continues', 'own process', 'ray' or 'skip, REASON' (see this module's docstring)"
    orphans = [b.id for b in BLOCKS if b.marker == "continues" and b.before is None]
    assert orphans == [], "a block marked 'continues' needs a block before it on its page"
    skipped = [b.id for b in BLOCKS if b.marker is not None and b.marker.startswith("skip")]
    assert len(skipped) <= MAX_SKIPPED, f"make these run offline (a ScriptedProvider) instead: {skipped}"


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=b.id, marks=[pytest.mark.ray] if b.marker == "ray" else []) for b in BLOCKS]
)
def test_docs_example_runs(block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    if block.marker is not None and block.marker.startswith("skip"):
        pytest.skip(block.marker.removeprefix("skip, "))
    if block.marker == "ray":
        pytest.importorskip("ray")
    if block.marker == "own process":
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True, timeout=50, env=env)
        assert done.returncode == 0, f"{block.page}, line {block.line}:\n{done.stderr}"
        return
    namespace = {"__name__": f"docs_block_{block.index}"}
    for step in block.chain():
        source = "\n" * (step.line - 1) + step.code  # line numbers of tracebacks are the page's
        exec(compile(source, step.page, "exec"), namespace)


def test_ci_runs_exactly_the_test_commands_of_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = [line for line in readme.splitlines() if line.startswith('pip install -e ".[dev') and "pytest" in line]
    install, *tests = line.split(" && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests and all(command in ci for command in tests), (tests, ".ci/run")
    extras = set(install.split('"')[1].removeprefix(".[").removesuffix("]").split(","))
    (ci_install,) = [c for c in ci if c.startswith("python -m pip install") and "-e" in c]
    assert extras <= set(ci_install.split('"')[1].removeprefix(".[").removesuffix("]").split(","))
