"""``wingman-actors runs --store PATH``: the store's runs as a table or JSON."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.support.store_fixtures import APPROVAL_FORMATION
from wingman_actors import Formation
from wingman_actors.cli import main


def test_runs_lists_the_store_runs_as_a_table_and_as_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = Formation("listed").add_function("a", lambda x: x)
    run_id = f.run(1, store=path).run_id
    assert main(["runs", "--store", str(path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ID", "FORMATION", "STATUS", "CREATED", "UPDATED"]
    assert table[1].split()[:3] == [run_id, "listed", "succeeded"]
    assert main(["runs", "--store", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"]) for r in rows] == [(run_id, "succeeded")]


def test_runs_with_a_status_no_run_has_says_no_run_has_that_status(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Formation("listed").add_function("a", lambda x: x).run(1, store=path)
    assert main(["runs", "--store", str(path), "--status", "failed"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"no failed runs in {path}\n"


def test_runs_with_a_missing_store_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--store", str(tmp_path / "nope.sqlite")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_runs_with_a_file_that_is_not_a_run_store_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    assert main(["runs", "--store", str(text)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(text) in err and "not an SQLite database" in err


def test_runs_with_a_folder_as_store_says_it_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "no such file" not in err


def test_runs_show_with_a_folder_as_store_says_it_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "show", "some-run", "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "no such file" not in err


def test_run_with_a_store_suspends_and_resume_answers_from_the_command_line(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "approval.py"
    module.write_text(APPROVAL_FORMATION)
    assert main(["run", str(module), "--input", "cats", "--store", str(path)]) == 0
    captured = capsys.readouterr()
    assert "is waiting at node 'approve'" in captured.err
    run_id = captured.err.split("wingman-actors resume ")[1].split()[0]
    assert main(["resume", run_id, "--store", str(path), "--answer", '"yes"']) == 0
    assert capsys.readouterr().out.strip() == "draft about cats: yes"
    assert main(["runs", "--store", str(path), "--json"]) == 0
    assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["succeeded"]


def test_resume_of_an_unknown_run_is_a_usage_error(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Formation("x").add_function("a", lambda x: x).run(1, store=path)
    assert main(["resume", "no-such-run", "--store", str(path)]) == 2
    assert "runs --store" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["resume", "no-such-run"], ["runs", "show", "no-such-run"], ["runs", "history", "no-such-run"],
    ["runs", "cancel", "no-such-run"], ["fork", "no-such-run", "--at", "a", "--output", "1"],
])
def test_an_unknown_run_is_named_once_with_the_command_that_lists_the_runs(
    command: list[str], path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Formation("x").add_function("a", lambda x: x).run(1, store=path)
    assert main([*command, "--store", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"wingman-actors: error: no run 'no-such-run' in the run store {path}; "
                   f"list its runs with: wingman-actors runs --store {path}")


def test_resume_with_an_answer_of_a_run_that_succeeded_is_one_line_saying_so(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "approval.py"
    module.write_text(APPROVAL_FORMATION)
    assert main(["run", str(module), "--input", "cats", "--store", str(path)]) == 0
    run_id = capsys.readouterr().err.split("wingman-actors resume ")[1].split()[0]
    assert main(["resume", run_id, "--store", str(path), "--answer", '"yes"']) == 0
    capsys.readouterr()
    assert main(["resume", run_id, "--store", str(path), "--answer", '"yes"']) == 1
    err = capsys.readouterr().err
    assert "already succeeded" in err and "Traceback" not in err


def test_resume_of_a_run_that_succeeded_names_the_command_that_shows_it(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = Formation("done").add_function("a", lambda x: x).run(1, store=path).run_id
    assert main(["resume", run_id, "--store", str(path), "--formation", "budget"]) == 1
    err = capsys.readouterr().err
    assert "already succeeded" in err and f"wingman-actors runs show {run_id} --store {path}" in err
    assert "store.load" not in err


def test_resume_with_an_answer_of_a_run_without_a_pending_interrupt_is_a_usage_error(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "failing.py"
    module.write_text("from wingman_actors import Formation\n\n"
                      "def boom(x):\n    raise ValueError('down')\n\n"
                      "formation = Formation('failing').add_function('boom', boom)\n")
    assert main(["run", str(module), "--input", "x", "--store", str(path)]) == 1
    run_id = capsys.readouterr().err.split("wingman-actors resume ")[1].split()[0]
    assert main(["resume", run_id, "--store", str(path), "--answer", '"yes"']) == 2
    err = capsys.readouterr().err
    assert "no pending interrupt" in err and "without --answer" in err and "Traceback" not in err


def test_resume_of_a_run_whose_formation_file_is_gone_names_it_and_the_formation_flag(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "approval.py"
    module.write_text(APPROVAL_FORMATION)
    assert main(["run", str(module), "--input", "cats", "--store", str(path)]) == 0
    run_id = capsys.readouterr().err.split("wingman-actors resume ")[1].split()[0]
    module.unlink()
    assert main(["resume", run_id, "--store", str(path), "--answer", '"yes"']) == 2
    err = capsys.readouterr().err
    assert f"run {run_id} was started from {module}, which is not there any more" in err
    assert f"wingman-actors resume {run_id} --store {path} --formation FILE" in err and "Traceback" not in err


def test_resume_of_a_run_still_running_names_the_command_that_cancels_it(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "held.py"  # the same shape as the formation running the run
    module.write_text("from wingman_actors import Formation\n\n"
                      "formation = Formation('held').add_function('hold', lambda x: x)\n")
    release = threading.Event()

    def hold(x: int) -> int:
        release.wait(10)
        return x

    with Formation("held").add_function("hold", hold).start(store=path) as running:
        future = running.submit(1)
        try:
            assert main(["resume", future.run_id, "--store", str(path), "--formation", str(module)]) == 1
        finally:
            release.set()
        future.result(10)
    err = capsys.readouterr().err
    assert "is running" in err and f"wingman-actors runs cancel {future.run_id} --store {path}" in err
