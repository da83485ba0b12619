"""Functions, predicates and tools that declarations sent over HTTP may name.

A JSON declaration cannot carry Python code, so function nodes and edge conditions name
callables registered on the server, and agents name tools. Mark them in a module with
:func:`function` and :func:`predicate`, or make tools with :func:`wingman_actors.tool`,
then load the module at start (``wingman-actors serve --functions my.module``) or list it in
the ``wingman_actors.functions`` entry-point group of a package. An agent's ``"tools"``
may then name the module's ``@tool`` functions beside the built-in tools.

Example:
    >>> # my/module.py
    >>> from wingman_actors.server._functions import function, predicate
    >>> @function
    ... def shout(text: str) -> str:
    ...     return text.upper()
    >>> @predicate(name="is_long")
    ... def long_text(text: str) -> bool:
    ...     return len(text) > 100
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, Literal, TypeVar, overload

from ..tools import BUILTIN_TOOL_NAMES, FunctionTool, Tool

__all__ = ["ENTRY_POINT_GROUP", "RESERVED_TOOL_NAMES", "FunctionRegistry", "function", "predicate"]

ENTRY_POINT_GROUP = "wingman_actors.functions"
"""Entry-point group whose values are modules (or marked callables) to load at start."""

RESERVED_TOOL_NAMES = (*BUILTIN_TOOL_NAMES, "ask_human", "list_agents", "delegate")
"""Tool names of the server itself (built-in, ``ask_human``, delegation): a ``@tool`` may not take them."""

_MARK = "__wingman_server__"
F = TypeVar("F", bound=Callable[..., Any])
Kind = Literal["function", "predicate", "tool"]


def _marker(kind: Kind, name: str | None) -> Callable[[F], F]:
    def mark(fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"@{kind} decorates a callable, got {type(fn).__name__}")
        label = name or getattr(fn, "__name__", None)
        if not isinstance(label, str) or not label.isidentifier():
            raise ValueError(f"@{kind} needs name='an_identifier' for {fn!r}")
        setattr(fn, _MARK, (kind, label))
        return fn

    return mark


@overload
def function(fn: F, /) -> F: ...
@overload
def function(*, name: str | None = None) -> Callable[[F], F]: ...
def function(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Mark ``fn`` as a formation function node callable, under its ``__name__`` or ``name``."""
    mark = _marker("function", name)
    return mark if fn is None else mark(fn)


@overload
def predicate(fn: F, /) -> F: ...
@overload
def predicate(*, name: str | None = None) -> Callable[[F], F]: ...
def predicate(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Mark ``fn`` as an edge condition (a predicate on the upstream output)."""
    mark = _marker("predicate", name)
    return mark if fn is None else mark(fn)


class FunctionRegistry:
    """The functions, predicates and tools a server knows, by name.

    Raises:
        ValueError: two callables (or tools) claim the same name, or a tool takes the name
            of one of the server's own tools.
        ImportError: a module cannot be imported (the message names it).
    """

    def __init__(self) -> None:
        self.functions: dict[str, Callable[..., Any]] = {}
        self.predicates: dict[str, Callable[[Any], bool]] = {}
        self.tools: dict[str, Tool] = {}
        self._origin: dict[tuple[str, str], str] = {}

    def add(self, kind: Kind, name: str, fn: Any, origin: str = "") -> None:
        """Register ``fn`` as ``kind`` ``name`` (a tool: a :class:`~wingman_actors.tools.FunctionTool`)."""
        tables: dict[str, dict[str, Any]] = {"function": self.functions, "predicate": self.predicates,
                                             "tool": self.tools}
        table = tables[kind]
        if kind == "tool" and name in RESERVED_TOOL_NAMES:
            raise ValueError(
                f"the @tool {name!r} of {origin or '?'} takes the name of a tool of the server "
                f"({', '.join(RESERVED_TOOL_NAMES)}); rename it with @tool(name=...)"
            )
        existing = table.get(name)
        if existing is not None and existing is not fn:
            raise ValueError(
                f"two {kind}s are named {name!r} (from {self._origin[(kind, name)] or '?'} and {origin or '?'}); "
                f"rename one with @{kind}(name=...)"
            )
        table[name] = fn
        self._origin[(kind, name)] = origin

    def load_module(self, module: str | ModuleType) -> int:
        """Register every marked callable of ``module``; return how many."""
        if isinstance(module, str):
            try:
                module = importlib.import_module(module)
            except ImportError as exc:
                raise ImportError(
                    f"cannot import functions module {module!r}: {exc}; check --functions and sys.path"
                ) from exc
        found = 0
        for _, value in inspect.getmembers(module):
            if isinstance(value, FunctionTool):
                self.add("tool", value.name, value, module.__name__)
                found += 1
                continue
            mark = getattr(value, _MARK, None)
            if isinstance(mark, tuple) and len(mark) == 2:
                kind, name = mark
                self.add(kind, name, value, module.__name__)
                found += 1
        return found

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> int:
        """Load every entry point of ``group`` (a module, or one marked callable)."""
        found = 0
        for ep in importlib.metadata.entry_points(group=group):
            value = ep.load()
            if isinstance(value, ModuleType):
                found += self.load_module(value)
                continue
            if isinstance(value, FunctionTool):
                self.add("tool", value.name, value, ep.value)
                found += 1
                continue
            mark = getattr(value, _MARK, None)
            if not isinstance(mark, tuple):
                raise ValueError(
                    f"entry point {ep.name!r} = {ep.value!r} of group {group!r} is neither a module, a "
                    "callable marked with @function / @predicate, nor a @tool"
                )
            self.add(mark[0], mark[1], value, ep.value)
            found += 1
        return found

    @classmethod
    def from_modules(cls, modules: Iterable[str], *, entry_points: bool = True) -> FunctionRegistry:
        """A registry loaded from ``modules`` (and the entry-point group when asked)."""
        registry = cls()
        for module in modules:
            registry.load_module(module)
        if entry_points:
            registry.load_entry_points()
        return registry
