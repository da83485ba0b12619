"""Optional libraries and the extras that bring them.

``pip install wingman-actors`` installs the core (pykka, networkx, pydantic, httpx and
httpx-sse); every other library belongs to an extra and is imported only where it is used,
inside :func:`require`, so that a missing one is a one-line error naming the extra::

    with require("pdf", "the budget formation"):
        from pypdf import PdfReader

raises, without pypdf, ``MissingExtraError: the budget formation needs the 'pdf' extra:
pip install "wingman-actors[pdf]"``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .errors import MissingExtraError

__all__ = ["EXTRAS", "require"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "anthropic": ("anthropic",),
    "cli": ("rich", "platformdirs"),
    "pdf": ("pypdf",),
    "server": ("fastapi", "starlette", "uvicorn", "fastapi_offline", "ulid"),
    "web": ("html2text",),
    "skills": ("frontmatter", "yaml"),
    "mcp": ("mcp", "mcp_types", "httpx2", "jsonschema"),  # mcp_types and httpx2: the SDK's own, imported directly
    "otel": ("opentelemetry",),
    "ray": ("ray",),
    "postgres": ("psycopg",),
    "aiohttp": ("aiohttp", "httpx_aiohttp"),
}
"""Each extra of the distribution (pyproject.toml's optional dependencies) and the
top-level modules it installs."""


@contextlib.contextmanager
def require(extra: str, what: str) -> Iterator[None]:
    """Import optional libraries inside this block: when one of ``extra``'s modules is
    missing, raise :class:`~wingman_actors.errors.MissingExtraError` naming the extra.

    A ``ModuleNotFoundError`` for any other module (a broken install of the library
    itself) goes through unchanged, so it is not misreported as a missing extra.

    Args:
        extra: the extra that installs the libraries (a key of :data:`EXTRAS`).
        what: the feature that needs them, as the message's subject
            (``"the anthropic provider"``).
    """
    try:
        yield
    except MissingExtraError:
        raise  # a nested require() already named the extra
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in EXTRAS[extra]:
            raise
        raise MissingExtraError(extra, what, exc.name) from exc
