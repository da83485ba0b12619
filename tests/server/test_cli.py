"""The ``serve`` subcommand's arguments and the configuration they build."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from wingman_actors.server.cli import add_serve_parser, build_config
from wingman_actors.server.config import DEFAULT_PORT, ServerConfig


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
    args = parse("--db", str(tmp_path / "x.db"), "--token", "t", "--work-root", str(tmp_path), "--no-bash",
                 "--functions", "a.b", "--functions", "c", "--request-timeout", "5")
    config = build_config(args)
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
