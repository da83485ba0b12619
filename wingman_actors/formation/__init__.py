"""Formations: graphs of function, agent, fleet and map nodes, declared with networkx.

The declaration layer: :class:`Formation` (the graph and its builder), the node contract
and problem finders (:mod:`.validation`),
:func:`compile_plan` (validation into a :class:`Plan`), :func:`to_mermaid` and
:func:`to_dot` (rendering), :func:`compatible` (static type checks) and
:class:`NodeFailure` (what an error edge carries) and :class:`RunOptions` (the options of
a run, as one value); ``NestedRunError`` (a formation node's inner run failed) and
``ForkPointError`` (a fork's ``at`` names no visit of the run).
"""

from typing import TYPE_CHECKING, Any

from ._failure import NodeFailure
from ._graph import Formation
from ._options import RunOptions
from ._plan import EdgeSpec, NodeSpec, Plan, compile_plan
from ._render import to_dot, to_mermaid
from ._typecheck import compatible

if TYPE_CHECKING:
    from ._fork import ForkPointError
    from ._nesting import NestedRunError

__all__ = [
    "EdgeSpec", "ForkPointError", "Formation", "NestedRunError", "NodeFailure", "NodeSpec", "Plan", "RunOptions",
    "compatible", "compile_plan", "to_dot", "to_mermaid",
]

_LAZY = {"ForkPointError": "._fork", "NestedRunError": "._nesting"}  # their modules load the runtime


def __getattr__(name: str) -> Any:
    """The errors of forks and nested runs, loaded on first use (importing the formation
    package stays as light as declaring a formation needs)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
