"""An agent node's reasoning in the run viewer: among its steps, collapsed and labelled
"thinking", followed live, shown again for a finished run, and in a journalled model
response (``ui --store``, a run suspended in an agent's tool call)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer, scripted_agent
from tests.ui.conftest import start_server, wait_for_status

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]

REASONING = "27 * 453: 27 * 400 = 10800, 27 * 53 = 1431, so 12231"
ANSWER = {"content": [{"type": "thinking", "text": REASONING, "signature": "sig"},
                      {"type": "text", "text": "The product is 12231."}],
          "usage": {"input_tokens": 12, "output_tokens": 40, "reasoning_tokens": 31}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("thinking"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


@pytest.fixture(scope="module")
def formation(client: httpx.Client) -> str:
    agent = scripted_agent(client, ANSWER, name="calc")
    body = {"name": "reasoning", "nodes": [{"name": "calc", "kind": "agent", "agent_id": agent}], "edges": []}
    return str(client.post("/formations", json=body).json()["id"])


@pytest.fixture(scope="module")
def finished(client: httpx.Client, formation: str) -> str:
    """A run of the formation started over the API, once it succeeded."""
    run_id = str(client.post(f"/formations/{formation}/run", json={"input": "What is 27 * 453?"}).json()["id"])
    wait_for_status(client, run_id, "succeeded")
    return run_id


def _calc_steps(page: Any) -> Any:
    page.wait_for_selector('[data-node="calc"][data-status="succeeded"]')
    page.click('[data-node="calc"]')
    steps = page.locator("ol.steps")
    steps.get_by_text("The product is 12231.").wait_for()
    return steps


def test_a_run_followed_live_shows_the_agent_s_reasoning_collapsed_under_thinking(
    page: Any, server: RunningServer, formation: str
) -> None:
    page.goto(f"{server.url}/ui/#/formations/{formation}")
    page.fill('textarea[name="input"]', "What is 27 * 453?")
    page.click('[data-action="start"]')
    page.wait_for_url("**/ui/#/runs/*")

    thinking = _calc_steps(page).locator("details.thinking")

    assert thinking.locator("summary").inner_text() == "thinking"
    assert thinking.get_attribute("open") is None
    assert not thinking.get_by_text(REASONING).is_visible()


def test_the_reasoning_of_a_finished_run_opens_to_its_text(page: Any, server: RunningServer, finished: str) -> None:
    page.goto(f"{server.url}/ui/#/runs/{finished}")

    steps = _calc_steps(page)
    steps.locator("details.thinking summary").click()

    assert steps.get_by_text(REASONING).is_visible()


def test_a_node_s_tokens_say_how_many_of_its_output_tokens_were_reasoning(
    page: Any, server: RunningServer, finished: str
) -> None:
    page.goto(f"{server.url}/ui/#/runs/{finished}")
    _calc_steps(page)

    assert "12 in / 40 out (31 reasoning)" in page.locator("details.visit summary").inner_text()


SUSPENDING = textwrap.dedent('''
    from wingman_actors import Agent, Formation, interrupt, tool
    from wingman_actors.core import ContentBlock, InferenceResponse
    from wingman_actors.testing import ScriptedProvider


    @tool
    def approve(text: str) -> str:
        """Asks a person to approve the text."""
        return str(interrupt({"question": text}))


    def build():
        call = InferenceResponse(content=[ContentBlock.thinking_block("The total needs a person's approval.",
                                                                      signature="sig"),
                                          ContentBlock.tool_use_block("c1", "approve", {"text": "12231?"})],
                                 stop_reason="tool_use")
        agent = Agent("calc", provider=ScriptedProvider([call, "approved"]), tools=[approve])
        return Formation("reasoning").add_agent("calc", agent)
''')


@pytest.fixture(scope="module")
def store_viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``ui --store`` over a store whose one run is suspended in the agent's tool call (so the
    journal kept the agent's model response); the URL of that run's page."""
    folder = tmp_path_factory.mktemp("thinking-store")
    (folder / "reasoning.py").write_text(SUSPENDING)
    store = folder / "runs.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "wingman_actors", "run", str(folder / "reasoning.py"), "--input", "x",
                          "--store", str(store)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
                         check=False)
    assert "waiting at node 'calc'" in run.stderr, run.stderr
    run_id = run.stderr.split("run ", 1)[1].split()[0]
    process = subprocess.Popen([sys.executable, "-m", "wingman_actors", "ui", "--store", str(store), "--port", "0"],
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "/ui/" in line, line
        yield next(w for w in line.split() if w.startswith("http://")) + f"#/runs/{run_id}"
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def test_a_journalled_model_response_shows_its_reasoning_collapsed_under_thinking(page: Any,
                                                                                   store_viewer: str) -> None:
    page.goto(store_viewer)
    page.wait_for_selector('[data-node="calc"][data-status="suspended"]')
    page.click('[data-node="calc"]')
    response = page.locator("ol.steps li.response")
    thinking = response.locator("details.thinking")
    thinking.locator("summary").wait_for()

    assert thinking.get_attribute("open") is None
    assert "approve" in response.inner_text()
    thinking.locator("summary").click()
    assert thinking.get_by_text("The total needs a person's approval.").is_visible()
