"""The FastAPI application: routes, error shapes, middleware, and the lifespan that opens
the database (and the run journal in it) and starts the worker threads.

Example:
    >>> from wingman_actors.server import ServerConfig, create_app
    >>> app = create_app(ServerConfig(db_path="/tmp/wingman-doc.db"))   # doctest: +SKIP
    >>> import uvicorn; uvicorn.run(app, host="127.0.0.1", port=8787)    # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from .. import __version__
from ..errors import AgentError
from ..providers import list_providers
from ..store import RunStore
from . import _routes_agents as routes_agents
from . import _routes_fleets as routes_fleets
from . import _routes_formations as routes_formations
from . import _routes_history as routes_history
from . import _routes_providers as routes_providers
from . import _routes_runs as routes_runs
from . import _routes_sessions as routes_sessions
from . import _routes_viewer as routes_viewer
from ._body import scrub
from ._config import ServerConfig
from ._context import ServerContext, agent_tool_names
from ._deps import JSONBody
from ._docs import install_docs
from ._errors import ApiError, from_agent_error
from ._functions import FunctionRegistry
from ._guards import JsonCORSMiddleware, OriginHostMiddleware
from ._journal import MaskedJournal, open_journal, run_store_secret
from ._middleware import (
    CatchAllMiddleware,
    JsonBodyMiddleware,
    MethodMiddleware,
    TimeoutMiddleware,
    TokenMiddleware,
)
from ._openapi import install_openapi
from ._recovery import recover_runs
from ._redact import RedactMiddleware, Redactor, environment_secrets, header_secrets, redact_logs
from ._store import Store
from ._threads import WorkerPool
from ._ui_page import page_router

__all__ = ["create_app", "validation_error"]

log = logging.getLogger("wingman_actors.server")

PRUNE_EVERY_S = 3600.0
"""How often a running server prunes finished runs' journals (``journal_retention``)."""

_TIMEOUT_GRACE_S = 2.0  # runs stop at the request timeout themselves; the middleware is the backstop

def freeze_startup_heap() -> None:
    """For ``wingman-actors serve``, whose process is the server's alone, just before it
    serves: move every object the process holds so far (imports, the app, its routes and
    models, ~100,000 objects) to the collector's permanent generation (``gc.freeze``), so
    the full collections a busy server makes skip them (they were most of each one). An
    app embedded in another program (:func:`create_app` under the program's own server)
    leaves that program's collector alone."""
    gc.freeze()


def _field(loc: Sequence[Any]) -> str:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path"):  # a query parameter is named as the body's fields are
        parts = parts[1:]
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def validation_error(errors: Sequence[Any]) -> ApiError:
    """400 for a request that failed validation, naming every field.

    Malformed JSON gets its own message; unknown fields are reported as such (a typo in a
    field name is the usual cause).
    """
    problems: list[str] = []
    fields: list[str] = []
    for e in errors:
        kind = e.get("type", "")
        if kind == "json_invalid":
            where = e.get("loc", ("body", 0))[-1]
            reason = (e.get("ctx") or {}).get("error", "invalid JSON")
            return ApiError(400, f"malformed JSON body: {reason} (at character {where}); send a JSON object")
        field = _field(e.get("loc", ()))
        if kind == "missing" and not field:
            problems.append("the request body is required: send a JSON object")
            fields.append("body")
            continue
        if kind == "extra_forbidden":
            message = "unknown field; remove it or check its spelling"
        elif kind in ("dict_type", "model_type", "model_attributes_type") and not field:
            message = "the request body must be a JSON object"
        else:
            message = str(e.get("msg", "invalid"))
        fields.append(field or "body")
        problems.append(f"{field or 'body'}: {message}")
    return ApiError(400, "invalid request: " + "; ".join(problems), fields=fields)


def _prune(journal: MaskedJournal, retention: float) -> None:
    pruned = journal.prune(retention)
    if pruned:
        log.info("pruned %d finished run(s) older than %g s from the run journal", pruned, retention)


async def _prune_every(interval: float, pool: WorkerPool, journal: MaskedJournal, retention: float) -> None:
    """Prune the journal every ``interval`` seconds (on a worker thread), until cancelled."""
    while True:
        await asyncio.sleep(interval)
        try:
            await pool.run(_prune, journal, retention)
        except Exception:  # a busy or failing database: say so, try again next time
            log.warning("pruning the run journal failed; retrying in %g s", interval, exc_info=True)


def create_app(config: ServerConfig | None = None) -> FastAPI:
    """Build the HTTP server's ASGI app.

    The database is opened (and migrated) and the worker threads started when the app
    starts (ASGI lifespan); both are closed when it stops. Function modules are imported
    now, so a bad ``--functions`` fails before the server listens.

    Args:
        config: the configuration (defaults: ``~/.local/share/wingman/wingman.db``, no token,
            the current directory as work root).

    Returns:
        The FastAPI application; serve it with uvicorn.
    """
    config = config or ServerConfig()
    functions = FunctionRegistry.from_modules(config.functions, entry_points=config.entry_points)
    redactor = Redactor(environment_secrets(name for meta in list_providers() for name in meta.env))
    if config.token is not None:
        redactor.add(config.token)
    secret = run_store_secret(config)
    if secret is not None:
        redactor.add(secret)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(config.database, redactor)
        try:
            # the run journal shares the database file (migration 5 made room for its tables), or
            # is the PostgreSQL store of --run-store; opening it marks the runs of a server that
            # died interrupted
            journal = MaskedJournal(open_journal(config), redactor)
        except BaseException:
            store.close()
            raise
        if config.run_store is None and isinstance(journal.store, RunStore):
            store.commit_with(journal.store)  # the journal is in the database file: records commit with its writes
        recover_runs(store, journal)
        retention = config.journal_retention
        if retention is not None:
            _prune(journal, retention)
        redactor.add(*store.auth_keys())
        for agent in store.list_agents():  # header values are secrets too (see _routes_agents)
            redactor.add(*header_secrets(agent.options))
        pool = WorkerPool(config.worker_threads).start()
        context = app.state.wingman = ServerContext(config, store, pool, functions, redactor, journal=journal)
        pruning = None if retention is None else asyncio.create_task(_prune_every(PRUNE_EVERY_S, pool, journal,
                                                                                  retention))
        try:
            with redact_logs(redactor):
                yield
        finally:
            if pruning is not None:
                pruning.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pruning
            context.flights.interrupt_all()  # resumable after the restart
            context.started.close()
            pool.stop()
            context.providers.close()
            context.mcp.close()
            store.commit_with(None)
            journal.close()
            store.close()

    app = FastAPI(
        title="wingman-actors",
        default_response_class=JSONBody,
        version=__version__,
        summary="Agents, sessions, fleets and formations over HTTP, persisted in SQLite.",
        description="Every error is `{\"error\": ...}`. POST, PUT and PATCH need `Content-Type: application/json`, "
                    "even with no body. Requests from other web origins or host names are refused.",
        lifespan=lifespan,
        docs_url=None,  # install_docs serves them with no CDN
        redoc_url=None,
        redirect_slashes=False,  # "/agents/" is a 404 (MethodMiddleware), never a redirect dropping a POST's body
    )
    install_openapi(app, config, agent_tool_names(config, functions), sorted(functions.functions),
                    sorted(functions.predicates))

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        error = validation_error(exc.errors())
        return JSONResponse(error.body(), status_code=error.status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 404 and exc.detail == "Not Found":
            message = f"no route {request.method} {request.url.path}; see GET /openapi.json for the routes"
        elif exc.status_code == 405:
            message = f"method {request.method} is not allowed on {request.url.path}"
        else:
            message = str(exc.detail)
        return JSONResponse({"error": scrub(message)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(AgentError)
    async def agent_error(request: Request, exc: AgentError) -> JSONResponse:
        error = from_agent_error(exc)
        return JSONResponse(error.body(), status_code=error.status)

    # Routes are matched in order, one by one: the runs' routes come first (the hot path), the docs' last
    routes_formations.add_run_route(app.router)  # the hottest, matched first and once (see add_run_route)
    for module in (routes_formations, routes_runs, routes_providers, routes_agents, routes_sessions, routes_fleets,
                   routes_history, routes_viewer):
        app.include_router(module.router)
    app.include_router(page_router())  # the run viewer's page, at /ui/
    install_docs(app)  # after the routes that serve runs

    # Added innermost first. A request meets, in order: CORS (when configured), the path and
    # method (404, or 405 with Allow), the Host and Origin checks, secret masking of the answer, the token,
    # the JSON body rules (its size among them), the timeout.
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(TimeoutMiddleware, timeout=config.request_timeout + _TIMEOUT_GRACE_S)
    app.add_middleware(JsonBodyMiddleware, max_bytes=config.max_body_bytes)
    if config.token is not None:
        app.add_middleware(TokenMiddleware, token=config.token)
    app.add_middleware(RedactMiddleware, redactor=redactor)  # outside the catch-all: its 500s may quote a key
    app.add_middleware(OriginHostMiddleware, allowed_hosts=config.allowed_hosts, allowed_origins=config.cors_origins)
    app.add_middleware(MethodMiddleware, routes=app.router.routes)
    if config.cors_origins:  # outermost: preflight requests carry no token
        app.add_middleware(
            JsonCORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["GET", "HEAD", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    return app
