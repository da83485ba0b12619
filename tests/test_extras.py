"""A slim core: each optional library belongs to an extra, and a missing one is a one-line
error naming the extra to install.

Each test runs a child Python in which the extra's modules cannot be imported
(``sys.modules[name] = None``, as when the library is not installed), so nothing is
uninstalled; the child prints the error it got.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from wingman_actors._extras import EXTRAS, require
from wingman_actors.errors import MissingExtraError, WingmanError

ROOT = Path(__file__).resolve().parents[1]


def _hint(extra: str) -> str:
    return f'needs the {extra!r} extra: pip install "wingman-actors[{extra}]"'


def _without(modules: tuple[str, ...], code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python where ``modules`` cannot be imported."""
    prelude = f"import sys\nfor name in {modules!r}:\n    sys.modules[name] = None\n"
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "WINGMAN_PROVIDER", "WINGMAN_MODEL", "WINGMAN_BASE_URL")}
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=env)


_RAISES = """
from wingman_actors.errors import MissingExtraError
try:
    {call}
except MissingExtraError as exc:
    print(type(exc).__name__, exc.extra, exc.name)
    print(exc)
else:
    print("no error")
"""


def _error_of(modules: tuple[str, ...], call: str, setup: str = "") -> list[str]:
    done = _without(modules, textwrap.dedent(setup) + _RAISES.format(call=call))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_anthropic_provider_without_its_extra_names_the_anthropic_extra() -> None:
    out = _error_of(("anthropic",), 'new_provider("anthropic", {"api_key": "k"})',
                    "from wingman_actors.providers import new_provider\n")

    assert out == ["MissingExtraError anthropic anthropic", f"the anthropic provider {_hint('anthropic')}"]


def test_the_budget_formation_without_pypdf_names_the_pdf_extra() -> None:
    out = _error_of(("pypdf",), 'importlib.import_module("formations.budget")', "import importlib\n")

    assert out == ["MissingExtraError pdf pypdf", f"the budget formation {_hint('pdf')}"]


def test_the_server_without_fastapi_names_the_server_extra() -> None:
    out = _error_of(("fastapi",), "import wingman_actors.server")

    assert out == ["MissingExtraError server fastapi", f"the HTTP server {_hint('server')}"]


def test_the_server_without_fastapi_offline_names_the_server_extra_when_imported_not_at_the_first_docs_page() -> None:
    out = _error_of(("fastapi_offline",), "import wingman_actors.server")

    assert out[0] == "MissingExtraError server fastapi_offline"


def test_the_webfetch_tool_without_html2text_names_the_web_extra_before_fetching() -> None:
    out = _error_of(("html2text",), 'builtin_tool("webfetch").execute({"url": "http://127.0.0.1:9/"}, ToolContext())',
                    "from wingman_actors.tools import ToolContext, builtin_tool\n")

    assert out == ["MissingExtraError web html2text", f"the webfetch tool {_hint('web')}"]


def test_skills_without_python_frontmatter_name_the_skills_extra(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nbody\n")

    out = _error_of(("frontmatter",), f"load_skill({str(tmp_path)!r})",
                    "from wingman_actors.orchestration import load_skill\n")

    assert out == ["MissingExtraError skills frontmatter", f"skills (SKILL.md front matter) {_hint('skills')}"]


def test_the_mcp_integration_without_the_sdk_names_the_mcp_extra() -> None:
    out = _error_of(("mcp",), "import wingman_actors.integrations.mcp")

    assert out == ["MissingExtraError mcp mcp", f"the MCP integration {_hint('mcp')}"]


@pytest.mark.parametrize("modules", [("mcp", "mcp_types", "httpx2"), ("mcp_types",), ("httpx2",)])
def test_the_mcp_integration_without_the_sdks_own_modules_names_the_mcp_extra(modules: tuple[str, ...]) -> None:
    out = _error_of(modules, "import wingman_actors.integrations.mcp")  # the SDK's distribution brings all three

    assert out[1] == f"the MCP integration {_hint('mcp')}"


def test_the_ray_backend_without_ray_is_a_setup_error_naming_the_ray_extra() -> None:
    done = _without(("ray",), """
        from wingman_actors import Formation
        from wingman_actors.errors import FormationSetupError
        f = Formation("f").add_function("a", lambda x: x)
        try:
            f.start(backend="ray")
        except FormationSetupError as exc:
            print(exc.problems[0])
    """)

    assert done.stdout.strip() == f"backend 'ray' {_hint('ray')} (or use the default backend='threads')"


def _launcher(modules: tuple[str, ...], *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = f"from wingman_actors.cli import main\nraise SystemExit(main({list(args)!r}))\n"
    if env:
        code = f"import os\nos.environ.update({env!r})\n" + code
    return _without(modules, code)


def test_the_launcher_run_command_without_rich_fails_in_one_line_naming_the_cli_extra() -> None:
    done = _launcher(("rich",), "run", "formations/budget.py")

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"wingman-actors: error: the launcher's terminal view {_hint('cli')}"]


def test_the_launcher_default_store_without_platformdirs_names_the_cli_extra() -> None:
    done = _launcher(("platformdirs",), "runs", env={"WINGMAN_ACTORS_DATA_DIR": ""})

    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"wingman-actors: error: the launcher's default run store {_hint('cli')}"]


def test_the_launcher_run_command_without_pypdf_fails_in_one_line_naming_the_pdf_extra() -> None:
    done = _launcher(("pypdf",), "run", "formations/budget.py", "--no-store")

    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"wingman-actors: error: cannot load formation 'formations/budget.py': the budget formation {_hint('pdf')}"
    ]


def test_the_launcher_serve_command_without_fastapi_fails_in_one_line_naming_the_server_extra() -> None:
    done = _launcher(("fastapi",), "serve", "--port", "0")

    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"wingman-actors: error: the HTTP server {_hint('server')}"]


def test_the_launcher_answers_help_and_version_without_any_extra() -> None:
    every = tuple(module for modules in EXTRAS.values() for module in modules)

    done = _launcher(every, "--version")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("wingman-actors ")


def test_a_function_formation_runs_without_any_extra() -> None:
    every = tuple(module for modules in EXTRAS.values() for module in modules)

    done = _without(every, """
        from wingman_actors import Formation
        f = Formation("two").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
        print(f.run(1).outputs["b"])
    """)

    assert (done.stdout.strip(), done.stderr) == ("4", "")


def test_require_turns_a_missing_module_of_the_extra_into_a_missing_extra_error() -> None:
    with pytest.raises(MissingExtraError) as info, require("pdf", "reading PDFs"):
        raise ModuleNotFoundError("No module named 'pypdf'", name="pypdf")

    assert str(info.value) == f"reading PDFs {_hint('pdf')}"
    assert isinstance(info.value, WingmanError) and isinstance(info.value, ImportError)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_require_lets_a_missing_module_of_another_library_through_unchanged() -> None:
    with pytest.raises(ModuleNotFoundError) as info, require("pdf", "reading PDFs"):
        raise ModuleNotFoundError("No module named 'cryptography'", name="cryptography")

    assert not isinstance(info.value, MissingExtraError)


def _pyproject() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        extras: dict[str, list[str]] = tomllib.load(file)["project"]["optional-dependencies"]
    return extras


def test_the_extras_known_to_the_code_are_those_pyproject_declares() -> None:
    declared = set(_pyproject()) - {"all", "dev", "docs", "peers"}  # for working on wingman-actors, not using it

    assert declared == set(EXTRAS)


def test_the_all_extra_installs_every_extra() -> None:
    (only,) = _pyproject()["all"]

    assert only == f"wingman-actors[{','.join(EXTRAS)}]"


def test_the_core_dependencies_are_pykka_networkx_pydantic_and_httpx() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        core = tomllib.load(file)["project"]["dependencies"]
    names = sorted(dep.split(">")[0].split("<")[0].split("[")[0].strip() for dep in core)

    assert names == ["httpx", "httpx-sse", "networkx", "pydantic", "pykka"]


def test_importing_formation_loads_no_module_of_the_heavy_optional_libraries() -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        from wingman_actors import Formation
        heavy = ("rich", "pygments", "fastapi", "starlette", "anthropic", "pypdf", "yaml", "html2text", "frontmatter")
        print(sorted(name for name in sys.modules if name.partition(".")[0] in heavy))
    """)], capture_output=True, text=True, timeout=60, check=True)

    assert done.stdout.strip() == "[]"


def test_the_launcher_run_command_on_ray_without_ray_fails_in_one_line_naming_the_ray_extra() -> None:
    done = _launcher(("ray",), "run", "formations/budget.py", "--no-store", "--backend", "ray")

    assert done.returncode == 2
    assert [line for line in done.stderr.splitlines() if line.startswith("wingman-actors:")] == [
        f"wingman-actors: error: backend 'ray' {_hint('ray')} (or use the default --backend threads)"
    ]
