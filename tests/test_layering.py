"""The package keeps DESIGN.md's layers: each layer imports only from the layers below it.

Every module of ``wingman_actors`` is parsed with ``ast``; each import of a project module
(at module level outside ``if TYPE_CHECKING``, and inside functions too) must point to its
own layer's unit or a lower layer. Layers, top to bottom, as DESIGN.md's "Layers" draws
them; the private top-level helpers sit in the lowest layer they fit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import wingman_actors

PACKAGE = Path(wingman_actors.__file__).parent

# Top to bottom. A unit is a top-level module or subpackage of wingman_actors; units of one
# layer may import each other only where the layer says so (the top layer's parts do).
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    # the launcher, the HTTP server, the bench, and the testkit and pytest plugin for users
    ("launcher and server", frozenset({"cli", "__main__", "_launcher", "server", "_bench", "testing", "pytest_plugin"})),
    ("formation", frozenset({"formation"})),
    ("backends", frozenset({"backends"})),
    ("store", frozenset({"store"})),
    ("actors", frozenset({"actors"})),
    ("orchestration", frozenset({"orchestration"})),
    ("integrations", frozenset({"integrations"})),
    ("agents", frozenset({"agents"})),
    # the bus of agent hooks (session, model, tool, sub-agent events); formation events live
    # in formation/events.py
    ("events", frozenset({"events"})),
    ("tools", frozenset({"tools"})),
    ("providers", frozenset({"providers"})),
    # core.py and the helpers that build on errors.py only. The package's own __init__ is
    # here: at run time it imports only _lazy (its public names load on first use), so
    # `from wingman_actors import __version__` is fine anywhere.
    ("core", frozenset({"core", "_cancel", "_interrupts", "_extras", "__init__"})),
    # no project imports at all: errors.py, and the helpers that lean on the standard
    # library or pydantic only (_trusted: pydantic instances without validation; _graphs:
    # networkx helpers shared by formation and store; _event_loop: the actors' asyncio loop;
    # _timeouts: the one check of time limits)
    ("errors", frozenset({"errors", "_lazy", "_trusted", "_graphs", "_event_loop", "_timeouts"})),
)
MUTUAL = frozenset({"launcher and server"})  # layers whose units may import each other

# (importing module, imported unit): why the import may point upwards. Keep this short.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("agents/_agent.py", "orchestration"): (
        "Agent(delegates=..., skills=..., blackboard=...) equips the tools that orchestration/ "
        "defines (orchestration._equip), and orchestration builds on Agent and Session; the "
        "import is inside Agent's tool resolution, made only when one of those options is set"
    ),
    ("agents/_fleet.py", "integrations"): "OpenTelemetry spans (integrations/otel.py, see below)",
    ("agents/_model_calls.py", "integrations"): "OpenTelemetry spans (integrations/otel.py, see below)",
    ("agents/_session.py", "integrations"): (
        "the session opens the OpenTelemetry spans of integrations/otel.py (invoke_agent, "
        "chat, execute_tool); otel.py imports only core.py and the version, so it is below the "
        "agent layer in fact, while its public home stays wingman_actors.integrations.otel"
    ),
    ("agents/_tool_steps.py", "integrations"): "OpenTelemetry spans (integrations/otel.py, see above)",
    ("agents/_waiting.py", "store"): (
        "Session(store=RunStore(...)) journals a suspended session as a one-node run (its FormationShape, "
        "the store's errors); imported inside functions, only when a session is given a store"
    ),
}

RANK = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _unit_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.stem if len(rel.parts) == 1 else rel.parts[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _targets(path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The project units ``node`` imports (``wingman_actors.x...`` -> ``x``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level == 0:
        names = [node.module or ""]
    else:
        package = list(path.relative_to(PACKAGE.parent).parent.parts)
        base = package[: len(package) - (node.level - 1)]
        if node.module:
            names = [".".join([*base, node.module])]
        else:  # from . import x, y: modules or names of that package
            names = [".".join([*base, alias.name]) for alias in node.names]
    for name in names:
        parts = name.split(".")
        if parts[0] != "wingman_actors":
            continue
        if len(parts) == 1 or parts[1] not in _UNITS:
            yield "__init__"  # the package itself (`from wingman_actors import __version__`)
        else:
            yield parts[1]


_UNITS = frozenset(
    p.stem if p.is_file() else p.name
    for p in PACKAGE.iterdir()
    if (p.is_file() and p.suffix == ".py") or (p.is_dir() and (p / "__init__.py").is_file())
)


def _violations() -> list[str]:
    found = []
    for path in _modules():
        me = _unit_of(path)
        rel = path.relative_to(PACKAGE).as_posix()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            for unit in _targets(path, node):
                if unit == me or (rel, unit) in EXCEPTIONS:
                    continue
                mine, theirs = RANK[me], RANK[unit]
                if theirs > mine or (theirs == mine and LAYERS[mine][0] in MUTUAL):
                    continue
                found.append(f"{rel}:{node.lineno} ({LAYERS[mine][0]}) imports {unit} ({LAYERS[theirs][0]})")
    return found


def test_every_module_of_the_package_has_a_layer() -> None:
    unplaced = sorted(_UNITS - set(RANK))
    assert unplaced == [], f"add {unplaced} to LAYERS in tests/test_layering.py (the lowest layer they fit)"


def test_each_layer_imports_only_from_the_layers_below_it() -> None:
    assert _violations() == []


@pytest.mark.parametrize(("module", "unit"), sorted(EXCEPTIONS))
def test_each_listed_exception_is_still_needed(module: str, unit: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    assert unit in {u for node in _imports(tree) for u in _targets(PACKAGE / module, node)}, (
        f"{module} no longer imports {unit}: remove the exception"
    )


def test_the_layer_check_sees_an_upward_import_inside_a_function() -> None:
    source = "def f():\n    from ..formation import Formation\n    return Formation\n"
    tree = ast.parse(source)
    module = PACKAGE / "providers" / "_example.py"  # resolved relative to providers/, never written

    assert [u for node in _imports(tree) for u in _targets(module, node)] == ["formation"]


def test_the_layer_check_skips_imports_only_made_for_type_checking() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..formation import Formation\n"
    module = PACKAGE / "providers" / "_example.py"

    assert [u for node in _imports(ast.parse(source)) for u in _targets(module, node)] == []
