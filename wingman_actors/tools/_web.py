"""The ``webfetch`` tool: GET an http(s) URL and return it as readable text.

HTML is converted to Markdown-like text with ``html2text`` (the ``web`` extra, imported at the
first call); plain text, JSON, XML and other textual types come back as they are. Each call
uses its own short-lived ``httpx.Client``.
"""

from __future__ import annotations

from .._extras import require
from ..errors import ToolError
from ._base import FunctionTool, ToolContext

__all__ = ["MAX_BODY_BYTES", "html_to_text", "webfetch_tool"]

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 120.0
DEFAULT_MAX_CHARS = 50_000
MAX_BODY_BYTES = 5 * 1024 * 1024
USER_AGENT = "wingman-actors-webfetch/0.1 (+https://pypi.org/project/wingman-actors/)"

_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-yaml",
               "application/yaml", "application/x-ndjson", "application/ld+json")
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def html_to_text(html: str, base_url: str = "") -> str:
    """Convert an HTML document to readable Markdown-like text (links kept, images dropped).

    Args:
        html: the HTML source.
        base_url: the page's URL, to make relative links absolute.

    Returns:
        The text, without scripts, styles or tags.
    """
    with require("web", "the webfetch tool"):
        import html2text  # imported by the first page fetched: not by every program that imports the tools
    converter = html2text.HTML2Text(baseurl=base_url)
    converter.body_width = 0  # no hard wrapping
    converter.ignore_images = True
    converter.unicode_snob = True
    return str(converter.handle(html)).strip()


def _is_textual(content_type: str, body: bytes) -> bool:
    if content_type.startswith("text/") or content_type in _TEXT_TYPES:
        return True
    if content_type.endswith(("+json", "+xml")):
        return True
    if content_type and content_type != "application/octet-stream":
        return False
    return b"\0" not in body[:8192]


def _looks_like_html(content_type: str, text: str) -> bool:
    if content_type in _HTML_TYPES:
        return True
    if content_type not in ("", "application/octet-stream"):
        return False
    return text.lstrip()[:20].lower().startswith(("<!doctype html", "<html"))


def webfetch(ctx: ToolContext, url: str, timeout: float = DEFAULT_TIMEOUT, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Fetch a web page or file over http(s) and return its content as text.

    HTML pages are converted to readable Markdown-like text (links kept, scripts, styles
    and images dropped); plain text, JSON, XML and other text formats are returned as
    they are. Redirects are followed. Binary content (images, archives, PDFs) is refused.
    Error statuses (4xx, 5xx) and network failures are reported as errors. Output longer
    than `max_chars` is cut with a marker; at most 5 MB of the response is read.

    Args:
        url: the absolute http:// or https:// URL to fetch.
        timeout: seconds to wait for the server (default 30, at most 120).
        max_chars: the most characters of text to return (default 50000, at least 100).
    """
    if not 0 < timeout <= MAX_TIMEOUT:
        raise ToolError(f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, got {timeout:g}", tool="webfetch")
    if max_chars < 100:
        raise ToolError(f"max_chars must be at least 100, got {max_chars}", tool="webfetch")
    with require("web", "the webfetch tool"):
        import html2text  # noqa: F401  (fail before fetching, naming the extra, when it is missing)
    import httpx  # at the first call: importing the tools (and so a formation) stays light
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ToolError(f"invalid URL {url!r}: {exc}", tool="webfetch") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ToolError(
            f"cannot fetch {url!r}: only absolute http:// and https:// URLs are supported", tool="webfetch"
        )
    if ctx.token is not None:
        ctx.token.check()
    body = bytearray()
    capped = False
    try:
        with httpx.Client(
            follow_redirects=True, timeout=timeout, headers={"user-agent": USER_AGENT, "accept": "*/*"}
        ) as client, client.stream("GET", parsed) as response:
            if not response.is_success:
                raise ToolError(
                    f"GET {response.url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip(),
                    tool="webfetch",
                )
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    del body[MAX_BODY_BYTES:]
                    capped = True
                    break
            final_url = str(response.url)
            redirected = bool(response.history)
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            encoding = response.charset_encoding or "utf-8"
    except httpx.TimeoutException as exc:
        raise ToolError(f"fetching {url} timed out after {timeout:g} s ({type(exc).__name__})", tool="webfetch") from exc
    except httpx.HTTPError as exc:
        raise ToolError(f"could not fetch {url}: {type(exc).__name__}: {exc}", tool="webfetch") from exc
    if not _is_textual(content_type, bytes(body)):
        raise ToolError(
            f"{final_url} has content type {content_type!r}, which is not text; webfetch only returns text",
            tool="webfetch",
        )
    try:
        text = body.decode(encoding, errors="replace")
    except LookupError:  # unknown charset name
        text = body.decode("utf-8", errors="replace")
    if _looks_like_html(content_type, text):
        text = html_to_text(text, final_url)
    notes = []
    if redirected:
        notes.append(f"[redirected to {final_url}]")
    if capped:
        notes.append(f"[the response is larger than {MAX_BODY_BYTES // (1024 * 1024)} MB; only the beginning was read]")
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[... {len(text) - max_chars} characters truncated ...]"
    return "\n".join([*notes, text]) if notes else text


webfetch_tool = FunctionTool(webfetch, name="webfetch")
"""The ``webfetch`` tool."""
