"""The ``serve`` subcommand's arguments and the configuration they build; its command-line
mistakes run as subprocesses and end in one line and exit code 2."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from wingman_actors.server._cli import ServeError, add_serve_parser, build_config, functions_modules
from wingman_actors.server._config import DEFAULT_PORT, ServerConfig


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="wingman-actors")
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_defaults_bind_loopback_on_the_default_port() -> None:
    args = parse()
    assert (args.host, args.port) == ("127.0.0.1", DEFAULT_PORT)
    assert args.db.endswith("wingman.db") and args.functions == [] and not args.no_bash


def test_flags_build_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WINGMAN_TOKEN", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    args = parse("--db", str(tmp_path / "x.db"), "--token", "t", "--work-root", str(tmp_path), "--no-bash",
                 "--functions", "a.b", "--functions", "c", "--request-timeout", "5", "--suspend-ttl", "3600")
    config = build_config(args)
    assert config.suspend_ttl == 3600
    assert build_config(parse()).suspend_ttl == 7 * 24 * 3600
    assert config.database == tmp_path / "x.db"
    assert (config.token, config.root, config.allow_bash) == ("t", tmp_path.resolve(), False)
    assert config.functions == ("a.b", "c") and config.request_timeout == 5


def test_token_comes_from_the_environment_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WINGMAN_TOKEN", "from-env")
    assert build_config(parse()).token == "from-env"


def test_default_database_is_under_the_home_folder() -> None:
    assert ServerConfig().database == Path.home() / ".local/share/wingman/wingman.db"


def test_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="token"):
        ServerConfig(token=" ")


ROOT = Path(__file__).resolve().parents[2]


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``wingman-actors serve --db ... ARGS`` in tmp_path; these cases exit before listening."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("WINGMAN_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "wingman_actors", "serve", "--db", str(tmp_path / "w.db"), *args],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env, check=False)


def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    proc = serve(tmp_path, "--port", "99999")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("usage: wingman-actors serve ")
    assert proc.stderr.splitlines()[-1] == ("wingman-actors serve: error: argument --port: 99999 is out of range; "
                                            "pass a port from 0 to 65535 (0: any free port)")


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = serve(tmp_path, "--port", str(port))
    assert proc.returncode == 2
    assert proc.stderr == (f"wingman-actors serve: error: cannot listen on 127.0.0.1:{port}: Address already in use; "
                           "pass another --port, or stop what listens there\n")


def test_a_missing_functions_file_is_one_line(tmp_path: Path) -> None:
    proc = serve(tmp_path, "--functions", "./mod.py")
    assert proc.returncode == 2
    assert proc.stderr == ("wingman-actors serve: error: --functions ./mod.py: no such file; pass a .py file "
                           "or a module name such as my_pkg.functions\n")


def test_a_functions_module_that_raises_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("raise RuntimeError('boom')\n")
    proc = serve(tmp_path, "--functions", "./mod.py")
    assert proc.returncode == 2
    assert proc.stderr == ("wingman-actors serve: error: --functions ./mod.py: importing it failed: "
                           "RuntimeError: boom; fix the module\n")


def test_an_unknown_functions_module_is_one_line(tmp_path: Path) -> None:
    proc = serve(tmp_path, "--functions", "nowhere_to_be_found")
    assert proc.returncode == 2
    assert proc.stderr.startswith("wingman-actors serve: error: --functions nowhere_to_be_found: no module named")
    assert len(proc.stderr.splitlines()) == 1


def test_functions_name_a_file_or_a_module_beside_you(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "fns.py").write_text("")
    (tmp_path / "mod.py").write_text("")
    assert functions_modules(["./mod.py", "mod", "pkg/fns.py"], cwd=tmp_path) == ("mod", "mod", "pkg.fns")
    assert str(tmp_path) in sys.path


def test_functions_that_are_neither_file_nor_module_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ServeError, match=r"not a module name nor a \.py file"):
        functions_modules(["my module"], cwd=tmp_path)


def test_allowed_host_is_repeatable_and_reaches_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WINGMAN_TOKEN", raising=False)
    args = parse("--allowed-host", "wingman.lan", "--allowed-host", "box.local")
    assert args.allowed_host == ["wingman.lan", "box.local"]
    assert build_config(args).allowed_hosts == ("wingman.lan", "box.local")


def test_a_server_bound_to_a_name_allows_that_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WINGMAN_TOKEN", raising=False)
    assert build_config(parse("--host", "wingman.lan")).allowed_hosts == ("wingman.lan",)
    assert build_config(parse("--host", "0.0.0.0")).allowed_hosts == ()


def test_an_unreachable_run_store_is_one_line_without_its_password(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    proc = serve(tmp_path, "--run-store", f"postgresql://me:s3cret@127.0.0.1:{port}/db")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"wingman-actors serve: error: RunStore cannot connect to "
                                  f"postgresql://me:***@127.0.0.1:{port}/db"), proc.stderr
    assert "s3cret" not in proc.stderr


def test_a_run_store_that_is_not_a_url_is_one_line(tmp_path: Path) -> None:
    proc = serve(tmp_path, "--run-store", "runs.sqlite")
    assert proc.returncode == 2
    assert proc.stderr == ("wingman-actors serve: error: run_store must be a postgresql:// URL, got 'runs.sqlite'; "
                           "leave it out to journal runs in the database file\n")
