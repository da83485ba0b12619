"""The launcher's entry points, usage errors and command hooks; the command-line cases run
as subprocesses, as a user types them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wingman_actors import __version__
from wingman_actors.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
_PROVIDER_ENV = ("ANTHROPIC_API_KEY", "WINGMAN_PROVIDER", "WINGMAN_MODEL", "WINGMAN_BASE_URL")


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``wingman-actors ARGS`` in a subprocess, with no provider configured."""
    env = {k: v for k, v in os.environ.items() if k not in _PROVIDER_ENV}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "wingman_actors", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=env, check=False)


def test_python_m_wingman_actors_shows_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "wingman_actors", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 0
    for command in ("run", "graph", "providers", "version"):
        assert command in proc.stdout


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == f"wingman-actors {__version__}"


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: wingman-actors" in capsys.readouterr().err


def test_an_unknown_flag_exits_2_without_raising(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--colour"]) == 2
    assert "unrecognized arguments: --colour" in capsys.readouterr().err


def test_a_non_positive_timeout_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--timeout", "0"]) == 2
    assert "must be > 0 seconds" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().out


def test_the_run_command_has_the_documented_flags() -> None:
    args = build_parser().parse_args(["run", "f.py", "--input", "x", "--provider", "p", "--model", "m",
                                      "--option", "a=1", "--option", "b=2", "--json", "--events", "--debug"])
    assert (args.input, args.provider, args.model, args.option) == ("x", "p", "m", ["a=1", "b=2"])
    assert args.json and args.events and args.debug


def test_version_flag_prints_the_version() -> None:
    proc = cli("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"wingman-actors {__version__}")


def test_help_imports_neither_the_runtime_nor_the_server() -> None:
    code = ("import sys; from wingman_actors.cli import main; main(['--help']); main(['version']); "
            "print(sorted(m for m in ('fastapi', 'anthropic', 'networkx', 'pykka', 'wingman_actors.formation') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"


def test_an_unknown_flag_of_run_shows_run_s_usage() -> None:
    proc = cli("run", "budget", "--bogus")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: wingman-actors run ")
    assert proc.stderr.splitlines()[-1] == "wingman-actors run: error: unrecognized arguments: --bogus"


def test_graph_to_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "nope" / "x.mmd"
    proc = cli("graph", "formations/budget.py", "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr == (f"wingman-actors: error: cannot write {out}: the folder {out.parent} does not exist; "
                           "create it first or pass another --output path\n")


def test_run_writes_only_the_report_on_stdout(tmp_path: Path) -> None:
    proc = cli("run", "budget", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Budget for 2026-10-01 to 2026-10-30 (25 transactions)\n")
    assert "provider:" not in proc.stdout and "done in" not in proc.stdout
    assert proc.stderr.startswith("provider: sample replies") and "done in" in proc.stderr


def test_the_readme_command_runs_from_another_directory(tmp_path: Path) -> None:
    proc = cli("run", "formations/budget.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Spending by category" in proc.stdout


def test_library_warnings_go_through_logging_and_follow_log_level(tmp_path: Path) -> None:
    flow = tmp_path / "noisy.py"
    flow.write_text(textwrap.dedent("""
        import logging, warnings
        from wingman_actors import Formation

        def noisy(text: str) -> str:
            warnings.warn("a library warning", UserWarning, stacklevel=1)
            logging.getLogger("somelib").warning("a library log record")
            return text

        formation = Formation("noisy").add_function("noisy", noisy)
    """))
    proc = cli("run", str(flow), "-i", "x")
    assert proc.returncode == 0, proc.stderr
    assert "wingman-actors: WARNING: somelib: a library log record" in proc.stderr
    assert "wingman-actors: WARNING: py.warnings: " in proc.stderr and "a library warning" in proc.stderr
    quiet = cli("--log-level", "error", "run", str(flow), "-i", "x")
    assert quiet.returncode == 0 and "library" not in quiet.stderr
    assert quiet.stdout == "x\n"


def test_a_provider_error_names_the_flags_that_fix_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "budget", "--provider", "ollama"]) == 2
    err = capsys.readouterr().err
    assert "--model NAME" in err and "WINGMAN_MODEL" in err and "new_provider" not in err



@pytest.mark.parametrize("command", [("run",), ("resume",), ("runs",), ("runs", "show"), ("runs", "history"),
                                     ("runs", "cancel"), ("fork",), ("ui",)])
def test_every_store_option_says_it_takes_a_postgresql_url(command: tuple[str, ...],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines

    option = help_text[help_text.rindex("--store PATH "):]
    assert "postgresql:// URL" in option[:200], option[:200]


@pytest.mark.parametrize("command", [("runs",), ("runs", "show", "r1"), ("runs", "history", "r1"), ("resume", "r1"),
                                     ("runs", "cancel", "r1"), ("fork", "r1", "--at", "a", "--output", "1"), ("run", "budget", "-i", "x")])
def test_an_unreachable_postgresql_store_is_one_line_without_its_password(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("psycopg")
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert main([*command, "--store", f"postgresql://me:s3cret@127.0.0.1:{port}/db"]) == 2
    err = capsys.readouterr().err
    error = [line for line in err.splitlines() if "error" in line]
    assert len(error) == 1 and "cannot connect" in error[0] and "\t" not in err, err
    assert "s3cret" not in err and "me:***@" in err


def test_a_formation_declared_wrong_at_import_says_to_fix_its_declaration(tmp_path: Path) -> None:
    # as when build() returns an invalid formation: the FormationSetupError itself, with the hint
    path = tmp_path / "wrong.py"
    path.write_text("from wingman_actors import Formation\n\nFORMATION = Formation('f').add_function('a', 42)\n")
    proc = cli("graph", str(path))
    assert proc.returncode == 2
    assert "fn must be callable, got int" in proc.stderr and "fix the formation's declaration" in proc.stderr, proc.stderr
