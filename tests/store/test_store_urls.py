"""Store locations that cannot work are refused with a clear error that never shows the
URL's password: a malformed postgresql:// URL (psycopg's own message quotes the URL
whole), a URL of a scheme no store speaks, and the launcher's ``--store`` of one."""

from __future__ import annotations

from pathlib import Path

import pytest

from wingman_actors.cli import main
from wingman_actors.store import RunStore, StoreOpenError


@pytest.mark.parametrize("url", ["postgresql://someone:hunter2@[::1/db",
                                 "postgresql://someone:hunter2@127.0.0.1:notaport/db",
                                 "postgres://someone:hunter2@127.0.0.1:5432/db?sslmode=nonsense"])
def test_a_malformed_postgresql_url_is_refused_without_showing_its_password(url: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreOpenError, match=r"cannot connect to postgres(ql)?://someone:\*\*\*@") as info:
        RunStore(url)
    assert "hunter2" not in str(info.value)
    assert "hunter2" not in repr(info.value.args) and "hunter2" not in str(info.value.path)


@pytest.mark.parametrize("url", ["mysql://someone:hunter2@db.example/runs", "sqlite:///tmp/runs.sqlite",
                                 "postgresq://someone:hunter2@127.0.0.1/db"])
def test_a_url_of_a_scheme_no_store_speaks_is_refused_naming_the_schemes_that_work(url: str) -> None:
    with pytest.raises(StoreOpenError, match=r"RunStore takes a SQLite file's path or a postgresql:// URL, got a "
                                             r"[a-z]+:// URL") as info:
        RunStore(url)
    assert "hunter2" not in str(info.value)


def test_the_launchers_store_of_an_unknown_scheme_is_a_usage_error_without_its_password(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["runs", "history", "r1"], ["fork", "r1", "--at", "a", "--output", "1"], ["resume", "r1"]):
        assert main([*command, "--store", "mysql://someone:hunter2@db.example/runs"]) == 2
        err = capsys.readouterr().err
        assert "--store takes a SQLite file's path or a postgresql:// URL" in err, err
        assert "mysql://someone:***@db.example/runs" in err
        assert "hunter2" not in err


def test_a_postgresql_server_that_went_down_is_named_by_the_errors_without_the_password() -> None:
    pytest.importorskip("psycopg")
    from wingman_actors import Formation
    from wingman_actors._bench.pg_server import PostgresServer, find_bindir
    from wingman_actors.store import StoreError

    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries")
    server = PostgresServer(bindir).start()  # (a server of its own: this test stops it)
    url = server.url().replace("://wingman@", "://wingman:hunter2@")
    shown = url.replace(":hunter2@", ":***@")
    f = Formation("down").add_function("a", lambda x: x + 1)
    store = RunStore(url)
    try:
        run_id = f.run(1, store=store).run_id
    finally:
        server.stop()
    try:
        for call in (lambda: f.run(1, store=store), lambda: store.history(run_id), lambda: store.runs()):
            with pytest.raises(StoreError) as info:
                call()
            assert f"run store {shown}" in str(info.value) or f"connect to {shown}" in str(info.value), info.value
            assert "hunter2" not in str(info.value)
    finally:
        with pytest.raises(StoreError) as closing:
            store.close()
        assert shown in str(closing.value) and "hunter2" not in str(closing.value)


@pytest.mark.parametrize("url", [" postgresql://someone:hunter2@127.0.0.1/db", "\tpostgres:someone:hunter2@127.0.0.1/db"])
def test_a_postgresql_url_with_white_space_around_it_is_refused_saying_so_without_its_password(url: str) -> None:
    with pytest.raises(StoreOpenError, match=r"has white space around it") as info:
        RunStore(url)
    assert "hunter2" not in str(info.value)
