"""The registry of functions and predicates that formation declarations name."""

from __future__ import annotations

import types

import pytest

from wingman_actors.server import FunctionRegistry, function, predicate


def test_module_is_scanned_for_marked_callables() -> None:
    registry = FunctionRegistry.from_modules(["tests.server.functions_fixture"], entry_points=False)
    assert set(registry.functions) == {"clean", "words", "shout", "explode", "half_character", "remember", "recall",
                                       "gated", "counted", "ask", "explain_failure", "peek", "node_thread",
                                       "sees_running", "joined", "lap"}
    assert set(registry.predicates) == {"is_long", "is_short", "one_lap"}
    assert registry.functions["shout"]("a") == "A"


def test_two_callables_with_one_name_are_refused() -> None:
    one, two = types.ModuleType("one"), types.ModuleType("two")
    one.f = function(name="same")(lambda x: x)  # type: ignore[attr-defined]
    two.g = function(name="same")(lambda x: x)  # type: ignore[attr-defined]
    registry = FunctionRegistry()
    registry.load_module(one)
    with pytest.raises(ValueError, match="two functions are named 'same'"):
        registry.load_module(two)


def test_unimportable_module_names_the_flag() -> None:
    with pytest.raises(ImportError, match="--functions"):
        FunctionRegistry.from_modules(["no.such.module"], entry_points=False)


def test_predicate_needs_an_identifier_name() -> None:
    with pytest.raises(ValueError, match="name="):
        predicate(name="not an identifier")(lambda x: True)


def test_unmarked_callables_are_not_registered() -> None:
    module = types.ModuleType("plain")
    module.helper = lambda x: x  # type: ignore[attr-defined]
    registry = FunctionRegistry()
    assert registry.load_module(module) == 0


def test_entry_point_group_loads_without_error_when_empty() -> None:
    assert FunctionRegistry().load_entry_points("wingman_actors.tests.no_such_group") == 0
