"""Without ``--store`` the launcher journals into a store in the user's data directory
(here a private one: see the suite's conftest), so a failed run ends with the ``resume``
command that continues it; ``--no-store`` opts out; ``runs`` and ``resume`` use the same
store; a data directory that cannot be written costs a warning, not the run."""

from __future__ import annotations

import argparse
import io
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from wingman_actors import Formation
from wingman_actors._launcher.durable import Durable
from wingman_actors._launcher.progress import RunBoard, event_line, render_board
from wingman_actors._launcher.stores import DATA_DIR_ENV, default_store_path
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

FLAKY = """
    import os
    from wingman_actors import Formation

    def fetch(topic: str) -> str:
        with open(os.environ["FLAKY_LOG"], "a") as log:
            log.write("fetch\\n")
        return topic.upper()

    def publish(text: str) -> str:
        if not os.path.exists(os.environ["FLAKY_LOG"] + ".fixed"):
            raise ConnectionError("publisher unavailable")
        return f"published {text}"

    formation = Formation("flaky").add_function("fetch", fetch).add_function("publish", publish)
    formation.connect("fetch", "publish")
"""


@pytest.fixture
def flaky(formation_file: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A formation file whose second node fails until ``<log>.fixed`` exists; the first
    node appends a line to the log each time it runs."""
    monkeypatch.setenv("FLAKY_LOG", str(tmp_path / "calls.log"))
    return formation_file("flaky", FLAKY)


def resume_args(err: str) -> list[str]:
    """The arguments of the ``wingman-actors resume ...`` command printed on stderr."""
    line = next(line for line in err.splitlines() if "wingman-actors resume " in line)
    words = shlex.split(line.split(": ", 1)[1])
    assert words[:2] == ["wingman-actors", "resume"]
    return words[1:]


def test_the_default_store_is_in_the_data_dir_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "elsewhere"))
    assert default_store_path() == tmp_path / "elsewhere" / "runs.sqlite"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="platformdirs follows XDG_DATA_HOME on Linux")
def test_without_the_override_the_default_store_is_in_xdg_data_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(DATA_DIR_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "wingman-actors" / "runs.sqlite"


def test_a_failed_run_is_journalled_by_default_and_resumes_from_the_printed_command(
    flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(flaky), "-i", "cats"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    args = resume_args(captured.err)
    assert "--store" not in args  # the default store needs no flag
    assert default_store_path().is_file()
    (tmp_path / "calls.log.fixed").touch()
    assert main(args) == 0
    assert capsys.readouterr().out == "published CATS\n"
    assert (tmp_path / "calls.log").read_text() == "fetch\n"  # journalled: not run again
    assert main(["runs", "--json"]) == 0
    assert [(r["formation"], r["status"]) for r in json.loads(capsys.readouterr().out)] == [("flaky", "succeeded")]


def test_an_explicit_store_is_named_in_the_resume_command_quoted_for_the_shell(
    flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "my runs" / "runs.sqlite"
    store.parent.mkdir()
    assert main(["run", str(flaky), "-i", "dogs", "--store", str(store)]) == 1
    args = resume_args(capsys.readouterr().err)
    assert args[2:4] == ["--store", str(store)]
    (tmp_path / "calls.log.fixed").touch()
    assert main(args) == 0
    assert capsys.readouterr().out == "published DOGS\n"
    assert not default_store_path().exists()  # --store replaces the default store


def test_no_store_journals_nothing_and_prints_no_resume_command(
    flaky: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(flaky), "-i", "cats", "--no-store"]) == 1
    assert "wingman-actors resume" not in capsys.readouterr().err
    assert not default_store_path().exists()


def test_store_and_no_store_together_are_a_usage_error(flaky: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(flaky), "--store", "x.sqlite", "--no-store"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_run_with_a_store_that_is_not_a_run_store_is_a_usage_error_naming_it(
    flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    assert main(["run", str(flaky), "-i", "cats", "--store", str(text)]) == 2
    assert "not an SQLite database" in capsys.readouterr().err


def test_run_with_a_folder_as_store_is_a_usage_error_naming_a_file_in_it(
    flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(flaky), "-i", "cats", "--store", str(tmp_path)]) == 2
    assert str(tmp_path / "runs.sqlite") in capsys.readouterr().err


def test_an_unwritable_data_dir_warns_once_and_the_run_goes_on_without_a_store(
    flaky: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(DATA_DIR_ENV, str(blocker / "data"))  # no directory can be made under a file
    (tmp_path / "calls.log.fixed").touch()
    assert main(["run", str(flaky), "-i", "cats"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "published CATS\n"
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "cannot journal this run in" in warnings[0] and "--no-store" in warnings[0]


def test_a_failure_without_a_usable_store_prints_no_resume_command(
    flaky: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(DATA_DIR_ENV, str(blocker))
    assert main(["run", str(flaky), "-i", "cats"]) == 1
    err = capsys.readouterr().err
    assert "run failed at node 'publish'" in err and "wingman-actors resume" not in err


def test_runs_without_a_default_store_yet_lists_no_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["runs"]) == 0
    assert "no runs in" in capsys.readouterr().err


def test_resume_without_a_default_store_yet_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resume", "0660e0"]) == 2
    assert "no runs journalled yet" in capsys.readouterr().err


def test_stdout_carries_only_the_output_with_the_default_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "budget"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Budget for 2026-10-01 to 2026-10-30 (25 transactions)"
    assert main(["run", "budget", "--json"]) == 0
    assert "Spending by category" in json.loads(capsys.readouterr().out)["output"]
    assert main(["runs", "--json"]) == 0
    assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["succeeded", "succeeded"]


def test_the_resume_command_repeats_the_provider_flags_but_never_a_secret(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = formation_file("broken", """
        from wingman_actors import Formation

        def broken(text: str) -> str:
            raise RuntimeError("down")

        def build(depth: int = 1, provider=None):
            return Formation("broken").add_function("broken", broken)
    """)
    argv = ["run", str(path), "-i", "x", "--provider", "openai", "--model", "m1", "--option", "api_key=sk-secret",
            "--option", "temperature=0.2", "--param", "depth=2"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "sk-secret" not in err
    args = resume_args(err)
    assert args[2:] == ["--provider", "openai", "--model", "m1", "--option", "temperature=0.2", "--param", "depth=2"]
    assert "add your --option api_key again" in err


def test_resume_shows_journalled_nodes_as_done_on_the_live_view(tmp_path: Path) -> None:
    state = {"down": True}

    def publish(text: str) -> str:
        if state["down"]:
            raise ConnectionError("down")
        return text

    f = Formation("pub").add_function("fetch", str.upper).add_function("publish", publish).connect("fetch", "publish")
    store = tmp_path / "runs.sqlite"
    with pytest.raises(FormationRuntimeError) as info:
        f.run("x", store=store)
    run_id = info.value.run_id or ""
    state["down"] = False
    board = RunBoard([("fetch", "function"), ("publish", "function")])
    lines = []
    for event in f.resume_stream(run_id, store=store):
        board.apply(event)
        lines.append(event_line(event, event.timestamp))
    assert board.rows["fetch"].status == "done" and board.rows["fetch"].note == "from the journal"
    assert board.rows["publish"].status == "done" and board.rows["publish"].note == ""
    assert any(line and "fetch: done (from the journal" in line for line in lines)
    out = io.StringIO()
    Console(file=out, width=120, color_system=None, force_terminal=True).print(render_board(board, "formation pub"))
    fetch_row = next(line for line in out.getvalue().splitlines() if "fetch" in line)
    assert "done" in fetch_row and "from the journal" in fetch_row
    with RunStore(store) as opened:
        assert opened.get(run_id).status == "succeeded"


def test_a_run_on_ray_is_journalled_in_the_default_store_too() -> None:
    info = io.StringIO()
    args = argparse.Namespace(store=None, no_store=False, backend="ray", ray_address=None)
    durable = Durable.open(args, "budget", info)
    try:
        assert durable.store is not None and durable.choice is not None and durable.choice.default
        assert "not journalled" not in info.getvalue()
    finally:
        durable.close()
    assert default_store_path().exists()


def test_resume_keeps_the_default_store_on_any_backend(flaky: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(flaky), "-i", "cats"]) == 1
    run_id = resume_args(capsys.readouterr().err)[1]
    args = argparse.Namespace(store=None, no_store=False, backend="ray", ray_address=None, resume_id=run_id)
    durable = Durable.open(args, str(flaky), io.StringIO())
    try:
        assert durable.store is not None and durable.choice is not None and durable.choice.default
    finally:
        durable.close()
