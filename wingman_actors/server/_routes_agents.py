"""``/agents``: stored agent configurations.

The values of an agent's provider ``headers`` (``Authorization``...) are secrets, as keys
are: answers show each header's name with the value ``[redacted]``, the server masks the
values of credential headers wherever its text goes (see
:func:`~wingman_actors.server._redact.header_secrets`), and an update that sends a header
back as ``[redacted]`` keeps its stored value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Response

from ._deps import Ctx
from ._errors import invalid
from ._ids import now
from ._redact import MASK, header_secrets, masked_headers
from ._schemas import AgentCreate, AgentOut, AgentUpdate, StatusOut

__all__ = ["router"]

router = APIRouter(prefix="/agents", tags=["agents"])


@router.post("", status_code=201, summary="Create an agent")
async def create(body: AgentCreate, ctx: Ctx, response: Response) -> AgentOut:
    """Tools are built-in names or the ``@tool`` functions of the server's ``--functions``
    modules; the provider's options and the MCP servers' programs are checked now (the
    provider's key, and the MCP connection, at the first run)."""
    fields = body.model_dump()
    fields["mcp"] = [server.model_dump(exclude_defaults=True) for server in body.mcp]
    fields["options"] = _kept_headers(fields["options"], {})
    draft = AgentOut(id="", created_at=now(), updated_at=now(), **fields)
    await ctx.pool.run(ctx.check_agent, draft)
    ctx.redactor.add(*header_secrets(fields["options"]))
    agent = await ctx.pool.run(ctx.store.create_agent, fields)
    response.headers["Location"] = f"/agents/{agent.id}"
    return _shown(agent)


@router.get("", summary="List agents (newest first)")
async def list_all(ctx: Ctx) -> list[AgentOut]:
    """Every stored agent (header values masked)."""
    return [_shown(agent) for agent in await ctx.pool.run(ctx.store.list_agents)]


@router.get("/{id}", summary="Get an agent")
async def get_one(id: str, ctx: Ctx) -> AgentOut:
    """404 for an unknown id. The values of ``options.headers`` are masked."""
    return _shown(await ctx.pool.run(ctx.store.get_agent, id))


@router.put("/{id}", summary="Update an agent (omitted fields unchanged)")
async def update(id: str, body: AgentUpdate, ctx: Ctx) -> AgentOut:
    """A partial update: only the fields present change; ``null`` clears provider, model,
    output_schema, max_steps and context_budget, and resets tools, options and mcp to empty."""
    changes = body.model_dump(exclude_unset=True)
    if body.mcp is not None:
        changes["mcp"] = [server.model_dump(exclude_defaults=True) for server in body.mcp]
    if "name" in changes and changes["name"] is None:
        raise invalid("name", "cannot be null; give the agent a name")
    if changes.get("options"):
        stored = (await ctx.pool.run(ctx.store.get_agent, id)).options.get("headers")
        changes["options"] = _kept_headers(changes["options"], stored if isinstance(stored, Mapping) else {})
        ctx.redactor.add(*header_secrets(changes["options"]))
    return _shown(await ctx.pool.run(ctx.store.update_agent, id, changes, ctx.check_agent))


def _shown(agent: AgentOut) -> AgentOut:
    """``agent`` as an answer shows it: its header values masked."""
    options = masked_headers(agent.options)
    return agent if options is agent.options else agent.model_copy(update={"options": options})


def _kept_headers(options: dict[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with each header sent back masked given its stored value (a client that
    updates an agent with the options a GET showed keeps its headers); a masked header
    with no stored value is refused."""
    headers = options.get("headers")
    if not isinstance(headers, Mapping) or MASK not in headers.values():
        return options
    kept = dict(headers)
    for name, value in headers.items():
        if value == MASK:
            if not isinstance(stored.get(name), str):
                raise invalid(f"options.headers.{name}", f"{MASK} is how answers show a stored header's value; "
                                                         "send the header's value itself")
            kept[name] = stored[name]
    return {**options, "headers": kept}


@router.delete("/{id}", summary="Delete an agent")
async def delete(id: str, ctx: Ctx) -> StatusOut:
    """``{"status": "deleted"}``; 404 for an unknown id."""
    await ctx.pool.run(ctx.store.delete_agent, id)
    ctx.providers.forget(id)
    return StatusOut(status="deleted")
