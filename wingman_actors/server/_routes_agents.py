"""``/agents``: stored agent configurations."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ._deps import Ctx
from ._errors import invalid
from ._ids import now
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
    draft = AgentOut(id="", created_at=now(), updated_at=now(), **fields)
    await ctx.pool.run(ctx.check_agent, draft)
    agent = await ctx.pool.run(ctx.store.create_agent, fields)
    response.headers["Location"] = f"/agents/{agent.id}"
    return agent


@router.get("", summary="List agents (newest first)")
async def list_all(ctx: Ctx) -> list[AgentOut]:
    """Every stored agent."""
    return await ctx.pool.run(ctx.store.list_agents)


@router.get("/{id}", summary="Get an agent")
async def get_one(id: str, ctx: Ctx) -> AgentOut:
    """404 for an unknown id."""
    return await ctx.pool.run(ctx.store.get_agent, id)


@router.put("/{id}", summary="Update an agent (omitted fields unchanged)")
async def update(id: str, body: AgentUpdate, ctx: Ctx) -> AgentOut:
    """A partial update: only the fields present change; ``null`` clears provider, model,
    output_schema, max_steps and context_budget, and resets tools, options and mcp to empty."""
    changes = body.model_dump(exclude_unset=True)
    if body.mcp is not None:
        changes["mcp"] = [server.model_dump(exclude_defaults=True) for server in body.mcp]
    if "name" in changes and changes["name"] is None:
        raise invalid("name", "cannot be null; give the agent a name")
    return await ctx.pool.run(ctx.store.update_agent, id, changes, ctx.check_agent)


@router.delete("/{id}", summary="Delete an agent")
async def delete(id: str, ctx: Ctx) -> StatusOut:
    """``{"status": "deleted"}``; 404 for an unknown id."""
    await ctx.pool.run(ctx.store.delete_agent, id)
    ctx.providers.forget(id)
    return StatusOut(status="deleted")
