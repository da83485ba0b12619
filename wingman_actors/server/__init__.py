"""The HTTP server: agents, sessions, fleets and formations over HTTP, persisted in SQLite.

Start it with ``wingman-actors serve``, or build the ASGI app yourself::

    from wingman_actors.server import ServerConfig, create_app
    app = create_app(ServerConfig(db_path="wingman.db", token="s3cret"))

Formation declarations name Python callables registered with :func:`function` and
:func:`predicate` in modules loaded at start (``--functions my.module``).
"""

from ._app import create_app
from ._config import ServerConfig
from ._functions import FunctionRegistry, function, predicate
from ._store import Store

__all__ = ["FunctionRegistry", "ServerConfig", "Store", "create_app", "function", "predicate"]
