"""``wingman-actors runs show RUN_ID``: one journalled run node by node (a table, or
``--json`` with values whole), and ``resume RUN_ID --formation FILE`` for a run started
from Python."""

from __future__ import annotations

import importlib.util
import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.store_fixtures import APPROVAL_FORMATION
from wingman_actors import Formation
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

LONG = "x" * 300


def fetch(x: str) -> str:
    time.sleep(0.002)  # a run that takes time journals its node traces (a quick clean one does not)
    return x + LONG


def chain() -> Formation:
    return Formation("chain").add_function("fetch", fetch).add_function("count", len).connect("fetch", "count")


def show(path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["runs", "show", run_id, "--store", str(path), "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def load_approval(tmp_path: Path) -> tuple[Path, Formation]:
    module = tmp_path / "approval.py"
    module.write_text(APPROVAL_FORMATION)
    spec = importlib.util.spec_from_file_location("approval_for_show", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    formation: Formation = loaded.formation
    return module, formation


def test_runs_show_json_has_every_nodes_status_visits_attempts_and_whole_outputs(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = chain().run("a", store=path).run_id
    document = show(path, run_id, capsys)
    assert (document["run_id"], document["status"], document["interrupt"]) == (run_id, "succeeded", None)
    node = document["nodes"]["fetch"]
    assert (node["status"], node["visits"], node["attempts"], node["outputs"]) == ("succeeded", 1, 1, ["a" + LONG])
    assert node["duration_s"] >= 0.002 and node["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert document["nodes"]["count"]["output"] == 301


def test_runs_show_table_lists_every_node_with_outputs_cut_to_one_line(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = chain().run("a", store=path).run_id
    assert main(["runs", "show", run_id, "--store", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["NODE", "STATUS", "VISITS", "ATTEMPTS", "DURATION", "TOKENS", "ERROR", "OUTPUT"]
    row = next(line for line in lines if line.startswith("fetch"))
    assert row.split()[:3] == ["fetch", "succeeded", "1"] and row.endswith("…") and len(row) < 140


def test_runs_show_table_prints_non_ascii_text_inside_values_as_it_is(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = Formation("unicode").add_function("tag", lambda text: {"text": text, "mark": "✓"})
    run_id = f.run("héllo", store=path).run_id
    assert main(["runs", "show", run_id, "--store", str(path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("tag"))
    assert '{"text": "héllo", "mark": "✓"}' in row and "\\u" not in row


def test_runs_show_prints_a_pending_interrupt_s_non_ascii_payload_as_it_is(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = waiting_with_a_branch_not_taken().run(" café ", store=path).run_id
    assert main(["runs", "show", run_id, "--store", str(path)]) == 0
    assert """waiting at node 'ask': {"go?": "café"}""" in capsys.readouterr().out


def test_runs_show_of_a_quick_clean_success_has_outputs_one_attempt_and_no_tokens(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wingman_actors.formation import _trace_journal

    # "quick" is under QUICK_S of node time; a loaded machine can stretch str.upper past 1 ms
    monkeypatch.setattr(_trace_journal, "QUICK_S", 60.0)
    f = Formation("quick").add_function("a", str.upper).add_function("b", len).connect("a", "b")
    node = show(path, f.run("x", store=path).run_id, capsys)["nodes"]["a"]
    assert (node["status"], node["attempts"], node["output"]) == ("succeeded", 1, "X")
    assert node["usage"] == {"input_tokens": 0, "output_tokens": 0}  # a run that used tokens journals its traces


def test_runs_show_of_a_quick_clean_success_lists_the_nodes_in_graph_order(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wingman_actors.formation import _trace_journal

    monkeypatch.setattr(_trace_journal, "QUICK_S", 60.0)  # a quick clean success journals no traces
    f = Formation("order").add_function("up", str.upper).add_function("count", len).connect("up", "count")
    assert list(show(path, f.run("x", store=path).run_id, capsys)["nodes"]) == ["up", "count"]


def test_runs_show_of_a_quick_clean_success_times_each_node_by_its_journalled_visits(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wingman_actors.formation import _trace_journal
    from wingman_actors.store import RunStore

    monkeypatch.setattr(_trace_journal, "QUICK_S", 60.0)  # no node traces journalled, however slow the machine
    f = Formation("quick").add_function("a", str.upper).add_function("b", len).connect("a", "b")
    run_id = f.run("x", store=path).run_id
    with RunStore(path) as store:
        visits = {v.node: v for v in store.history(run_id)}
    nodes = show(path, run_id, capsys)["nodes"]
    for name, visit in visits.items():
        assert visit.started is not None and visit.finished is not None
        node = nodes[name]
        assert node["started_at"] == visit.started.timestamp() and node["finished_at"] == visit.finished.timestamp()
        assert node["duration_s"] == (visit.finished - visit.started).total_seconds()


def test_runs_show_of_a_quick_clean_success_shows_a_node_its_route_skipped_as_skipped(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    routed = Formation("routed").add_function("src", lambda x: x).add_function("big", str).add_function("small", str)
    routed.connect("src", "big", when=lambda x: x > 10).connect("src", "small", when=lambda x: x <= 10)
    result = routed.run(50, store=path)
    assert result.nodes["small"].status == "skipped"
    nodes = show(path, result.run_id, capsys)["nodes"]
    assert (nodes["big"]["status"], nodes["small"]["status"]) == ("succeeded", "skipped")  # it read pending


def test_runs_show_shows_the_branches_a_join_any_fired_without_cancelled(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    race = (
        Formation("race").add_function("start", lambda x: x).add_function("fast", lambda x: x + 1)
        .add_function("slow", lambda x: time.sleep(0.05) or x).add_function("slow_2", lambda x: x)
        .add_function("first", lambda values: values, join="any")
        .connect("start", "fast", "first").connect("start", "slow", "slow_2", "first")
    )
    result = race.run(1, store=path)
    nodes = show(path, result.run_id, capsys)["nodes"]
    assert {name: node["status"] for name, node in nodes.items()} == {
        "start": "succeeded", "fast": "succeeded", "slow": "cancelled", "slow_2": "cancelled", "first": "succeeded"}


def test_runs_show_names_a_failed_nodes_error(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def boom(x: str) -> str:
        raise ValueError("bad statement")

    f = Formation("fails").add_function("a", str.upper).add_function("b", boom).connect("a", "b")
    with pytest.raises(FormationRuntimeError) as info:
        f.run("x", store=path)
    document = show(path, info.value.run_id or "", capsys)
    assert document["status"] == "failed"
    assert document["nodes"]["b"]["status"] == "failed"
    assert "bad statement" in document["nodes"]["b"]["error"]
    assert document["nodes"]["a"]["output"] == "X"


def test_runs_show_prints_the_pending_interrupt_and_how_to_continue(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, formation = load_approval(tmp_path)
    run_id = formation.run("cats", store=path).run_id
    assert main(["runs", "show", run_id, "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "waiting at node 'approve'" in out and "--formation FILE" in out
    document = show(path, run_id, capsys)
    assert document["interrupt"]["payload"] == {"approve?": "draft about cats"}
    assert document["nodes"]["approve"]["status"] == "suspended"


def test_runs_show_of_an_expired_run_says_it_expired_and_prints_no_resume_command(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, formation = load_approval(tmp_path)
    with RunStore(path, suspend_ttl=0.05) as store:
        run_id = formation.run("cats", store=store).run_id
    time.sleep(0.15)
    assert main(["runs", "show", run_id, "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "status expired" in out and "waiting at" not in out and "wingman-actors resume" not in out
    assert "expired at node 'approve'" in out and "draft about cats" in out and "start a new run" in out


def _asks(text: str) -> str:
    from wingman_actors import interrupt

    return f"{text}: {interrupt({'go?': text})}"


def waiting_with_a_branch_not_taken() -> Formation:
    """``a`` feeds ``ask`` (which suspends the run) then ``after``; ``a``'s conditional edge
    to ``never`` does not fire."""
    return (Formation("waits").add_function("a", str.strip).add_function("never", str.upper)
            .add_function("ask", _asks).add_function("after", str.upper)
            .connect("a", "never", when=lambda v: False).connect("a", "ask").connect("ask", "after"))


def test_runs_show_of_a_suspended_run_shows_the_nodes_after_the_waiting_one_pending(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = waiting_with_a_branch_not_taken().run(" x ", store=path).run_id
    statuses = {name: n["status"] for name, n in show(path, run_id, capsys)["nodes"].items()}
    assert statuses == {"a": "succeeded", "never": "skipped", "ask": "suspended", "after": "pending"}


def test_runs_show_of_a_run_stopped_after_a_breakpoint_shows_what_follows_pending(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = chain().run("x", store=path, break_after=["fetch"]).run_id
    statuses = {name: n["status"] for name, n in show(path, run_id, capsys)["nodes"].items()}
    assert statuses == {"fetch": "suspended", "count": "pending"}


def test_runs_show_of_a_run_resumed_with_an_answer_shows_the_answered_node_succeeded(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, formation = load_approval(tmp_path)
    run_id = formation.run("cats", store=path).run_id
    assert formation.resume(run_id, store=path, answer="yes").output == "draft about cats: yes"
    document = show(path, run_id, capsys)
    assert (document["status"], document["interrupt"]) == ("succeeded", None)
    node = document["nodes"]["approve"]
    assert (node["status"], node["output"]) == ("succeeded", "draft about cats: yes")


def test_runs_show_of_a_nested_formation_lists_inner_nodes_with_outputs(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outer = Formation("outer").add_formation("inner", chain()).add_function("half", lambda n: n // 2)
    run_id = outer.connect("inner", "half").run("a", store=path).run_id
    nodes = show(path, run_id, capsys)["nodes"]
    assert nodes["inner/fetch"]["output"] == "a" + LONG
    assert nodes["half"]["output"] == 150


def test_runs_show_of_an_unknown_run_is_a_usage_error(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chain().run("a", store=path)
    assert main(["runs", "show", "nope", "--store", str(path)]) == 2
    assert "runs --store" in capsys.readouterr().err


def test_resume_with_formation_continues_a_run_started_from_python(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, formation = load_approval(tmp_path)
    run_id = formation.run("cats", store=path).run_id
    assert main(["resume", run_id, "--store", str(path), "--formation", str(module), "--answer", '"yes"']) == 0
    assert capsys.readouterr().out.strip() == "draft about cats: yes"


def test_resume_without_formation_of_a_python_run_names_the_flag(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, formation = load_approval(tmp_path)
    run_id = formation.run("cats", store=path).run_id
    assert main(["resume", run_id, "--store", str(path)]) == 2
    assert "--formation FILE" in capsys.readouterr().err


def test_resume_with_formation_of_a_python_run_prints_a_resume_command_that_names_the_file(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, formation = load_approval(tmp_path)
    run_id = formation.run("cats", store=path).run_id
    assert main(["resume", run_id, "--store", str(path), "--formation", str(module)]) == 0  # no answer: still waits
    line = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("answer it with: "))
    command = shlex.split(line.removeprefix("answer it with: "))
    assert command[command.index("--formation") + 1] == str(module)
    assert main([*command[1:-2], "--answer", '"yes"']) == 0  # the printed command, pasted, continues it
    assert capsys.readouterr().out.strip() == "draft about cats: yes"


def test_runs_show_json_gives_bytes_that_are_no_text_as_base64(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = Formation("raw").add_function("raw", lambda x: b"\xff\x00").run(1, store=path).run_id
    assert show(path, run_id, capsys)["nodes"]["raw"]["outputs"] == ["/wA="]
    assert main(["runs", "history", run_id, "--store", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["output"] == "/wA="


MODEL_FORMATION = '''
from pydantic import BaseModel

from wingman_actors import Formation


class Note(BaseModel):
    text: str


formation = Formation("noted").add_function("note", lambda text: Note(text=text))
'''


def _run_in_a_fresh_module(tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> str:
    """Run the model formation with the launcher, then forget its module (as a new process would)."""
    import sys

    module = tmp_path / "noted.py"
    module.write_text(MODEL_FORMATION)
    assert main(["run", str(module), "-i", "hi", "--store", str(path)]) == 0
    monkeypatch.delitem(sys.modules, "wingman_formation_noted")
    capsys.readouterr()
    assert main(["runs", "--store", str(path), "--json"]) == 0
    run_id: str = json.loads(capsys.readouterr().out)[0]["run_id"]
    return run_id


def test_runs_show_of_a_run_whose_outputs_are_models_of_its_file_loads_the_file_it_records(
    tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _run_in_a_fresh_module(tmp_path, path, monkeypatch, capsys)
    assert show(path, run_id, capsys)["nodes"]["note"]["output"] == {"text": "hi"}


def test_the_store_viewer_shows_a_run_whose_outputs_are_models_of_its_file(
    tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from starlette.testclient import TestClient

    from wingman_actors.server._viewer_store import create_store_viewer

    run_id = _run_in_a_fresh_module(tmp_path, path, monkeypatch, capsys)
    with TestClient(create_store_viewer(path), base_url="http://127.0.0.1") as viewer:
        doc = viewer.get(f"/ui/api/runs/{run_id}")
    assert doc.status_code == 200, doc.text
    assert doc.json()["nodes"]["note"]["output"] == {"text": "hi"}


def test_the_store_viewer_says_why_it_cannot_show_a_python_run_whose_classes_do_not_import(
    tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from starlette.testclient import TestClient

    from wingman_actors.server._viewer_store import create_store_viewer

    module = tmp_path / "noted_by_python.py"
    module.write_text(MODEL_FORMATION)
    spec = importlib.util.spec_from_file_location("noted_by_python", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "noted_by_python", loaded)
    spec.loader.exec_module(loaded)
    run_id = loaded.formation.run("hi", store=path).run_id  # from Python: the run records no file
    monkeypatch.delitem(sys.modules, "noted_by_python")
    with TestClient(create_store_viewer(path), base_url="http://127.0.0.1") as viewer:
        doc = viewer.get(f"/ui/api/runs/{run_id}")
        listed = viewer.get("/ui/api/formations")
    assert doc.status_code == 409 and "noted_by_python:Note" in doc.json()["error"], doc.text
    assert listed.status_code == 200, listed.text  # the page's first view still opens


def test_runs_show_and_history_json_are_strict_json_with_nan_as_null(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def strict(text: str) -> Any:
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))

    run_id = Formation("odd").add_function("odd", lambda x: [float("nan"), 1.5]).run(1, store=path).run_id
    assert main(["runs", "show", run_id, "--store", str(path), "--json"]) == 0
    assert strict(capsys.readouterr().out)["nodes"]["odd"]["output"] == [None, 1.5]
    assert main(["runs", "history", run_id, "--store", str(path), "--json"]) == 0
    assert strict(capsys.readouterr().out)[0]["output"] == [None, 1.5]


def test_runs_history_of_a_run_whose_outputs_are_models_of_its_file_loads_the_file_it_records(
    tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _run_in_a_fresh_module(tmp_path, path, monkeypatch, capsys)
    assert main(["runs", "history", run_id, "--store", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["output"] == {"text": "hi"}
