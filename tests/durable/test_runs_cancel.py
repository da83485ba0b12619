"""``wingman-actors runs cancel RUN_ID --store PATH``: a run that a launcher in another process
runs is cancelled through the store (the launcher reports it, and how to resume it); a
suspended run is marked cancelled; an unknown or finished run is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.store_fixtures import APPROVAL_FORMATION
from wingman_actors.cli import main
from wingman_actors.store import RunStore

ROOT = Path(__file__).parents[2]

SLOW = """
import os, time
from wingman_actors import Formation

def wait(x: str) -> str:
    deadline = time.monotonic() + 20
    while not os.path.exists(os.environ["GATE"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return x + "!"

formation = Formation("slow").add_function("first", str.upper).add_function("wait", wait).connect("first", "wait")
"""


def _running_run(path: Path, child: subprocess.Popen[str]) -> str:
    """The id of the run the launcher ``child`` journals, once it reached its ``wait`` node."""
    deadline = time.monotonic() + 20
    while True:
        if path.exists():
            with RunStore(path, recover=False) as store:
                runs = store.runs("running")
                if runs and "first" in store.load(runs[0].id).visits:
                    return runs[0].id
        assert child.poll() is None, child.communicate()[1]
        assert time.monotonic() < deadline, "the launcher's run never reached its wait node"
        time.sleep(0.05)


def test_runs_cancel_cancels_a_run_a_launcher_in_another_process_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    path = tmp_path / "runs.sqlite"
    gate = tmp_path / "gate"
    child = subprocess.Popen([sys.executable, "-m", "wingman_actors", "run", str(tmp_path / "slow.py"), "--input", "x",
                              "--store", str(path)], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT), "GATE": str(gate)})
    try:
        run_id = _running_run(path, child)
        assert main(["runs", "cancel", run_id, "--store", str(path)]) == 0
        assert capsys.readouterr().out == f"run {run_id} cancelled\n"
        _, err = child.communicate(timeout=30)
        assert child.returncode == 1, err
        assert f"run {run_id} was cancelled" in err and f"resume {run_id}" in err, err
    finally:
        gate.touch()  # the abandoned attempt ends
        if child.poll() is None:
            child.kill()
            child.communicate()
    with RunStore(path) as store:
        assert store.get(run_id).status == "cancelled"


def test_runs_cancel_marks_a_suspended_run_cancelled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors._launcher.loading import load_module

    (tmp_path / "approve.py").write_text(APPROVAL_FORMATION)
    path = tmp_path / "runs.sqlite"
    formation, _ = load_module(str(tmp_path / "approve.py")).build(None, {})
    run_id = formation.run("topic", store=path).run_id
    assert main(["runs", "cancel", run_id, "--store", str(path)]) == 0
    assert "cancelled (it was suspended" in capsys.readouterr().out
    with RunStore(path) as store:
        assert store.get(run_id).status == "cancelled"


def test_runs_cancel_of_a_finished_run_exits_1_saying_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors import Formation

    path = tmp_path / "runs.sqlite"
    run_id = Formation("one").add_function("up", str.upper).run("x", store=path).run_id
    assert main(["runs", "cancel", run_id, "--store", str(path)]) == 1
    assert f"run {run_id} has already finished (succeeded)" in capsys.readouterr().err


def test_runs_cancel_of_an_unknown_run_is_a_usage_error_naming_the_listing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors import Formation

    path = tmp_path / "runs.sqlite"
    Formation("one").add_function("up", str.upper).run("x", store=path)
    assert main(["runs", "cancel", "nope", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no run 'nope'" in err and f"wingman-actors runs --store {path}" in err, err
