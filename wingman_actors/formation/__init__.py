"""Formations: graphs of function, agent, fleet and map nodes, declared with networkx.

The declaration layer: :class:`Formation` (the graph and its builder), the node contract
and problem finders (:mod:`.validation`),
:func:`compile_plan` (validation into a :class:`Plan`), :func:`to_mermaid` and
:func:`to_dot` (rendering), :func:`compatible` (static type checks) and
:class:`NodeFailure` (what an error edge carries).
"""

from .failure import NodeFailure
from .graph import Formation
from .plan import EdgeSpec, NodeSpec, Plan, compile_plan
from .render import to_dot, to_mermaid
from .typecheck import compatible

__all__ = [
    "EdgeSpec", "Formation", "NodeFailure", "NodeSpec", "Plan", "compatible", "compile_plan", "to_dot", "to_mermaid",
]
