"""Behaviours of LangGraph's checkpoint savers' tests (langchain-ai/langgraph:
``libs/checkpoint*/tests``, ``libs/checkpoint-conformance/.../spec``) seen through journalled
runs: what a graph checkpoints is what our formations journal, read back with ``RunStore``,
resumed, forked and listed by the ``wingman-actors runs`` commands.

Deliberately different (docs/durable-runs.md documents ours):
- ``copy_thread`` copies a thread's checkpoints under a new thread id; ``fork`` at a node
  starts a new run reusing the journal before that visit (with the visit's output given
  or its input replaced) and runs the rest, leaving the original alone.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore, StoreClosedError

NAME = "file-\udcff.txt"  # a file name os.listdir gives for bytes that are not UTF-8


def _listing(_: str) -> str:
    return NAME


def test_a_node_output_holding_a_surrogate_is_journalled_and_a_resume_feeds_it_on(location: str) -> None:
    """From checkpoint tests/test_jsonplus.py (strings round-trip through the serializer):
    before the fix, the output's journal write failed while the run went on, and the store
    said the run had succeeded with its visits missing."""
    calls, down = Counter(), threading.Event()
    down.set()

    def publish(name: str) -> str:
        calls.hit("publish")
        if down.is_set():
            raise ConnectionError("down")
        return f"published {name}"

    f = Formation("files").add_function("list", _listing).add_function("publish", publish).connect("list", "publish")
    with pytest.raises(FormationRuntimeError) as failed:
        f.run("/data", store=location)
    with RunStore(location) as store:
        assert store.load(failed.value.run_id).visits == {"list": {1: NAME}}
    down.clear()
    result = f.resume(failed.value.run_id, store=location)
    assert (result.status, result.output, calls.count("publish")) == ("succeeded", f"published {NAME}", 2)
    with RunStore(location) as store:
        assert [(v.node, v.status, v.output if v.status == "succeeded" else v.error)
                for v in store.history(result.run_id)] == [
            ("list", "succeeded", NAME), ("publish", "failed", "ConnectionError: down"),
            ("publish", "succeeded", f"published {NAME}")]


def test_runs_show_and_history_tables_print_a_surrogate_as_an_escape(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """From checkpoint tests/test_jsonplus.py, through the CLI: before the fix, both tables
    died with ``UnicodeEncodeError`` writing the value to a UTF-8 stdout."""
    run_id = Formation("files").add_function("list", _listing).run("/data", store=path).run_id
    assert main(["runs", "show", run_id, "--store", str(path)]) == 0
    assert "file-\\udcff.txt" in capsys.readouterr().out
    assert main(["runs", "history", run_id, "--store", str(path)]) == 0
    assert "file-\\udcff.txt" in capsys.readouterr().out
    assert main(["runs", "history", run_id, "--store", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["output"] == NAME


def test_unicode_formation_and_node_names_go_through_the_journal_and_the_cli(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """From checkpoint-sqlite tests/test_namespace_validation.py (names with any characters)."""
    f = Formation("résumé ✓").add_function("nœud", lambda x: f"{x} 😀").add_function("终", str.upper).connect("nœud", "终")
    run_id = f.run("ünï", store=path).run_id
    assert main(["runs", "--store", str(path)]) == 0
    assert "résumé ✓" in capsys.readouterr().out
    assert main(["runs", "history", run_id, "--store", str(path), "--json"]) == 0
    assert [(v["node"], v["output"]) for v in json.loads(capsys.readouterr().out)] == [("nœud", "ünï 😀"), ("终", "ÜNÏ 😀")]


def test_runs_filtered_by_status_in_json_lists_only_the_matching_runs(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """From checkpoint-sqlite tests/test_sqlite.py::test_search (a filter matching one of several)."""
    f = Formation("maybe").add_function("check", lambda x: x if x > 0 else 1 // x)
    ok = [f.run(n, store=path).run_id for n in (1, 2)]
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(0, store=path)
    assert main(["runs", "--store", str(path), "--status", "failed", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [failed.value.run_id]
    assert main(["runs", "--store", str(path), "--status", "succeeded", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ok


def test_items_that_finished_are_kept_when_a_sibling_fails_and_only_it_runs_again(location: str) -> None:
    """From conformance spec/test_put_writes.py (pending writes of finished tasks survive the
    step's failure, so a resume runs only the task that failed)."""
    calls, broken = Counter(), threading.Event()
    broken.set()

    def fetch(n: int) -> bytes:
        calls.hit(n)
        if n == 2 and broken.is_set():
            raise TimeoutError("item 2 timed out")
        return bytes([n]) * 3

    f = Formation("fetch").add_map("fetch", fetch)
    with pytest.raises(FormationRuntimeError) as failed:
        f.run([0, 1, 2, 3], store=location)
    with RunStore(location) as store:
        assert store.load(failed.value.run_id).items == {("fetch", 1): {0: b"\0\0\0", 1: b"\1\1\1", 3: b"\3\3\3"}}
    broken.clear()
    result = f.resume(failed.value.run_id, store=location)
    assert result.output == [b"\0\0\0", b"\1\1\1", b"\2\2\2", b"\3\3\3"]
    assert [calls.count(n) for n in range(4)] == [1, 1, 2, 1]


def test_a_run_is_resumed_through_a_store_reopened_after_the_first_was_closed(path: Path) -> None:
    """From conformance spec/test_put_writes.py::test_put_writes_idempotent_across_restart
    (a restarted saver continues the thread from what was written)."""
    calls, down = Counter(), threading.Event()
    down.set()

    def second(x: int) -> int:
        calls.hit("second")
        if down.is_set():
            raise ConnectionError("down")
        return x * 10

    f = Formation("restart").add_function("first", lambda x: x + 1).add_function("second", second).connect("first", "second")
    with RunStore(path) as store, pytest.raises(FormationRuntimeError) as failed:
        f.run(1, store=store)
    down.clear()
    with RunStore(path) as reopened:
        assert reopened.get(failed.value.run_id).status == "failed"
        assert f.resume(failed.value.run_id, store=reopened).output == 20
        assert reopened.get(failed.value.run_id).status == "succeeded"


def test_a_loops_visits_are_listed_in_order_with_their_own_outputs(location: str) -> None:
    """From checkpoint-sqlite tests/test_get_writes_history.py (a channel's writes, oldest first)."""
    f = Formation("loop").add_function("step", lambda x: [*x, len(x)]).add_function("done", len)
    f.connect("step", "step", when=lambda x: len(x) < 3).connect("step", "done", when=lambda x: len(x) >= 3)
    run_id = f.run([], store=location).run_id
    with RunStore(location) as store:
        history = store.history(run_id)
    assert [(v.node, v.visit, v.output) for v in history] == [
        ("step", 1, [0]), ("step", 2, [0, 1]), ("step", 3, [0, 1, 2]), ("done", 1, 3)]
    assert all(v.started is not None and v.finished is not None and v.started <= v.finished for v in history)


def test_a_fork_with_the_same_output_copies_the_run_and_leaves_the_original_alone(location: str) -> None:
    """From conformance spec/test_copy_thread.py (a copy holds the same checkpoints; the
    source thread is unchanged)."""
    calls = Counter()

    def shout(text: str) -> str:
        calls.hit("shout")
        return text.upper() + "\x00"

    f = Formation("copy").add_function("draft", lambda t: f"about {t}").add_function("shout", shout).connect("draft", "shout")
    run_id = f.run("tea", store=location).run_id
    with RunStore(location) as store:
        before = [(v.node, v.visit, v.output) for v in store.history(run_id)]
        copy = f.fork(run_id, store=store, at="draft", output="about tea")
        assert [(v.node, v.visit, v.output) for v in store.history(copy)] == before
        assert [(v.node, v.visit, v.output) for v in store.history(run_id)] == before
        assert store.get(copy).status == "succeeded" and copy != run_id
    assert calls.count("shout") == 2  # what follows the fork point runs again in the copy


async def _journalled(f: Formation, path: Path) -> tuple[str, Any]:
    result = await f.arun(2, store=path)
    with RunStore(path) as store:  # read from inside the running loop
        return result.run_id, store.load(result.run_id).visits


def test_an_async_run_journals_what_a_store_reads_from_inside_the_loop(path: Path) -> None:
    """From checkpoint-sqlite tests/test_aiosqlite.py (the async saver puts and gets inside
    the event loop)."""
    f = Formation("async").add_function("double", lambda x: x * 2).add_function("pair", lambda x: (x, str(x))).connect("double", "pair")
    run_id, visits = asyncio.run(_journalled(f, path))
    assert visits == {"double": {1: 4}, "pair": {1: (4, "4")}}
    with RunStore(path) as store:
        assert store.get(run_id).status == "succeeded"


def test_closing_the_store_under_a_started_formation_fails_its_run_in_flight_instead_of_losing_it(path: Path) -> None:
    """From checkpoint-sqlite tests/test_aiosqlite.py (a saver whose connection was closed
    raises on use): before the fix, the run's failure could not be journalled either, that
    error escaped the runtime, and the run's future never resolved."""
    started, release = threading.Event(), threading.Event()

    def slow(x: int) -> int:
        started.set()
        release.wait(10)
        return x + 1

    store = RunStore(path)
    with Formation("closed").add_function("slow", slow).start(store=store) as running:
        future = running.submit(1)
        assert started.wait(10)
        store.close()
        release.set()
        with pytest.raises(FormationRuntimeError, match=r"node 'slow'.*StoreClosedError.*open a new RunStore"):
            future.result(timeout=10)
        with pytest.raises(StoreClosedError):
            running.submit(2)
    with RunStore(path) as reopened:  # its end was not journalled: it reads as unfinished, and resumes
        assert reopened.get(future.run_id).status == "interrupted"
        assert Formation("closed").add_function("slow", slow).resume(future.run_id, store=reopened).output == 2


def test_the_runs_commands_read_a_postgres_store_by_its_url(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """From checkpoint-postgres tests/test_sync.py (``PostgresSaver.from_conn_string`` reads
    what another saver wrote)."""
    run_id = Formation("pg").add_function("bin", lambda x: bytes(x)).run([0, 255], store=postgres_url).run_id
    assert main(["runs", "--store", postgres_url, "--json"]) == 0
    assert [(r["run_id"], r["status"]) for r in json.loads(capsys.readouterr().out)] == [(run_id, "succeeded")]
    assert main(["runs", "history", run_id, "--store", postgres_url, "--json"]) == 0
    assert [v["node"] for v in json.loads(capsys.readouterr().out)] == ["bin"]
