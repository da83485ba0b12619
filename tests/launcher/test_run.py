"""`wingman-actors run`: outputs, JSON, events, provider choice, inputs, exit codes."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pypdf import PdfWriter

from tests.formations import statement_data
from tests.formations.statement_data import STATEMENT
from tests.support.pdf import write_statement
from wingman_actors.cli import main

SAMPLE_LINE = "provider: sample replies (offline; set ANTHROPIC_API_KEY or pass --provider to use a real model)"

ECHO = """
    from wingman_actors import Formation

    def shout(text: str) -> str:
        return text.upper()

    formation = Formation("echo").add_function("shout", shout)
"""

ASK = """
    from wingman_actors import Agent, Formation

    def build(provider=None):
        return Formation("ask").add_agent("answer", Agent("answerer", provider=provider))
"""


def test_budget_runs_offline_with_sample_replies_on_the_bundled_statement(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == SAMPLE_LINE
    assert "input: formations/data/statement.pdf (the formation's default)" in err
    assert "(sample replies: offline, not from a model)" in err.splitlines()[-1]
    assert f"{statement_data.spending():,.2f}" in out and f"{statement_data.income():,.2f}" in out
    assert "housing" in out and "groceries" in out


def test_the_module_name_form_runs_the_same_formation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations.budget"]) == 0
    assert f"{statement_data.spending():,.2f}" in capsys.readouterr().out


def test_json_prints_one_document_and_the_provider_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert {"provider", "sample_replies", "run_id", "output", "outputs", "nodes", "usage", "duration_s"} <= set(doc)
    assert doc["provider"] == "sample" and doc["sample_replies"] is True
    assert set(doc["nodes"]) == {"parse", "batch", "categorise", "sum", "advise", "report"}
    assert doc["outputs"] == {"report": doc["output"]}
    assert doc["usage"]["input_tokens"] > 0
    assert SAMPLE_LINE in captured.err


def test_events_prints_a_line_per_node_event(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--events"]) == 0
    out = capsys.readouterr().err
    for node in ("parse", "batch", "categorise", "sum", "advise", "report"):
        assert f"] {node}: started" in out and f"] {node}: done in " in out
    assert "run finished in" in out


def test_json_events_are_json_lines_ending_with_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--events", "--json"]) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert docs[0]["type"] == "run_started" and docs[-2]["type"] == "run_finished"
    assert {"node_started", "node_finished", "agent_text"} <= {d.get("type") for d in docs}
    assert docs[-1]["sample_replies"] is True and docs[-1]["output"]


def test_a_terminal_gets_the_live_progress_table(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["run", "formations/research.py"]) == 0
    out = capsys.readouterr().err
    assert "formation research" in out and "elapsed" in out and "retries" in out
    assert out.count("✓ done") >= 5


def test_a_formation_file_exposing_formation_runs_on_literal_input(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    assert main(["run", str(formation_file("echo", ECHO)), "--input", "hello"]) == 0
    out, err = capsys.readouterr()
    assert out == "HELLO\n"
    assert "provider: the formation's own" in err


def test_json_of_a_run_whose_output_is_no_json_data_is_one_document(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    source = """
    from wingman_actors import Formation

    class Handle:
        def __str__(self):
            return "handle"

    formation = Formation("objects").add_function("open", lambda x: Handle()).add_function("raw", lambda h: b"\\xff")
    formation.add_function("keep", lambda x: Handle()).connect("open", "raw")
    """
    assert main(["run", str(formation_file("objects", source)), "-i", "x", "--no-store", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["outputs"] == {"raw": "/w==", "keep": "handle"}


def test_input_at_file_passes_the_file_text(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], tmp_path: Path
) -> None:
    (tmp_path / "words.txt").write_text("from a file")
    assert main(["run", str(formation_file("echo", ECHO)), "--input", f"@{tmp_path / 'words.txt'}"]) == 0
    assert "FROM A FILE" in capsys.readouterr().out


def test_input_dash_reads_standard_input(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("piped"))
    assert main(["run", str(formation_file("echo", ECHO)), "--input", "-"]) == 0
    assert "PIPED" in capsys.readouterr().out


def test_no_input_and_no_default_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    assert main(["run", str(formation_file("echo", ECHO))]) == 2
    assert "has no default input: pass --input" in capsys.readouterr().err


def test_param_passes_options_to_build(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/research.py", "--param", "max_sections=2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output"].count("Notes for") == 2


def test_an_unknown_param_names_the_options_build_takes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/research.py", "--param", "sections=2"]) == 2
    assert "options it takes: max_sections, max_workers" in capsys.readouterr().err


def test_provider_flag_with_options_is_used_and_printed(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    path = formation_file("ask", ASK)
    assert main(["run", str(path), "-i", "hi", "--provider", "scripted", "--option", 'replies=["scripted hello"]']) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == "provider: scripted (model scripted; from --provider)"
    assert out == "scripted hello\n" and "sample replies" not in err


def test_wingman_provider_from_the_environment_is_used(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WINGMAN_PROVIDER", "scripted")
    monkeypatch.setenv("WINGMAN_MODEL", "env-model")
    assert main(["run", str(formation_file("echo", ECHO)), "-i", "x"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "provider: scripted (model env-model; from WINGMAN_PROVIDER)"


def test_provider_sample_forces_sample_replies_over_an_api_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-never-used")
    assert main(["run", "formations/research.py", "--provider", "sample"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "provider: sample replies (chosen by --provider sample)"


def test_an_unknown_provider_lists_the_registered_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--provider", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown provider 'nope'" in err and "anthropic" in err and "scripted" in err


def test_model_without_a_provider_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--model", "big"]) == 2
    assert "--model and --option configure a real provider, but none is chosen" in capsys.readouterr().err


def test_a_missing_statement_fails_the_run_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--input", "missing.pdf"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-2] == ("wingman-actors: run failed at node 'parse': budget: cannot read statement "
                       "'missing.pdf': file not found; pass the path of a PDF bank statement")
    assert err[-1].startswith("continue it with: wingman-actors resume ")  # journalled in the default store


def test_a_non_pdf_input_fails_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "statement.csv").write_text("date,amount\n2026-10-01,-5.00\n")
    assert main(["run", "formations/budget.py", "--input", str(tmp_path / "statement.csv")]) == 1
    assert "not a PDF file" in capsys.readouterr().err


def test_a_pdf_with_no_transactions_fails_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_statement(tmp_path / "empty.pdf", [])
    assert main(["run", "formations/budget.py", "--input", str(path)]) == 1
    assert "budget: no transactions found in statement" in capsys.readouterr().err


def test_an_encrypted_pdf_fails_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=STATEMENT)
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    writer.write(tmp_path / "locked.pdf")
    assert main(["run", "formations/budget.py", "--input", str(tmp_path / "locked.pdf")]) == 1
    assert "password-protected" in capsys.readouterr().err


def test_a_failed_run_shows_no_traceback_without_debug(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    path = formation_file("divide", """
        from wingman_actors import Formation

        def divide(text: str) -> float:
            return 1 / 0

        formation = Formation("divide").add_function("divide", divide)
    """)
    assert main(["run", str(path), "-i", "x"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-2] == "wingman-actors: run failed at node 'divide': ZeroDivisionError: division by zero"
    assert "Traceback" not in err


def test_debug_adds_the_traceback_of_a_failed_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "-i", "missing.pdf", "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "StatementError" in err


def test_a_failed_run_with_json_prints_the_error_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "-i", "missing.pdf", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["node"] == "parse" and "file not found" in doc["error"]["message"]


def test_a_failed_run_with_json_says_its_status_as_a_succeeded_or_cancelled_one_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "formations/budget.py", "-i", "missing.pdf", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "failed"


def test_a_failed_run_with_json_has_the_traces_of_its_nodes_as_runs_show_json_does(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    path = formation_file("halves", """
        from wingman_actors import Formation

        def shout(text: str) -> str:
            return text.upper()

        def divide(text: str) -> float:
            return 1 / 0

        formation = (Formation("halves").add_function("shout", shout)
                     .add_function("divide", divide, retries=1, backoff=0.001).connect("shout", "divide"))
    """)
    assert main(["run", str(path), "-i", "x", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    nodes = doc["nodes"]
    assert doc["status"] == "failed" and doc["run_id"]
    assert nodes["shout"]["status"] == "succeeded" and nodes["shout"]["output"] == "X"
    assert nodes["divide"]["status"] == "failed" and nodes["divide"]["attempts"] == 2
    assert "ZeroDivisionError" in nodes["divide"]["error"]


def test_a_missing_formation_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/nope.py"]) == 2
    assert "formation file 'formations/nope.py' not found" in capsys.readouterr().err


def test_a_missing_module_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations.nope"]) == 2
    assert "no module named 'formations.nope'" in capsys.readouterr().err


def test_a_formation_file_that_does_not_import_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    assert main(["run", str(formation_file("broken", "def build(:\n"))]) == 2
    err = capsys.readouterr().err
    assert "cannot load formation" in err and "SyntaxError (line 1)" in err and "Traceback" not in err


def test_a_module_without_a_formation_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    assert main(["run", str(formation_file("empty", "X = 1\n")), "-i", "x"]) == 2
    assert "exposes neither `formation` (a Formation) nor `build(**options) -> Formation`" in capsys.readouterr().err


def test_an_invalid_formation_is_a_usage_error_listing_its_problems(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    path = formation_file("typo", """
        from wingman_actors import Formation

        def count(text: str) -> int:
            return len(text)

        def shout(text: str) -> str:
            return text.upper()

        formation = Formation("typo").add_function("count", count).add_function("shout", shout)
        formation.connect("count", "shout")
    """)
    assert main(["run", str(path), "-i", "x"]) == 2
    err = capsys.readouterr().err
    assert "formation 'typo' is not valid" in err and "'count' outputs int" in err


SLOW_SAMPLES = """
    from wingman_actors import Agent, Formation

    SAMPLE_REPLIES = ["one", "two"]
    SAMPLE_LATENCY_S = 0.3
    DEFAULT_INPUT = "go"

    def build(provider=None):
        a, b = Agent("a", provider=provider), Agent("b", provider=provider)
        return Formation("slow").add_agent("first", a).add_agent("second", b).connect("first", "second")
"""


def _summary_seconds(err: str) -> float:
    line = next(line for line in err.splitlines() if line.startswith("done in "))
    return float(line.removeprefix("done in ").split("s:")[0])


def test_a_terminal_run_takes_the_formation_s_sample_latency(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["run", str(formation_file("slow", SLOW_SAMPLES))]) == 0
    out, err = capsys.readouterr()
    assert out == "two\n"
    assert _summary_seconds(err) >= 0.6  # two replies in sequence, 0.3 s each


def test_sample_latency_flag_overrides_the_formation_s(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path],
) -> None:
    assert main(["run", str(formation_file("slow", SLOW_SAMPLES)), "--sample-latency", "0.25"]) == 0
    assert _summary_seconds(capsys.readouterr().err) >= 0.5


def test_a_bad_sample_latency_in_the_module_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    path = formation_file("bad", SLOW_SAMPLES.replace("SAMPLE_LATENCY_S = 0.3", "SAMPLE_LATENCY_S = 'slow'"))
    assert main(["run", str(path)]) == 2
    assert "SAMPLE_LATENCY_S must be a number of seconds >= 0, got 'slow'" in capsys.readouterr().err
