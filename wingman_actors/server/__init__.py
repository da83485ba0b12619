"""The HTTP server: agents, sessions, fleets and formations over HTTP, persisted in SQLite.

Start it with ``wingman-actors serve``, or build the ASGI app yourself::

    from wingman_actors.server import ServerConfig, create_app
    app = create_app(ServerConfig(db_path="wingman.db", token="s3cret"))

Needs the ``server`` extra: ``pip install "wingman-actors[server]"``.

Formation declarations name Python callables registered with :func:`function` and
:func:`predicate` in modules loaded at start (``--functions my.module``).
"""

from .._extras import require

# Every module of the server imports FastAPI, Starlette or python-ulid, and the /docs pages
# serve fastapi-offline's assets: without the extra, importing any of it is one line naming it.
with require("server", "the HTTP server"):
    import fastapi_offline  # noqa: F401  (checked here, not when /docs is first opened)

    from ._app import create_app
    from ._config import ServerConfig
    from ._functions import FunctionRegistry, function, predicate
    from ._store import Store

__all__ = ["FunctionRegistry", "ServerConfig", "Store", "create_app", "function", "predicate"]
