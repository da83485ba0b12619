"""Every exception class of the package is a WingmanError and is drawn in the tree at the
top of ``wingman_actors/errors.py`` (or is listed here with the reason it is not)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re

import pytest

import wingman_actors
from wingman_actors import errors
from wingman_actors.errors import MissingExtraError, NoStoreError, WingmanError

# Exception classes that are deliberately not WingmanErrors, and why.
NOT_ERRORS: dict[str, str] = {
    "wingman_actors._interrupts.RunSuspended": (
        "a BaseException by design: it unwinds the visit that called interrupt(), and user code's "
        "`except Exception` must not swallow it"
    ),
    "wingman_actors._launcher.errors.Terminated": "SIGTERM as a KeyboardInterrupt, so a run stops as on Ctrl-C",
    "wingman_actors.actors._payloads._TooDeep": "private signal of the payload walk, caught in its module",
    "wingman_actors.agents._result.SpentOnFailure": (
        "private carrier of a failed agent or fleet attempt's own error and what it spent, from the node's "
        "process() to its actor (across a Ray call too), unwrapped there: never reaches a user"
    ),
    "wingman_actors.store._codec._Unsupported": "private signal of the journal codec, turned into a SerializationError",
    "wingman_actors.server._body._NotJson": "private signal of the JSON body parser, turned into an HTTP 400",
    "wingman_actors.formation._plan.ConditionRaised": (
        "private signal of a raising when= condition, turned by routing into the run's FormationRuntimeError "
        "naming the edge"
    ),
    "wingman_actors.server._streaming.Reported": (
        "internal marker of the server: a run error whose error event was already streamed; "
        "caught by the streaming response, never seen by a client or user"
    ),
}


def _package_modules() -> list[str]:
    names = [
        info.name
        for info in pkgutil.walk_packages(wingman_actors.__path__, "wingman_actors.")
        if not info.name.endswith("__main__")  # runs the launcher
    ]
    return sorted(names)


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _package_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == module.__name__):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _drawn() -> set[str]:
    """The class names drawn in the tree (``├── Name`` / ``└── Name``), and its root."""
    doc = errors.__doc__ or ""
    tree = doc[doc.index("WingmanError\n"):doc.index("Not errors")]
    return {*re.findall(r"[├└]── (\w+)", tree), "WingmanError"}


def test_the_walk_finds_the_exception_classes_of_every_layer() -> None:
    found = _exception_classes()

    for name in ("wingman_actors.errors.AgentError", "wingman_actors.store._errors.StoreError",
                 "wingman_actors.orchestration._skills.SkillError",
                 "wingman_actors.integrations.mcp._connection.MCPConnectionError"):
        assert name in found


def test_every_exception_class_of_the_package_is_a_wingman_error_or_listed_with_a_reason() -> None:
    strays = sorted(name for name, cls in _exception_classes().items()
                    if not issubclass(cls, WingmanError) and name not in NOT_ERRORS)

    assert strays == [], f"make these WingmanError subclasses (keep a builtin as second base): {strays}"


def test_every_listed_exception_to_the_rule_still_exists_and_is_still_outside() -> None:
    found = _exception_classes()

    for name in NOT_ERRORS:
        assert name in found and not issubclass(found[name], WingmanError), name


def test_every_wingman_error_is_drawn_in_the_tree_of_errors_py() -> None:
    names = {cls.__name__ for cls in _exception_classes().values() if issubclass(cls, WingmanError)}

    assert sorted(names - _drawn()) == []


def test_the_tree_of_errors_py_draws_no_class_that_does_not_exist() -> None:
    names = {cls.__name__ for cls in _exception_classes().values() if issubclass(cls, WingmanError)}

    assert sorted(_drawn() - names) == []


def test_the_tree_draws_each_error_under_its_base_class() -> None:
    doc = errors.__doc__ or ""
    lines = doc[doc.index("WingmanError\n"):doc.index("Not errors")].splitlines()
    by_name = {cls.__name__: cls for cls in _exception_classes().values() if issubclass(cls, WingmanError)}
    parents: list[tuple[int, str]] = [(-1, "WingmanError")]
    for line in lines[1:]:
        match = re.search(r"[├└]── (\w+)", line)
        if not match:
            continue
        depth = match.start()
        while parents[-1][0] >= depth:
            parents.pop()
        name = match.group(1)
        assert issubclass(by_name[name], by_name[parents[-1][1]]), f"{name} is drawn under {parents[-1][1]}"
        parents.append((depth, name))


def test_the_errors_that_left_the_builtins_are_still_caught_as_before() -> None:
    from wingman_actors.orchestration import SkillError
    from wingman_actors.server._cli import ServeError

    assert issubclass(NoStoreError, RuntimeError)
    assert issubclass(SkillError, ValueError)
    assert issubclass(ServeError, ValueError)
    assert issubclass(MissingExtraError, ModuleNotFoundError)


@pytest.mark.parametrize("error", [
    MissingExtraError("pdf", "the budget formation", "pypdf"),
    NoStoreError("interrupt() needs a journalled formation run"),
])
def test_the_new_wingman_errors_survive_pickling(error: WingmanError) -> None:
    copy = pickle.loads(pickle.dumps(error))

    assert (type(copy), str(copy)) == (type(error), str(error))
