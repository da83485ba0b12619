"""Formations: graphs of function, agent, fleet and map nodes, declared with networkx.

The declaration layer: :class:`Formation` (the graph and its builder), the node contract
and problem finders (:mod:`.validation`),
:func:`compile_plan` (validation into a :class:`Plan`), :func:`to_mermaid` and
:func:`to_dot` (rendering), :func:`compatible` (static type checks) and
:class:`NodeFailure` (what an error edge carries) and :class:`RunOptions` (the options of
a run, as one value).
"""

from ._failure import NodeFailure
from ._graph import Formation
from ._options import RunOptions
from ._plan import EdgeSpec, NodeSpec, Plan, compile_plan
from ._render import to_dot, to_mermaid
from ._typecheck import compatible

__all__ = [
    "EdgeSpec", "Formation", "NodeFailure", "NodeSpec", "Plan", "RunOptions", "compatible", "compile_plan", "to_dot",
    "to_mermaid",
]
