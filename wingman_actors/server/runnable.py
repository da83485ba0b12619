"""A stored formation made runnable: its declaration loaded, its agents built with their
providers (closed when the run is done)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from ..formation import Formation
from .declaration import FormationDecl, build_formation, setup_error
from .errors import ApiError
from .schemas import FormationOut

if TYPE_CHECKING:
    from .context import ServerContext

__all__ = ["load_formation", "runnable"]


def load_formation(ctx: ServerContext, id: str) -> tuple[FormationOut, FormationDecl]:
    """Formation ``id``'s record and declaration (404 for an unknown id)."""
    record = ctx.store.get_formation(id)
    decl = FormationDecl.model_validate({"name": record.name, "nodes": record.nodes, "edges": record.edges})
    return record, decl


@contextmanager
def runnable(ctx: ServerContext, decl: FormationDecl) -> Iterator[Formation]:
    """The formation with every agent built with its provider (closed afterwards)."""
    with ExitStack() as stack:
        agents = {}
        missing = []
        for agent_id in dict.fromkeys(n.agent_id for n in decl.nodes if n.agent_id):
            try:
                record = ctx.store.get_agent(agent_id)
            except ApiError:
                missing.append(f"agent {agent_id!r} no longer exists; update the formation with PUT /formations/{{id}}")
                continue
            agents[agent_id] = stack.enter_context(ctx.runnable_agent(record))
        if missing:
            raise setup_error(decl.name, missing)
        yield build_formation(decl, ctx.functions, agents)
