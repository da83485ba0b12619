"""``wingman-actors ui --store PATH`` in a real browser: the viewer over a launcher's run store
lists and shows its runs, starts, answers, cancels and resumes runs in its own process (live),
cancels a run of another process through the store, and draws nested formations as clusters."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.store_files import open_gate, write_files

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wingman_actors", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60, check=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-store")


@pytest.fixture(scope="module")
def store(folder: Path) -> Path:
    """Runs of the launcher (one succeeded, one suspended, both recording notes.py) and one
    started from Python (suspended, recording no file)."""
    files = write_files(folder)
    path = folder / "runs.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "UI_GATES": str(folder / "gates")}
    done = _cli("run", str(files["notes"]), "--input", "  hello  ", "--store", str(path), env=env)
    assert done.returncode == 0, done.stderr
    asked = _cli("run", str(files["notes"]), "--param", "asking=true", "--input", "draft", "--store",
                 str(path), env=env)
    assert "resume" in asked.stderr, asked.stderr
    from wingman_actors import Formation, interrupt

    def ask(text: str) -> str:
        return f"{text}: {interrupt({'question': 'go?'})}"

    python = Formation("from-python").add_function("ask", ask).run("x", store=path)
    assert python.status == "suspended"
    return path


@pytest.fixture(scope="module")
def viewer(store: Path, folder: Path) -> Iterator[str]:
    command = [sys.executable, "-m", "wingman_actors", "ui", "--store", str(store), "--port", "0",
               "--param", "asking=true", "--formation", str(folder / "gated.py"), "--formation", str(folder / "nested.py")]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "UI_GATES": str(folder / "gates")})
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "/ui/" in line, line
        yield next(word for word in line.split() if word.startswith("http://"))
    finally:
        for name in ("live", "cut", "deep"):  # abandoned or waiting attempts end
            open_gate(folder, name)
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def _run_ids(store: Path) -> dict[str, str]:
    from wingman_actors.store import RunStore

    with RunStore(store, recover=False) as runs:
        return {f"{r.formation}:{r.status}": r.id for r in runs.runs()}


def _status(store: Path, run_id: str, expected: str) -> str:
    """The run's status in the store once it is ``expected``, or after 10 s whatever it is:
    the page shows an event as soon as it happens, the store's write commits just after."""
    from wingman_actors.store import RunStore

    deadline = time.monotonic() + 10
    while True:
        with RunStore(store, recover=False) as runs:
            status = runs.get(run_id).status
        if status == expected or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def _start(page: Any, viewer: str, formation: str, text: str) -> str:
    page.goto(f"{viewer}#/formations/{formation}")
    page.fill('textarea[name="input"]', text)
    page.click('[data-action="start"]')
    page.wait_for_url("**/ui/#/runs/*")
    return str(page.url.rsplit("/", 1)[1])


def test_ui_store_lists_the_runs_of_the_launcher(page: Any, viewer: str, store: Path) -> None:
    ids = _run_ids(store)
    page.goto(f"{viewer}#/runs")
    for key in ("notes:succeeded", "notes:suspended", "from-python:suspended"):
        page.wait_for_selector(f'[data-run-id="{ids[key]}"]')


def test_ui_store_shows_a_run_s_nodes_and_outputs(page: Any, viewer: str, store: Path) -> None:
    run_id = _run_ids(store)["notes:succeeded"]
    page.goto(f"{viewer}#/runs/{run_id}")
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    page.click('[data-node="shout"]')
    page.locator(".details").get_by_text("HELLO", exact=True).wait_for()


def test_ui_store_offers_the_resume_command_for_a_run_started_from_python(page: Any, viewer: str,
                                                                           store: Path) -> None:
    run_id = _run_ids(store)["from-python:suspended"]
    page.goto(f"{viewer}#/runs/{run_id}")
    page.wait_for_selector('[data-node="ask"][data-status="suspended"]')
    page.get_by_text(f"wingman-actors resume {run_id} --store").wait_for()
    assert "--formation FILE" in page.locator(".actions").inner_text()
    assert page.locator('[data-action="answer"], [data-action="resume"]').count() == 0


def test_an_interrupt_answered_from_ui_store_resumes_the_run_in_the_viewer(page: Any, viewer: str,
                                                                           store: Path) -> None:
    run_id = _run_ids(store)["notes:suspended"]
    page.goto(f"{viewer}#/runs/{run_id}")
    page.wait_for_selector('[data-node="ask"][data-status="suspended"]')
    page.fill('textarea[name="answer"]', "yes")
    page.click('[data-action="answer"]')
    page.wait_for_selector('[data-node="ask"][data-status="succeeded"]')
    page.locator(".run-head").get_by_text("DRAFT: yes").wait_for()
    assert _status(store, run_id, "succeeded") == "succeeded"


def test_a_run_started_from_ui_store_goes_from_running_to_succeeded_live(page: Any, viewer: str, store: Path,
                                                                         folder: Path) -> None:
    run_id = _start(page, viewer, "gated", "live")
    page.evaluate("window.sameDocument = true")
    page.wait_for_selector('[data-node="wait"][data-status="running"]')
    assert page.get_attribute('[data-node="shout"]', "data-status") == "pending"
    open_gate(folder, "live")
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    assert page.evaluate("window.sameDocument") is True  # updated from the run's events, not reloaded
    page.locator(".run-head").get_by_text("LIVE").wait_for()
    assert _status(store, run_id, "succeeded") == "succeeded"


def test_cancel_from_ui_store_cancels_a_run_of_the_viewer_and_resume_continues_it(
        page: Any, viewer: str, store: Path, folder: Path) -> None:
    run_id = _start(page, viewer, "gated", "cut")
    page.wait_for_selector('[data-node="wait"][data-status="running"]')
    page.click('[data-action="cancel"]')
    page.wait_for_selector('[data-node="wait"][data-status="cancelled"]')
    assert _status(store, run_id, "cancelled") == "cancelled"
    open_gate(folder, "cut")
    page.click('[data-action="resume"]')
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    assert _status(store, run_id, "succeeded") == "succeeded"


def test_cancel_from_ui_store_cancels_a_run_a_launcher_in_another_process_runs(page: Any, viewer: str, store: Path,
                                                                              folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "UI_GATES": str(folder / "gates")}
    launcher = subprocess.Popen([sys.executable, "-m", "wingman_actors", "run", str(folder / "gated.py"), "--input",
                                 "elsewhere", "--store", str(store)], cwd=ROOT, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while (run_id := _run_ids(store).get("gated:running")) is None:
            assert launcher.poll() is None and time.monotonic() < deadline, "the launcher's run never started"
            time.sleep(0.05)
        page.goto(f"{viewer}#/runs/{run_id}")
        page.wait_for_selector('[data-node="clean"][data-status="succeeded"]')
        page.wait_for_selector('[data-node="wait"][data-status="running"]')  # at work, as its journal tells
        cancel = page.locator('[data-action="cancel"]')
        assert cancel.is_enabled()
        cancel.click()
        page.wait_for_selector('[data-node="wait"][data-status="cancelled"]')
        page.locator(".run-head").get_by_text("cancelled").first.wait_for()
        assert _status(store, run_id, "cancelled") == "cancelled"
        _, err = launcher.communicate(timeout=30)
        assert launcher.returncode == 1 and "was cancelled" in err, err
    finally:
        open_gate(folder, "elsewhere")  # the abandoned attempt ends
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()


def test_ui_store_says_a_cancel_was_requested_until_the_run_s_process_acts(page: Any, viewer: str, store: Path,
                                                                         folder: Path) -> None:
    import networkx as nx

    from wingman_actors.store import FormationShape, RunStore

    graph = nx.DiGraph([("clean", "shout")])
    nx.set_node_attributes(graph, "function", "kind")
    with RunStore(store, recover=False) as elsewhere:  # this test's process: alive, running no formation
        run_id = elsewhere.begin_run("notes", FormationShape.of(graph), "x", source=str(folder / "notes.py"))
        page.goto(f"{viewer}#/runs/{run_id}")
        page.click('[data-action="cancel"]')
        note = page.locator("[data-cancel-requested]")
        note.wait_for()
        assert "waiting for the process that runs it" in note.inner_text()
        elsewhere.set_status(run_id, "failed", error="ended here", wait=True)


def test_a_nested_formation_is_drawn_as_a_cluster_whose_inner_nodes_go_live(page: Any, viewer: str,
                                                                            folder: Path) -> None:
    page.goto(f"{viewer}#/formations/nested")
    page.wait_for_selector('[data-node="sub"] >> nth=0')
    assert sorted(page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.node)")) == [
        "clean", "last", "sub", "sub/shout", "sub/wait"]
    _start(page, viewer, "nested", "deep")
    page.wait_for_selector('[data-node="sub/wait"][data-status="running"]')
    assert page.get_attribute('[data-node="sub"]', "data-status") == "running"
    assert page.get_attribute('[data-node="sub/shout"]', "data-status") == "pending"
    open_gate(folder, "deep")
    page.wait_for_selector('[data-node="sub/shout"][data-status="succeeded"]')
    page.wait_for_selector('[data-node="last"][data-status="succeeded"]')


def test_ui_store_behind_a_token_asks_for_it_and_sends_it_with_its_actions(page: Any, store: Path,
                                                                           folder: Path) -> None:
    token = "ui-store-token-5678"
    command = [sys.executable, "-m", "wingman_actors", "ui", "--store", str(store), "--port", "0", "--token", token]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "UI_GATES": str(folder / "gates")})
    try:
        assert process.stderr is not None
        url = next(word for word in process.stderr.readline().split() if word.startswith("http://"))
        posts: list[dict[str, str]] = []
        page.on("request", lambda r: posts.append(r.headers) if r.method == "POST" else None)
        page.goto(f"{url}#/formations/notes")
        page.fill('input[name="token"]', token)
        page.click('#token-form button[type="submit"]')
        run_id = _start(page, url, "notes", " guarded ")
        page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
        assert _status(store, run_id, "succeeded") == "succeeded"
        assert posts and all(h.get("authorization") == f"Bearer {token}" and h.get("content-type") == "application/json"
                             for h in posts), posts
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def test_a_run_stopped_at_a_breakpoint_is_resumed_from_ui_store_without_an_answer(page: Any, viewer: str,
                                                                                 store: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    notes = store.parent / "notes.py"
    stopped = _cli("run", str(notes), "--param", "asking=true", "--input", "paused", "--break-before", "shout",
                   "--store", str(store), env=env)
    assert "continue it with" in stopped.stderr, stopped.stderr
    run_id = stopped.stderr.split("wingman-actors resume ")[1].split()[0]
    page.goto(f"{viewer}#/runs/{run_id}")
    page.wait_for_selector('[data-node="shout"][data-status="suspended"]')
    assert page.locator('textarea[name="answer"]').count() == 0
    page.click('[data-action="resume"]')
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
