"""``/health`` and ``/provider``: the provider registry and the credential store."""

from __future__ import annotations

from fastapi import APIRouter, Query

from ..errors import AgentError, ErrorKind
from ..providers import ProviderMeta, get_provider_meta, list_providers
from ._context import ServerContext
from ._deps import ONCE, Ctx
from ._errors import ApiError, from_agent_error, invalid
from ._models import ModelOut, list_models
from ._schemas import AuthSetIn, AuthStatusOut, ProviderOut, StatusOut

__all__ = ["router"]

router = APIRouter()


def _out(meta: ProviderMeta) -> ProviderOut:
    return ProviderOut(id=meta.id, name=meta.name, auth_types=list(meta.auth_types), description=meta.description,
                       env=list(meta.env))


def _known() -> list[str]:
    return [m.id for m in list_providers()]


@router.get("/health", tags=["health"], summary="Health check (needs no token)")
async def health() -> StatusOut:
    """Always ``{"status": "ok"}`` while the server runs."""
    return StatusOut(status="ok")


@router.get("/provider", tags=["provider"], summary="List registered providers")
async def list_all() -> list[ProviderOut]:
    """Every provider the server can build, with how it authenticates."""
    return [_out(m) for m in list_providers()]


@router.get("/provider/auth", tags=["provider"], summary="Which providers have a stored credential")
async def auth_status(ctx: Ctx) -> AuthStatusOut:
    """A ``configured`` flag per provider; keys are never returned (only their last four characters)."""
    providers, updated = await ctx.pool.run(ctx.store.auth_status)
    return AuthStatusOut(providers=providers, updated_at=updated)


@router.put("/provider/auth", tags=["provider"], summary="Store credentials for one or more providers")
async def set_auth(body: AuthSetIn, ctx: Ctx) -> StatusOut:
    """Credentials given replace those stored for the same providers; others are kept."""
    known = _known()
    unknown = sorted(set(body.providers) - set(known))
    if unknown:
        raise ApiError(
            400, f"providers: unknown provider(s) {unknown}; the providers are: {', '.join(known)}",
            fields=[f"providers.{p}" for p in unknown],
        )
    if not body.providers:
        raise invalid("providers", "give at least one provider, e.g. {\"anthropic\": {\"type\": \"api_key\", \"key\": \"...\"}}")
    creds = {p: (c.type, c.key) for p, c in body.providers.items()}
    ctx.redactor.add(*(c.key for c in body.providers.values()))  # before any run can use them
    await ctx.pool.run(ctx.store.set_auth, creds)
    return StatusOut(status="ok")


@router.delete("/provider/auth/{provider}", tags=["provider"], summary="Forget a provider's credential")
async def delete_auth(provider: str, ctx: Ctx) -> StatusOut:
    """400 for an unknown provider id, 404 when the provider has no stored credential."""
    if provider not in _known():
        raise ApiError(400, f"unknown provider {provider!r}; the providers are: {', '.join(_known())}")
    await ctx.pool.run(ctx.store.delete_auth, provider)
    return StatusOut(status="deleted")


@router.get("/provider/{id}", tags=["provider"], summary="One provider's metadata")
async def get_one(id: str) -> ProviderOut:
    """404 (listing the known ids) for an unknown provider."""
    try:
        return _out(get_provider_meta(id))
    except AgentError:
        raise ApiError(404, f"provider not found: {id}; the providers are: {', '.join(_known())}") from None


def _models(ctx: ServerContext, id: str, agent_id: str | None) -> list[ModelOut]:
    try:
        get_provider_meta(id)
    except AgentError:
        raise ApiError(404, f"provider not found: {id}; the providers are: {', '.join(_known())}") from None
    options = ctx.provider_options(id, agent_id)
    try:
        return list_models(id, options, timeout=min(30.0, ctx.config.request_timeout))
    except AgentError as exc:
        if exc.kind is ErrorKind.INVALID and exc.status is None:  # options the provider refuses
            raise ApiError(400, f"provider {id!r}: {exc.message}", provider=id) from None
        raise from_agent_error(exc) from exc


@router.get("/provider/{id}/models", tags=["provider"], summary="The models a provider offers (asked of it)", dependencies=ONCE)
async def models(
    id: str, ctx: Ctx,
    agent_id: str | None = Query(default=None, description="ask at this agent's endpoint (its base_url)"),
) -> list[ModelOut]:
    """Asked of the provider's own endpoint with the stored key — the Anthropic API, an
    OpenAI-compatible ``/models``, Ollama's ``/api/tags`` — at its default (or environment)
    address, or at the address of the agent ``agent_id``. 502 when the provider cannot be
    reached or refuses, 504 when it is too slow."""
    return await ctx.pool.run(_models, ctx, id, agent_id)


@router.get("/provider/{id}/models/{model:path}", tags=["provider"], summary="One model a provider offers", dependencies=ONCE)
async def model(
    id: str, model: str, ctx: Ctx,
    agent_id: str | None = Query(default=None, description="ask at this agent's endpoint (its base_url)"),
) -> ModelOut:
    """As ``GET /provider/{id}/models``, for one model id; 404 when the provider does not offer it."""
    if not model or model.endswith("/"):  # a trailing slash, which the {model:path} takes in (MethodMiddleware's 404)
        path = f"/provider/{id}/models/{model}"
        raise ApiError(404, f"no route GET {path}; paths take no trailing slash: GET {path.rstrip('/')} is a route; "
                            "see GET /openapi.json for the routes")
    offered = await ctx.pool.run(_models, ctx, id, agent_id)
    for m in offered:
        if m.id == model:
            return m
    some = ", ".join(m.id for m in offered[:20]) or "none"
    raise ApiError(404, f"provider {id!r} does not offer model {model!r}; it offers: {some}")
