"""``wingman-actors runs history RUN_ID`` and ``wingman-actors fork RUN_ID --at NODE
--output JSON``, on both stores (``--store`` a SQLite file or a postgresql:// URL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wingman_actors.cli import main

CHAIN = '''
from wingman_actors import Formation

formation = Formation("chain").add_function("a", lambda x: x + "a").add_function("b", lambda x: x + "b")
formation.add_function("c", lambda x: x + "c").connect("a", "b").connect("b", "c")
'''


def _run(tmp_path: Path, location: str, capsys: pytest.CaptureFixture[str]) -> str:
    module = tmp_path / "chain.py"
    module.write_text(CHAIN)
    assert main(["run", str(module), "--input", "x", "--store", location]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", location, "--json"]) == 0
    run_id: str = json.loads(capsys.readouterr().out)[0]["run_id"]
    return run_id


def test_runs_history_prints_each_visit_in_order(tmp_path: Path, location: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _run(tmp_path, location, capsys)
    assert main(["runs", "history", run_id, "--store", location, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["node"], r["visit"], r["status"], r["output"]) for r in rows] == [
        ("a", 1, "succeeded", "xa"), ("b", 1, "succeeded", "xab"), ("c", 1, "succeeded", "xabc")]
    assert all(r["finished"] for r in rows)
    assert main(["runs", "history", run_id, "--store", location]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["NODE", "VISIT", "STATUS", "FINISHED", "OUTPUT"]
    assert table[2].split()[0] == "b" and table[2].split()[-1] == "xab"


def test_runs_history_table_prints_non_ascii_text_inside_values_as_it_is(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wingman_actors import Formation

    run_id = Formation("unicode").add_function("tag", lambda text: [text, "✓"]).run("café", store=path).run_id
    assert main(["runs", "history", run_id, "--store", str(path)]) == 0
    assert '["café", "✓"]' in capsys.readouterr().out


def test_fork_replaces_a_visits_output_and_prints_the_new_run(tmp_path: Path, location: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _run(tmp_path, location, capsys)
    assert main(["fork", run_id, "--at", "b", "--output", '"B!"', "--store", location]) == 0
    new_id = capsys.readouterr().out.strip()
    assert new_id and new_id != run_id
    assert main(["runs", "history", new_id, "--store", location, "--json"]) == 0
    assert [r["output"] for r in json.loads(capsys.readouterr().out)] == ["xa", "B!", "B!c"]
    assert main(["runs", "history", run_id, "--store", location, "--json"]) == 0
    assert [r["output"] for r in json.loads(capsys.readouterr().out)] == ["xa", "xab", "xabc"]


def test_fork_at_an_unknown_node_is_a_usage_error_naming_the_nodes(tmp_path: Path, path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _run(tmp_path, str(path), capsys)
    assert main(["fork", run_id, "--at", "zz", "--output", "1", "--store", str(path)]) == 2
    assert "has no node 'zz' to fork at; its nodes are 'a', 'b', 'c'" in capsys.readouterr().err


def test_fork_at_visit_0_is_a_usage_error_in_the_commands_own_syntax(tmp_path: Path, path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _run(tmp_path, str(path), capsys)
    assert main(["fork", run_id, "--at", "b:0", "--output", "1", "--store", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "wingman-actors: error: --at b:0: a visit number is 1 or more (--at NODE for its first visit, NODE:VISIT "
        "for another, e.g. b:2)"]


def test_history_of_an_unknown_run_is_a_usage_error(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors.store import RunStore

    RunStore(path).close()
    assert main(["runs", "history", "ghost", "--store", str(path)]) == 2
    assert "no run 'ghost'" in capsys.readouterr().err


def test_fork_of_a_server_run_points_to_the_servers_fork_route(tmp_path: Path, path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.store.conftest import chain_shape
    from wingman_actors.store import SERVER_SOURCE, RunStore

    with RunStore(path) as store:
        run_id = store.begin_run("chain", chain_shape(), "x", source=f"{SERVER_SOURCE}01FORMATION")
        store.set_status(run_id, "succeeded", wait=True)
    assert main(["fork", run_id, "--at", "b", "--output", "1", "--store", str(path)]) == 2
    assert f"was started by the HTTP server; fork it there (POST /runs/{run_id}/fork" in capsys.readouterr().err


FAN = '''
from wingman_actors import Formation


def both(b: str, c: str) -> str:
    return b + "|" + c


formation = Formation("fan").add_function("a", lambda x: x + "a").add_function("b", lambda x: x + "b")
formation.add_function("c", lambda x: x + "c").add_function("d", both)
formation.connect("a", "b").connect("a", "c").connect("b", "d").connect("c", "d")
'''


def test_fork_with_an_input_at_a_join_runs_it_with_that_input(tmp_path: Path, location: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "fan.py"
    module.write_text(FAN)
    assert main(["run", str(module), "--input", "x", "--store", location]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", location, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)[0]["run_id"]
    assert main(["fork", run_id, "--at", "d", "--input", '{"b": "B", "c": "C"}', "--store", location, "--json"]) == 0
    forked = json.loads(capsys.readouterr().out)
    assert forked["status"] == "succeeded"
    assert [r["output"] for r in forked["history"] if r["node"] == "d"] == ["B|C"]
    assert main(["fork", run_id, "--at", "d", "--input", '{"b": 1, "c": "C"}', "--store", location]) == 2
    assert "input= for node 'd' does not fit its parameter 'b' of type str" in capsys.readouterr().err


GUARDED = '''
from wingman_actors import Formation, interrupt

def check(x: int) -> int:
    if x < 0:
        raise ValueError("negative")
    if x == 0:
        return interrupt("zero?")
    return x * 2

formation = Formation("guarded").add_function("a", lambda x: x).add_function("check", check).connect("a", "check")
'''


def _guarded_run(tmp_path: Path, location: str, capsys: pytest.CaptureFixture[str]) -> str:
    module = tmp_path / "guarded.py"
    module.write_text(GUARDED)
    assert main(["run", str(module), "--input", "3", "--store", location]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", location, "--json"]) == 0
    run_id: str = json.loads(capsys.readouterr().out)[0]["run_id"]
    return run_id


def test_runs_history_of_a_failed_run_lists_the_visit_that_failed_it_with_its_error(
        tmp_path: Path, location: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "guarded.py"
    module.write_text(GUARDED)
    assert main(["run", str(module), "--input", "-1", "--store", location]) == 1
    capsys.readouterr()
    assert main(["runs", "--store", location, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)[0]["run_id"]
    assert main(["runs", "history", run_id, "--store", location, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["node"], r["status"], r["error"], r["attempts"]) for r in rows] == [
        ("a", "succeeded", None, None), ("check", "failed", "ValueError: negative", 1)]
    assert main(["runs", "history", run_id, "--store", location]) == 0
    last = capsys.readouterr().out.splitlines()[-1].split()
    assert last[:3] == ["check", "1", "failed"] and "negative" in last[-1]


def test_fork_whose_new_run_fails_exits_1_saying_so_with_the_resume_command(
        tmp_path: Path, location: str, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _guarded_run(tmp_path, location, capsys)
    assert main(["fork", run_id, "--at", "a", "--output", "-1", "--store", location]) == 1
    out, err = capsys.readouterr()
    new_id = out.strip()
    assert new_id and new_id != run_id
    assert f"the forked run {new_id} failed" in err and "ValueError: negative" in err
    assert f"continue it with: wingman-actors resume {new_id} --store" in err


def test_fork_whose_new_run_suspends_prints_its_question_and_the_answer_command(
        tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _guarded_run(tmp_path, str(path), capsys)
    assert main(["fork", run_id, "--at", "a", "--output", "0", "--store", str(path)]) == 0
    out, err = capsys.readouterr()
    new_id = out.strip()
    assert f"run {new_id} is waiting at node 'check': \"zero?\"" in err
    assert f"answer it with: wingman-actors resume {new_id} --store {path} --answer JSON" in err
    assert main(["resume", new_id, "--store", str(path), "--answer", "5"]) == 0
    assert capsys.readouterr().out.strip() == "5"


def test_fork_of_a_python_run_records_the_formation_file_so_resume_needs_it_no_more(
        tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors import Formation
    from wingman_actors.store import RunStore

    namespace: dict[str, object] = {}
    exec(GUARDED, namespace)
    formation = namespace["formation"]
    assert isinstance(formation, Formation)
    run_id = formation.run(3, store=path).run_id  # started from Python: it records no formation file
    module = tmp_path / "guarded.py"
    module.write_text(GUARDED)
    assert main(["fork", run_id, "--at", "a", "--output", "0", "--store", str(path), "--formation", str(module)]) == 0
    out, err = capsys.readouterr()
    new_id = out.strip()
    # the command it suggests needs no --formation either
    assert f"answer it with: wingman-actors resume {new_id} --store {path} --answer JSON" in err
    assert "--formation" not in err
    with RunStore(path) as store:
        assert store.get(run_id).source is None
        assert store.get(new_id).source == str(module.resolve())
    assert main(["resume", new_id, "--store", str(path), "--answer", "5"]) == 0
    assert capsys.readouterr().out.strip() == "5"


TYPED = '''
from wingman_actors import Formation


def count(x: str) -> int:
    return len(x)


def double(n: int) -> int:
    return n * 2


formation = Formation("typed").add_function("count", count).add_function("double", double).connect("count", "double")
'''


def test_fork_with_an_output_that_does_not_fit_the_nodes_output_type_is_a_usage_error(
        tmp_path: Path, location: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "typed.py"
    module.write_text(TYPED)
    assert main(["run", str(module), "--input", "abc", "--store", location]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", location, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)[0]["run_id"]
    assert main(["fork", run_id, "--at", "count", "--output", '"three"', "--store", location]) == 2
    assert "output= for node 'count' does not fit its output type int" in capsys.readouterr().err
    assert main(["runs", "--store", location, "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [run_id]
    assert main(["fork", run_id, "--at", "count", "--output", "7", "--store", location]) == 0
    new_id = capsys.readouterr().out.strip()
    assert main(["runs", "history", new_id, "--store", location, "--json"]) == 0
    assert [r["output"] for r in json.loads(capsys.readouterr().out)] == [7, 14]
