"""``wingman-actors ui --store PATH``: the viewer over a launcher's run store, read-only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]

FORMATION = """
from wingman_actors import Formation, interrupt


def ask(text: str) -> str:
    return f"{text}: {interrupt({'question': 'publish?'})}"


def build(asking: bool = False):
    f = Formation("notes").add_function("clean", str.strip).add_function("shout", str.upper)
    f.connect("clean", "shout")
    if asking:
        f.add_function("ask", ask).connect("shout", "ask")
    return f
"""


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wingman_actors", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60, check=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ui-store")
    (folder / "notes.py").write_text(textwrap.dedent(FORMATION))
    path = folder / "runs.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = _cli("run", str(folder / "notes.py"), "--input", "  hello  ", "--store", str(path), env=env)
    assert done.returncode == 0, done.stderr
    asked = _cli("run", str(folder / "notes.py"), "--param", "asking=true", "--input", "draft", "--store",
                 str(path), env=env)
    assert "resume" in asked.stderr, asked.stderr
    return path


@pytest.fixture(scope="module")
def viewer(store: Path) -> Iterator[str]:
    process = subprocess.Popen([sys.executable, "-m", "wingman_actors", "ui", "--store", str(store), "--port", "0"],
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "/ui/" in line, line
        yield next(word for word in line.split() if word.startswith("http://"))
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def _run_ids(store: Path) -> dict[str, str]:
    from wingman_actors.store import RunStore

    with RunStore(store, recover=False) as runs:
        return {r.status: r.id for r in runs.runs()}


def test_ui_store_lists_the_runs_of_the_launcher(page: Any, viewer: str, store: Path) -> None:
    ids = _run_ids(store)
    page.goto(f"{viewer}#/runs")
    for run_id in ids.values():
        page.wait_for_selector(f'[data-run-id="{run_id}"]')
    assert page.locator("[data-run-id]").count() == 2


def test_ui_store_shows_a_run_s_nodes_and_outputs(page: Any, viewer: str, store: Path) -> None:
    run_id = _run_ids(store)["succeeded"]
    page.goto(f"{viewer}#/runs/{run_id}")
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    page.click('[data-node="shout"]')
    page.locator(".details").get_by_text("HELLO", exact=True).wait_for()


def test_ui_store_offers_the_resume_command_instead_of_actions(page: Any, viewer: str, store: Path) -> None:
    run_id = _run_ids(store)["suspended"]
    page.goto(f"{viewer}#/runs/{run_id}")
    page.wait_for_selector('[data-node="ask"][data-status="suspended"]')
    page.get_by_text(f"wingman-actors resume {run_id} --store").wait_for()
    assert page.locator("[data-action]").count() == 0
