"""A stored formation made runnable: its declaration loaded, with those of the formations it
nests, its agents built with their providers (closed when the run is done)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from ..formation import Formation
from ._declaration import FormationDecl, setup_error
from ._errors import ApiError
from ._nesting import agent_ids, build_nested, declaration_of, load_nested
from ._schemas import FormationOut

if TYPE_CHECKING:
    from ._context import ServerContext

__all__ = ["load_formation", "runnable"]


def load_formation(ctx: ServerContext, id: str) -> tuple[FormationOut, FormationDecl]:
    """Formation ``id``'s record and declaration (404 for an unknown id)."""
    record = ctx.store.get_formation(id)
    return record, declaration_of(record)


@contextmanager
def runnable(ctx: ServerContext, decl: FormationDecl, id: str | None = None) -> Iterator[Formation]:
    """The formation (stored as ``id``) with the formations it nests built from their
    current declarations, and every agent built with its provider (closed afterwards)."""
    nested = load_nested(ctx.store, decl, id)
    with ExitStack() as stack:
        agents = {}
        missing = []
        for agent_id, users in agent_ids(decl, nested).items():
            try:
                record = ctx.store.get_agent(agent_id)
            except ApiError:
                named = ", ".join(repr(u) for u in users)
                missing.append(f"agent {agent_id!r} (named by formation {named}) no longer exists; update the "
                               "formation with PUT /formations/{id}")
                continue
            agents[agent_id] = stack.enter_context(ctx.runnable_agent(record))
        if missing:
            raise setup_error(decl.name, missing)
        yield build_nested(decl, ctx.functions, agents, nested, id)
