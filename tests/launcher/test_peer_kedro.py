"""`wingman-actors run` and `resume`, ported from Kedro's CLI tests (kedro-org/kedro,
``tests/framework/cli/test_cli.py::TestRunCommand``) and the resume suggestion Kedro logs
after a failure (``tests/runner/test_sequential_runner.py::TestSuggestResumeScenario``).

``kedro run`` runs the project's pipeline; ours runs a formation file. ``--params`` is
``--param NAME=VALUE`` (options of the file's ``build()``), ``--runner`` is ``--backend``,
and the ``kedro run --from-nodes ...`` command Kedro suggests after a failure is the
``wingman-actors resume RUN_ID`` command the launcher prints.

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- ``--from-nodes``, ``--to-nodes``, ``--nodes``, ``--tags`` and ``--namespace`` have no
  launcher flag (a gap): ``resume`` continues a failed run, ``--break-before`` and
  ``--break-after`` stop one at a node.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from wingman_actors.cli import main

NESTED_FLAKY = """
    import os
    from wingman_actors import Formation

    def node1(x: int) -> int:
        with open(os.environ["KEDRO_LOG"], "a") as log:
            log.write("node1\\n")
        return x + 1

    def node2(x: int) -> int:
        with open(os.environ["KEDRO_LOG"], "a") as log:
            log.write("node2\\n")
        if not os.path.exists(os.environ["KEDRO_LOG"] + ".fixed"):
            raise RuntimeError("test exception")
        return x * 2

    inner = Formation("inner").add_function("node1", node1).add_function("node2", node2)
    formation = Formation("outer").add_formation("PREFIX", inner.connect("node1", "node2"))
    DEFAULT_INPUT = 1
"""

BUILD = """
    from wingman_actors import Formation

    def build(factor: int = 2, label: str = "x"):
        def scale(x: int) -> str:
            return f"{label}={x * factor}"
        return Formation("scaled").add_function("scale", scale)

    DEFAULT_INPUT = 3
"""


@pytest.fixture
def nested_flaky(formation_file: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEDRO_LOG", str(tmp_path / "calls.log"))
    return formation_file("nested_flaky", NESTED_FLAKY)


def resume_command(err: str) -> list[str]:
    line = next(line for line in err.splitlines() if "wingman-actors resume " in line)
    return shlex.split(line.split(": ", 1)[1])[1:]


def test_a_failure_in_a_namespaced_node_names_its_path_and_prints_the_command_that_resumes_it(
    nested_flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSuggestResumeScenario::test_suggest_resume_scenario
    (the log suggests ``kedro run --from-nodes ...``)."""
    store = str(tmp_path / "runs.sqlite")
    assert main(["run", str(nested_flaky), "--store", store]) == 1
    err = capsys.readouterr().err
    assert "run failed at node 'PREFIX'" in err and "PREFIX/node2" in err and "test exception" in err
    (tmp_path / "calls.log.fixed").touch()
    assert main(resume_command(err)) == 0
    assert capsys.readouterr().out.strip() == "4"
    assert (tmp_path / "calls.log").read_text().split() == ["node1", "node2", "node2"]  # node1 was journalled


def test_break_before_a_namespaced_node_says_to_stop_at_its_formation_node(
    nested_flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_only_nodes_with_namespacing
    (a node named by its namespaced name gets the right suggestion), through the launcher as
    the library's ``break_before=`` says it."""
    store = str(tmp_path / "runs.sqlite")
    assert main(["run", str(nested_flaky), "--store", store, "--break-before", "PREFIX/node2"]) == 2
    err = capsys.readouterr().err
    assert "--break-before PREFIX/node2: 'PREFIX/node2' is inside the nested formation 'PREFIX'" in err
    assert "--break-before PREFIX" in err.split("inside the nested formation", 1)[1]


def test_break_before_an_unknown_node_lists_the_nodes(
    nested_flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_only_nodes_unknown."""
    assert main(["run", str(nested_flaky), "--store", str(tmp_path / "r.sqlite"), "--break-before", "NaN"]) == 2
    assert "--break-before NaN: formation 'outer' has no node 'NaN'; its nodes are 'PREFIX'" in capsys.readouterr().err


def test_a_formation_file_declaring_two_nodes_of_one_name_is_a_usage_error_naming_it(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_duplicate_free_nodes
    (in a project's pipeline registry, run from the CLI)."""
    path = formation_file("dupes", """
        from wingman_actors import Formation
        formation = Formation("dupes").add_function("same_name", str.upper).add_function("same_name", str.lower)
    """)
    assert main(["run", str(path), "-i", "x", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "already has a node named 'same_name'; pick another name" in err and "Traceback" not in err


def test_a_formation_file_with_a_cycle_is_a_usage_error_listing_every_problem(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestInvalidPipeline::test_circle_case
    (run from the CLI)."""
    path = formation_file("circle", """
        from wingman_actors import Formation
        formation = Formation("circle").add_function("node1", str.upper).add_function("node2", str.lower)
        formation.connect("node1", "node2", "node1")
    """)
    assert main(["run", str(path), "-i", "x", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "cycle node1 → node2 → node1 has no conditional edge" in err and "get no input" in err


def test_a_build_that_raises_is_a_usage_error_naming_its_cause(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/framework/cli/test_cli.py (a pipeline registry that fails
    to build the pipeline)."""
    path = formation_file("raises", """
        def build():
            raise ValueError("missing key 'x'")
    """)
    assert main(["run", str(path), "-i", "x", "--no-store"]) == 2
    assert "build() failed: ValueError: missing key 'x'" in capsys.readouterr().err


def test_params_reach_build_as_json_values_and_the_last_one_wins(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/framework/cli/test_cli.py::TestRunCommand::test_run_extra_params
    (``foo=bar, foo=fizz buzz`` gives ``fizz buzz``)."""
    path = str(formation_file("build", BUILD))
    assert main(["run", path, "--no-store", "--param", "factor=5", "--param", "factor=7", "--param", "label=y z"]) == 0
    assert capsys.readouterr().out.strip() == "y z=21"


@pytest.mark.parametrize("bad", ["bad", "=value", " =value"])
def test_a_param_without_a_name_and_a_value_is_a_usage_error_showing_the_form(
    bad: str, formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/framework/cli/test_cli.py::TestRunCommand::test_bad_extra_params
    and ::test_bad_params_key."""
    assert main(["run", str(formation_file("build", BUILD)), "--no-store", "--param", bad]) == 2
    err = capsys.readouterr().err
    assert f"--param {bad.strip()!r}: write NAME=VALUE" in err and "temperature" not in err


def test_an_unknown_param_names_the_options_build_takes(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/framework/cli/test_cli.py::TestRunCommand::test_run_with_invalid_config
    ("Key `node-names` ... is not valid. Did you mean one of these?")."""
    assert main(["run", str(formation_file("build", BUILD)), "--no-store", "--param", "factr=3"]) == 2
    assert "options it takes: factor, label" in capsys.readouterr().err


def test_an_unknown_backend_is_a_usage_error_listing_the_backends(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ported from kedro-org/kedro tests/framework/cli/test_cli.py::TestRunCommand (an unknown
    ``--runner`` class)."""
    assert main(["run", str(formation_file("build", BUILD)), "--no-store", "--backend", "ParallelRunner"]) == 2
    assert "invalid choice: 'ParallelRunner' (choose from 'threads', 'ray')" in capsys.readouterr().err
