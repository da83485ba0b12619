"""The launcher never prints a PostgreSQL store's password: not in its errors, and not in
the commands it suggests (``list its runs with: wingman-actors runs --store ...``), which
show the URL as the errors do (``postgresql://user:***@host/db``)."""

from __future__ import annotations

import re

import pytest

from wingman_actors.cli import main


@pytest.mark.parametrize("command", [["runs", "history", "nope"], ["resume", "nope"],
                                     ["fork", "nope", "--at", "a", "--output", "1"]])
def test_the_commands_a_launcher_error_suggests_hide_the_stores_password(
        postgres_url: str, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    url = postgres_url.replace("://wingman@", "://wingman:hunter2@")
    assert url != postgres_url
    assert main([*command, "--store", url]) == 2
    err = capsys.readouterr().err
    assert "no run 'nope'" in err
    assert re.search(r"list its runs with: wingman-actors runs --store '?postgresql://wingman:\*\*\*@", err), err
    assert "hunter2" not in err
