"""``wingman-actors ui --store PATH [--port N]``: the run viewer over a launcher's run store.

The same page as the server's ``/ui/``, answered from a run store (a SQLite file, or a
``postgresql://`` URL: the store several processes or servers share) instead of the
server's database: the formations that have runs in it (drawn from the shape each run
records), their runs, and each run's nodes, visits and outputs, refreshed while a run in
another process goes on (the journal is read every :data:`POLL_S` seconds).

It is read-only: the page shows no start, answer, resume or cancel control here. A run of
the launcher is resumed by the process that can build its formation (``wingman-actors
resume``); the page shows that command, with ``--answer`` for a suspended run.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from .._extras import require

__all__ = ["POLL_S", "add_ui_parser", "create_store_viewer", "ui_command"]

POLL_S = 0.25
"""How often the viewer reads the journal of a run that is running in another process."""

DEFAULT_UI_PORT = 8790


def add_ui_parser(subparsers: Any) -> Any:
    """Add the ``ui`` subcommand; returns its parser.

    Example:
        >>> parser = argparse.ArgumentParser(prog="wingman-actors")
        >>> _ = add_ui_parser(parser.add_subparsers(dest="command"))
        >>> parser.parse_args(["ui", "--store", "runs.sqlite", "--port", "9000"]).port
        9000
    """
    from ._cli import _port

    p = subparsers.add_parser(
        "ui", help="open the run viewer over a run store (formations, runs, nodes, outputs) in the browser",
        description="Serve the run viewer (the page `wingman-actors serve` has at /ui/) over a launcher's run "
                    "store, read-only: formations drawn as graphs, runs filtered by status and formation, each "
                    "run's nodes, visits and outputs, live while a run goes on.")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="the run store's SQLite file or postgresql:// URL (default: the default store in your "
                        "data directory)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=_port, default=DEFAULT_UI_PORT, help=f"port (default: {DEFAULT_UI_PORT}; 0: any free one)")
    p.add_argument("--token", default=None, help="require 'Authorization: Bearer TOKEN' (the page asks for it once)")
    p.set_defaults(func=ui_command)
    return p


def ui_command(args: argparse.Namespace) -> int:
    """Serve the viewer until interrupted; 2 for a missing store or a port in use."""
    with require("server", "wingman-actors ui"):
        import uvicorn
    from .._launcher.stores import StoreChoice
    from ..store import RunStore, StoreError
    from ._cli import ServeError, _is_loopback, _listen, _shown

    choice = StoreChoice.of(args.store)
    if not choice.exists():
        print(f"wingman-actors ui: error: {choice.missing()}", file=sys.stderr)
        return 2
    if choice.url is not None:  # a server that cannot be reached: one line now, not a failing page
        try:
            RunStore(choice.url, recover=False).close()
        except (StoreError, ImportError) as exc:
            one_line = " ".join(part.strip() for part in str(exc).splitlines())
            print(f"wingman-actors ui: error: {one_line}", file=sys.stderr)
            return 2
    try:
        sock = _listen(args.host, args.port)
    except ServeError as exc:
        print(f"wingman-actors ui: error: {exc}", file=sys.stderr)
        return 2
    if args.token is None and not _is_loopback(args.host):
        print(f"wingman-actors ui: warning: listening on {args.host} without a token; anyone who can reach it "
              "can read the runs' inputs and outputs. Pass --token.", file=sys.stderr)
    port = sock.getsockname()[1]
    app = create_store_viewer(choice.target, token=args.token)
    print(f"wingman-actors ui: http://{args.host}:{port}/ui/ (run store {_shown(choice.target)})", file=sys.stderr,
          flush=True)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=port, log_level="warning",
                                           timeout_graceful_shutdown=2))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


def create_store_viewer(path: str | Path, *, token: str | None = None) -> Any:
    """The viewer's ASGI app over the run store at ``path`` (a SQLite file or a
    ``postgresql://`` URL; opened when the app starts, without marking any run
    interrupted: a viewer changes nothing)."""
    from fastapi import FastAPI, Query, Request
    from starlette.responses import JSONResponse, Response, StreamingResponse

    from ..store import RunStore, UnknownRunError
    from ..store._values import POSTGRES_SCHEMES
    from ._cli import _shown
    from ._errors import ApiError
    from ._guards import OriginHostMiddleware
    from ._middleware import JsonBodyMiddleware, TokenMiddleware
    from ._routes_viewer import SSE_HEADERS, VIEWER_STATUSES, check_status
    from ._sse import encode
    from ._threads import WorkerPool
    from ._ui_page import page_router
    from ._viewer import graph_document, run_view

    location: str | Path = path if isinstance(path, str) and path.startswith(POSTGRES_SCHEMES) else Path(path)
    shown = _shown(str(location))  # (a URL's password is never shown)
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state["store"] = RunStore(location, recover=False)
        state["pool"] = WorkerPool(4).start()
        try:
            yield
        finally:
            state["pool"].stop()
            state["store"].close()

    app = FastAPI(title="wingman-actors run viewer", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    async def work(fn: Any, *args: Any) -> Any:
        return await state["pool"].run(fn, *args)

    def unknown(run_id: str) -> ApiError:
        return ApiError(404, f"no run {run_id!r} in the run store {shown}; GET /ui/api/runs lists them")

    @app.get("/ui/api/info")
    async def info() -> dict[str, Any]:
        return {"mode": "store", "actions": False, "store": shown, "statuses": list(VIEWER_STATUSES)}

    def formations() -> list[dict[str, Any]]:
        store: RunStore = state["store"]
        newest: dict[str, str] = {}
        for summary in store.runs():  # newest first
            newest.setdefault(summary.formation, summary.id)
        return [{"id": name, "name": name, "graph": graph_document(store.load(run_id).shape)}
                for name, run_id in newest.items()]

    @app.get("/ui/api/formations")
    async def list_formations() -> list[dict[str, Any]]:
        return await work(formations)  # type: ignore[no-any-return]

    def runs(status: str | None, formation_id: str | None, limit: int) -> list[dict[str, Any]]:
        found = [r for r in state["store"].runs(status) if formation_id is None or r.formation == formation_id]
        return [{"run_id": r.id, "formation_id": r.formation, "formation_name": r.formation, "status": r.status,
                 "created_at": r.created.isoformat(timespec="seconds"),
                 "finished_at": None if r.status == "running" else r.updated.isoformat(timespec="seconds"),
                 "duration_s": None} for r in found[:limit]]

    @app.get("/ui/api/runs")
    async def list_runs(status: str | None = Query(default=None), formation_id: str | None = Query(default=None),
                        limit: int = Query(default=100, ge=1, le=1000)) -> list[dict[str, Any]]:
        check_status(status)
        return await work(runs, status, formation_id, limit)  # type: ignore[no-any-return]

    def view(run_id: str) -> dict[str, Any]:
        try:
            doc = run_view(state["store"], run_id)
        except UnknownRunError:
            raise unknown(run_id) from None
        command = ["wingman-actors", "resume", run_id, "--store", shown]
        if not doc["source"]:
            command += ["--formation", "FILE"]
        doc.update(formation_id=doc["formation"], formation_name=doc["formation"],
                   resume=shlex.join(command) if doc["resumable"] else None)
        return doc

    @app.get("/ui/api/runs/{run_id}")
    async def get_run(run_id: str) -> dict[str, Any]:
        return await work(view, run_id)  # type: ignore[no-any-return]

    def mark(run_id: str) -> tuple[str, int]:
        journal = state["store"].load(run_id)
        return journal.run.status, len(journal.entries)

    @app.get("/ui/api/runs/{run_id}/stream")
    async def stream(run_id: str) -> Response:
        try:
            last = await work(mark, run_id)
        except UnknownRunError:
            raise unknown(run_id) from None

        async def body() -> AsyncIterator[bytes]:
            seen = last
            while seen[0] == "running":
                await asyncio.sleep(POLL_S)
                now = await work(mark, run_id)
                if now != seen:
                    seen = now
                    yield encode("refresh", {"run_id": run_id, "status": now[0]})
            yield encode("end", {"run_id": run_id})

        return StreamingResponse(body(), media_type="text/event-stream", headers=SSE_HEADERS)

    app.include_router(page_router())
    app.add_middleware(JsonBodyMiddleware)
    if token is not None:
        app.add_middleware(TokenMiddleware, token=token)
    app.add_middleware(OriginHostMiddleware)
    return app
