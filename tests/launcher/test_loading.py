"""Loading formation modules by path or name, and building their formations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors._launcher.errors import UsageError
from wingman_actors._launcher.loading import load_module
from wingman_actors.testing import ScriptedProvider


def test_a_file_inside_a_package_is_imported_by_its_dotted_name() -> None:
    assert load_module("formations/budget.py").module.__name__ == "formations.budget"


def test_a_package_file_can_use_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "myflows"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "steps.py").write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    (pkg / "flow.py").write_text(
        "from wingman_actors import Formation\nfrom .steps import shout\n"
        "formation = Formation('flow').add_function('shout', shout)\n"
    )
    formation, _ = load_module(str(pkg / "flow.py")).build(None, {})
    assert formation.name == "flow"


def test_build_receives_the_provider_when_it_takes_one(formation_file: Callable[[str, str], Path]) -> None:
    path = formation_file("seen", """
        from wingman_actors import Agent, Formation

        def build(provider=None, size: int = 1):
            return Formation(f"seen-{size}").add_agent("a", Agent("a", provider=provider))
    """)
    provider = ScriptedProvider(["x"])
    formation, took = load_module(str(path)).build(provider, {"size": 3})
    assert took and formation.name == "seen-3"
    assert formation.graph.nodes["a"]["agent"].provider is provider


def test_a_ready_formation_does_not_take_params(formation_file: Callable[[str, str], Path]) -> None:
    path = formation_file("ready", "from wingman_actors import Formation\nformation = Formation('ready')\n")
    with pytest.raises(UsageError, match="takes no options; drop --param size"):
        load_module(str(path)).build(None, {"size": 1})


def test_build_returning_something_else_is_a_usage_error(formation_file: Callable[[str, str], Path]) -> None:
    path = formation_file("wrong", "def build():\n    return 42\n")
    with pytest.raises(UsageError, match="build\\(\\) must return a Formation, got int"):
        load_module(str(path)).build(None, {})


def test_sample_replies_list_becomes_a_cycling_scripted_provider(formation_file: Callable[[str, str], Path]) -> None:
    path = formation_file("canned", "SAMPLE_REPLIES = ['canned answer']\n")
    loaded = load_module(str(path))
    provider = loaded.sample_provider()
    assert loaded.has_samples and isinstance(provider, ScriptedProvider) and provider.cycle


def test_a_name_that_is_neither_path_nor_module_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="neither a formation file nor a module name"):
        load_module("not a module")


def test_an_import_error_inside_the_module_names_the_missing_dependency(
    formation_file: Callable[[str, str], Path],
) -> None:
    path = formation_file("needs", "import package_that_is_not_installed\n")
    with pytest.raises(UsageError, match="ModuleNotFoundError: No module named 'package_that_is_not_installed'"):
        load_module(str(path))


def test_a_loaded_formation_is_a_formation() -> None:
    formation, took = load_module("formations.research").build(None, {})
    assert isinstance(formation, Formation) and took


def test_a_ready_formation_loads_by_name_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    formation, _ = load_module("budget").build(None, {})
    assert formation.name == "budget"


def test_the_readme_path_of_a_ready_formation_works_outside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_module("formations/research.py").module.__name__.endswith("formations.research")
    assert load_module("formations.budget").module.__name__.endswith("formations.budget")


def test_a_module_beside_you_wins_over_a_ready_formation_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "budget.py").write_text("from wingman_actors import Formation\n"
                                        "formation = Formation('mine').add_function('f', str)\n")
    monkeypatch.chdir(tmp_path)
    formation, _ = load_module("budget").build(None, {})
    assert formation.name == "mine"


def test_an_unknown_name_lists_the_ready_formations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="ready formations: budget, research"):
        load_module("budgte")


def test_the_default_statement_is_package_data_beside_the_formation() -> None:
    budget = load_module("budget").module
    assert Path(budget.__file__).parent.joinpath("data", "statement.pdf").is_file()
    assert Path(budget.default_input()).resolve() == Path(budget.__file__).resolve().parent / "data" / "statement.pdf"
