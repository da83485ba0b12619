"""``wingman-actors ui --store PATH [--port N]``: the run viewer over a launcher's run store.

The same page as the server's ``/ui/``, answered from a run store (a SQLite file, or a
``postgresql://`` URL: the store several processes or servers share) instead of the
server's database: the formations that have runs in it (drawn from the shape each run
records), their runs, and each run's nodes, visits and outputs, refreshed while a run in
another process goes on (the journal is read every :data:`POLL_S` seconds).

It acts where it can build a run's formation (:mod:`._viewer_runs`): a run that records its
formation file (``wingman-actors run`` records it) is resumed, or its interrupt answered, in
this process, journalled into the same store and followed live as the server's page follows
its runs; a run of a recorded file, or of a file given with ``--formation FILE``, is
started from the page; a run going on here is cancelled from it, and a run that another
live process runs is asked to stop through the store (``RunStore.request_cancel``: its
process cancels it within a second, and the page follows it to ``cancelled``); a run that
records no file (started from Python) shows the ``wingman-actors resume ... --formation
FILE`` command instead, unless a ``--formation`` file builds a formation of its name.
The action routes (:mod:`._viewer_actions`) keep the server's cross-site rules: JSON
bodies only, the page's own origin, the token when one is set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._extras import require

if TYPE_CHECKING:
    from .._launcher.providers import ProviderChoice
    from ..store import RunStore, StoreError

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
                    "store: formations drawn as graphs, runs filtered by status and formation, each run's nodes, "
                    "visits and outputs, live while a run goes on; and start, resume, answer and cancel runs "
                    "whose formation file the store records (or given with --formation), in this process.")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="the run store's SQLite file or postgresql:// URL (default: the default store in your "
                        "data directory)")
    p.add_argument("--formation", action="append", metavar="FILE", dest="formation_files", default=None,
                   help="a formation file (or module name) to start runs of from the page, besides the files the "
                        "store's runs record; it also resumes the runs of its formation that record no file "
                        "(started from Python); repeatable")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="an option for the formation files' build() (JSON value, else text), as `run --param`; "
                        "repeatable")
    p.add_argument("--provider", metavar="ID", help="the provider of the runs started or resumed here (default: as "
                                                   "`run` chooses it: WINGMAN_PROVIDER, else the file's sample replies)")
    p.add_argument("--model", metavar="M", help="the provider's model")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=_port, default=DEFAULT_UI_PORT, help=f"port (default: {DEFAULT_UI_PORT}; 0: any free one)")
    p.add_argument("--token", default=None, help="require 'Authorization: Bearer TOKEN' (the page asks for it once)")
    p.set_defaults(func=ui_command)
    return p


def ui_command(args: argparse.Namespace) -> int:
    """Serve the viewer until interrupted; 2 for a missing store or a port in use."""
    with require("server", "wingman-actors ui"):
        import uvicorn
    from .._launcher.errors import UsageError
    from .._launcher.stores import StoreChoice
    from ..errors import FormationSetupError
    from ..store import RunStore, StoreError
    from ._cli import ServeError, _is_loopback, _listen, _shown

    choice = StoreChoice.of(args.store)
    if not choice.exists():
        print(f"wingman-actors ui: error: {choice.missing()}", file=sys.stderr)
        return 2
    # a file that is no run store, or a server that cannot be reached: one line now, not a failing start
    problem: Exception | None
    try:
        problem = _unreadable(RunStore(choice.target))  # opened as the viewer opens it (its recovery reads)
    except (StoreError, ImportError) as exc:
        problem = exc
    if problem is not None:
        one_line = " ".join(part.strip() for part in str(problem).splitlines())
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
    try:
        setup = _setup(args)
    except (UsageError, FormationSetupError) as exc:
        sock.close()
        print(f"wingman-actors ui: error: {exc}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    app = create_store_viewer(choice.target, token=args.token, **setup)
    print(f"wingman-actors ui: http://{args.host}:{port}/ui/ (run store {_shown(choice.target)})", file=sys.stderr,
          flush=True)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=port, log_level="warning",
                                           timeout_graceful_shutdown=2))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


def _unreadable(store: RunStore) -> StoreError | None:
    """Why ``store`` cannot be read (None when it can): its runs are read, as ``runs`` reads
    them, so a damaged file says so before the viewer serves; a read's error is the one
    told, not the failed writes its close then reports."""
    from ..store import StoreError

    problem: StoreError | None = None
    try:
        store.runs()
    except StoreError as exc:
        problem = exc
    finally:
        try:
            store.close()
        except StoreError as exc:
            problem = problem or exc
    return problem


def _setup(args: argparse.Namespace) -> dict[str, Any]:
    """What ``create_store_viewer`` takes from the flags; each ``--formation`` file is loaded
    and built now, so a bad one is an error before the viewer serves."""
    from .._launcher.loading import load_module
    from .._launcher.providers import choose_provider, parse_assignments

    params = parse_assignments(args.param or (), "--param")
    provider = choose_provider(args.provider, args.model, (), os.environ)
    files = list(dict.fromkeys(args.formation_files or ()))
    for file in files:
        load_module(file).build(None, params)
    return {"formations": files, "params": params, "provider": provider}


def create_store_viewer(path: str | Path, *, token: str | None = None, formations: Sequence[str] = (),
                        params: Mapping[str, Any] | None = None, provider: ProviderChoice | None = None) -> Any:
    """The viewer's ASGI app over the run store at ``path`` (a SQLite file or a
    ``postgresql://`` URL, opened when the app starts).

    Args:
        path: the run store.
        token: require ``Authorization: Bearer TOKEN`` on the data and action routes.
        formations: formation files (or module names) to offer besides the files the
            store's runs record (``ui --formation``).
        params: options for the files' ``build()`` (``ui --param``).
        provider: the provider of the runs started or resumed here (``ui --provider``).
    """
    from fastapi import FastAPI, Query, Request
    from fastapi.exceptions import RequestValidationError
    from starlette.responses import JSONResponse, Response, StreamingResponse

    from .._launcher.run_show import load_journal
    from ..formation.events import FormationEvent
    from ..store import RunStore, SerializationError, UnknownRunError
    from ..store._values import POSTGRES_SCHEMES
    from ._app import validation_error
    from ._cli import _shown
    from ._deps import ONCE, JSONBody
    from ._errors import ApiError
    from ._guards import OriginHostMiddleware
    from ._middleware import JsonBodyMiddleware, MethodMiddleware, TokenMiddleware
    from ._routes_viewer import SSE_HEADERS, VIEWER_STATUSES, check_status
    from ._run_outcome import event_dict
    from ._sse import encode
    from ._threads import WorkerPool
    from ._ui_page import page_router
    from ._viewer import journal_graph, run_view
    from ._viewer_actions import StoreActions, actions_router
    from ._viewer_runs import UiRuns

    location: str | Path = path if isinstance(path, str) and path.startswith(POSTGRES_SCHEMES) else Path(path)
    shown = _shown(str(location))  # (a URL's password is never shown)
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = state["store"] = RunStore(location)  # (runs whose process died are marked interrupted)
        runs = state["runs"] = UiRuns(store, params, provider)
        state["actions"] = StoreActions(store, runs, shown)
        state["pool"] = WorkerPool(4).start()
        try:
            for file in formations:
                await state["pool"].run(runs.offer, file)
            yield
        finally:
            await state["pool"].run(runs.stop)
            state["pool"].stop()
            store.close()

    app = FastAPI(title="wingman-actors run viewer", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None, default_response_class=JSONBody)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        error = validation_error(exc.errors())  # {"error": ..., "fields": [...]}, as the server answers
        return JSONResponse(error.body(), status_code=error.status)

    async def work(fn: Any, *args: Any) -> Any:
        return await state["pool"].run(fn, *args)

    def unknown(run_id: str) -> ApiError:
        return ApiError(404, f"no run {run_id!r} in the run store {shown}; GET /ui/api/runs lists them")

    @app.get("/ui/api/info")
    async def info() -> dict[str, Any]:
        return {"mode": "store", "actions": True, "store": shown, "statuses": list(VIEWER_STATUSES)}

    def listed() -> list[dict[str, Any]]:
        store: RunStore = state["store"]
        actions: StoreActions = state["actions"]
        found: dict[str, dict[str, Any]] = {}
        for summary in reversed(store.runs()):  # newest first: a formation is drawn as its newest run recorded it
            if summary.formation not in found:
                try:
                    journal = load_journal(store, summary.id)
                except SerializationError:  # its values' classes do not import here: an older run may draw it
                    continue
                found[summary.formation] = {"id": summary.formation, "name": summary.formation,
                                            "graph": journal_graph(store, journal)}
        for offered in state["runs"].offered():  # --formation files, and files loaded since: as they build it
            found.setdefault(offered.name, {"id": offered.name, "name": offered.name})["graph"] = offered.graph
        files = actions.files()
        for entry in found.values():
            entry["file"] = files.get(entry["name"])
        return list(found.values())

    @app.get("/ui/api/formations")
    async def list_formations() -> list[dict[str, Any]]:
        """``[{"id", "name", "graph", "file"}]``: ``file`` builds it here (None: runs of it
        cannot be started here)."""
        return await work(listed)  # type: ignore[no-any-return]

    def runs(status: str | None, formation_id: str | None, limit: int) -> list[dict[str, Any]]:
        found = [r for r in reversed(state["store"].runs(status))  # newest first, as the server lists them
                 if formation_id is None or r.formation == formation_id]
        return [{"run_id": r.id, "formation_id": r.formation, "formation_name": r.formation, "status": r.status,
                 "created_at": r.created.isoformat(timespec="seconds"),
                 "finished_at": None if r.status == "running" else r.updated.isoformat(timespec="seconds"),
                 "duration_s": None} for r in found[:limit]]

    @app.get("/ui/api/runs", dependencies=ONCE)
    async def list_runs(status: str | None = Query(default=None), formation_id: str | None = Query(default=None),
                        limit: int = Query(default=100, ge=1, le=1000)) -> list[dict[str, Any]]:
        check_status(status)
        return await work(runs, status, formation_id, limit)  # type: ignore[no-any-return]

    def view(run_id: str) -> dict[str, Any]:
        store: RunStore = state["store"]
        ui: UiRuns = state["runs"]
        try:
            doc = run_view(store, run_id, ui.traces(run_id))
            if doc["status"] == "running" and not ui.runs_here(run_id) and store.mark_interrupted():
                doc = run_view(store, run_id)  # its process had died
            record = store.get(run_id)
        except UnknownRunError:
            raise unknown(run_id) from None
        except SerializationError as exc:  # a value of a class that does not import in this process
            raise ApiError(409, f"run {run_id} cannot be shown here: {exc}", kind="class", run_id=run_id) from None
        doc.update(formation_id=doc["formation"], formation_name=doc["formation"])
        state["actions"].controls(doc, record)
        return doc

    @app.get("/ui/api/runs/{run_id}")
    async def get_run(run_id: str) -> dict[str, Any]:
        return await work(view, run_id)  # type: ignore[no-any-return]

    def mark(run_id: str) -> tuple[str, int]:
        journal = state["store"].load(run_id)
        return journal.run.status, len(journal.entries)

    @app.get("/ui/api/runs/{run_id}/stream")
    async def stream(run_id: str) -> Response:
        """SSE: a run this viewer runs (or ran lately): its events, as the server sends
        them, then ``end``; a run of another process: ``refresh`` each time its journal
        changes, then ``end`` once it is no longer running."""
        try:
            last = await work(mark, run_id)
        except UnknownRunError:
            raise unknown(run_id) from None
        log = state["runs"].log(run_id)
        if log is not None:
            return StreamingResponse(live(run_id, log), media_type="text/event-stream", headers=SSE_HEADERS)

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

    async def live(run_id: str, log: Any) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[FormationEvent | None] = asyncio.Queue()

        def listener(event: FormationEvent | None) -> None:
            with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody listens any more
                loop.call_soon_threadsafe(queue.put_nowait, event)

        history, ended = log.listen(listener)
        try:
            for event in history:
                yield encode(event.type.value, event_dict(event, run_id, False, ()))
            while not ended and (event := await queue.get()) is not None:
                yield encode(event.type.value, event_dict(event, run_id, False, ()))
            await work(state["runs"].settle, run_id)  # its journal says how it ended
            yield encode("end", {"run_id": run_id})
        finally:
            log.unlisten(listener)

    app.include_router(actions_router(lambda: state["actions"], work))
    app.include_router(page_router())
    # Added innermost first: as on the server, the path and method come first (404, or 405
    # with Allow, in the {"error"} shape), then the Host and Origin, the token, the JSON body.
    app.add_middleware(JsonBodyMiddleware)
    if token is not None:
        app.add_middleware(TokenMiddleware, token=token)
    app.add_middleware(OriginHostMiddleware)
    app.add_middleware(MethodMiddleware, routes=app.router.routes)
    return app
