"""Keeping secrets in: every provider key the server knows is cut out of text that leaves it.

The secrets are the keys in the auth store, the provider keys in the server's environment
(``ANTHROPIC_API_KEY``...) and the server's own bearer token. They are replaced by
``[redacted]`` in every response body and SSE event (:class:`RedactMiddleware`), in what
the store writes (messages, runs), and in every log record made while a server runs
(:func:`redact_logs`). This matters most for text the server does not write itself: a
provider that refuses a key often repeats it (``Incorrect API key provided: sk-...``), and
that text travels in errors, fleet results, run records and stream events.

Example:
    >>> r = Redactor(["sk-secret-1234"])
    >>> r.text("Incorrect API key provided: sk-secret-1234")
    'Incorrect API key provided: [redacted]'
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "MASK", "MIN_SECRET_LENGTH", "SECRET_ALPHABET", "RedactMiddleware", "Redactor", "environment_secrets",
    "header_secrets", "masked_headers", "redact_logs",
]

MASK = "[redacted]"
"""What a secret is replaced with."""

MIN_SECRET_LENGTH = 8
"""Shorter values are not treated as secrets: masking every ``"test"`` in every answer
would garble responses, and no provider issues keys that short."""

SECRET_ALPHABET = r"[A-Za-z0-9._~+/=-]"
"""The characters of a key (as issued by every provider; the auth store refuses others).

With at least one letter other than ``e``, such a key can only match inside a JSON string,
never across JSON syntax or a number, so masking it keeps every answer valid JSON."""

_REDACTABLE = re.compile(rf"{SECRET_ALPHABET}{{{MIN_SECRET_LENGTH},}}")
_LETTER = re.compile(r"[A-DF-Za-df-z]")

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET)$")


def environment_secrets(names: Iterable[str]) -> list[str]:
    """The values of the environment variables among ``names`` that hold secrets (their
    names end in KEY, TOKEN or SECRET)."""
    return [os.environ[n] for n in names if _SECRET_NAME.search(n) and os.environ.get(n)]


_CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|password|cookie|signature", re.IGNORECASE)


def header_secrets(options: Mapping[str, Any]) -> list[str]:
    """The values of the ``headers`` of a provider's ``options`` that carry credentials
    (``Authorization``, ``X-Api-Key``, ``Cookie``...: names with auth, key, token, secret,
    password, cookie or signature), to mask wherever text leaves the server: each value and
    each word of it (the token of ``"Bearer sk-..."``). Other header values are masked in
    the agent's own answers only (:func:`masked_headers`): masking ``application/json``
    everywhere would garble answers."""
    headers = options.get("headers")
    if not isinstance(headers, Mapping):
        return []
    values = [v for k, v in headers.items() if isinstance(v, str) and _CREDENTIAL_HEADER.search(str(k))]
    return [*values, *(word for v in values for word in v.split())]


def masked_headers(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as an answer shows them: the ``headers`` keep their names, every value
    is :data:`MASK` (the stored options keep the values)."""
    headers = options.get("headers")
    if not isinstance(headers, Mapping) or not headers:
        return options
    return {**options, "headers": dict.fromkeys(headers, MASK)}


class Redactor:
    """A set of secrets, and the functions that cut them out. Thread-safe; secrets are
    only ever added (a deleted key may still sit in old text).

    Args:
        secrets: the initial secrets.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._forms: tuple[str, ...] = ()
        self._bytes: tuple[bytes, ...] = ()
        self.add(*secrets)

    def add(self, *secrets: str) -> None:
        """Redact ``secrets`` from now on; values that are not keys (see
        :data:`SECRET_ALPHABET` and :data:`MIN_SECRET_LENGTH`) are ignored."""
        # JSON writes these characters as they are, so one form covers raw text and JSON alike.
        fresh = {s for s in secrets if _REDACTABLE.fullmatch(s) and _LETTER.search(s)}
        with self._lock:  # readers take the tuples without the lock: each is replaced whole
            ordered = tuple(sorted({*self._forms, *fresh}, key=len, reverse=True))  # longer first: may hold a shorter
            self._bytes = tuple(f.encode() for f in ordered)
            self._forms = ordered

    @property
    def empty(self) -> bool:
        """True while there is nothing to redact."""
        return not self._forms

    def text(self, text: str) -> str:
        """``text`` with every secret masked."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def data(self, raw: bytes) -> bytes:
        """Encoded text (a response body) with every secret masked."""
        for form in self._bytes:
            if form in raw:
                raw = raw.replace(form, MASK.encode())
        return raw

    def value(self, value: Any) -> Any:
        """A JSON-like value with every secret masked in its strings."""
        if not self._forms:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


_TEXT_TYPES = (b"application/json", b"text/", b"application/problem+json")


class RedactMiddleware:
    """Masks the secrets of ``redactor`` in every JSON, text and event-stream response.

    A response with a ``Content-Length`` is buffered whole and its length fixed; a streamed
    one (SSE) is masked chunk by chunk — the server writes each event in one chunk, so a
    secret is never split.
    """

    def __init__(self, app: ASGIApp, redactor: Redactor) -> None:
        self.app = app
        self.redactor = redactor

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        buffered: list[bytes] = []
        mode = "pass"

        async def masking_send(message: Message) -> None:
            nonlocal start, mode
            if message["type"] == "http.response.start":
                if self.redactor.empty:  # (no secrets yet: nothing to read)
                    mode = "pass"
                    await send(message)
                    return
                headers = MutableHeaders(raw=list(message.get("headers", [])))
                kind = headers.get("content-type", "").encode()
                if not kind.startswith(_TEXT_TYPES):
                    mode = "pass"
                    await send(message)
                elif "content-length" in headers:
                    mode, start = "buffer", message
                else:
                    mode = "stream"
                    await send(message)
                return
            if message["type"] != "http.response.body" or mode == "pass":
                await send(message)
                return
            body = message.get("body", b"")
            if mode == "stream":
                await send({**message, "body": self.redactor.data(body)})
                return
            buffered.append(body)
            if message.get("more_body", False):
                return
            masked = self.redactor.data(b"".join(buffered))
            assert start is not None
            headers = MutableHeaders(raw=list(start.get("headers", [])))
            headers["content-length"] = str(len(masked))
            await send({**start, "headers": headers.raw})
            await send({"type": "http.response.body", "body": masked, "more_body": False})

        await self.app(scope, receive, masking_send)


# -- log records ----------------------------------------------------------------------------

_active: list[Redactor] = []
_active_lock = threading.Lock()
_previous_factory: Callable[..., logging.LogRecord] | None = None


def _mask(redactors: list[Redactor], text: str) -> str:
    for redactor in redactors:
        text = redactor.text(text)
    return text


def _masked_arg(redactors: list[Redactor], value: Any) -> Any:
    """``value`` as it was, unless its text holds a secret: then that text, masked. Formatters
    that read a record's arguments themselves (uvicorn's access log unpacks five and takes
    the last as an int) keep working, since a number's text never holds a key."""
    if isinstance(value, str):
        return _mask(redactors, value)
    if value is None or isinstance(value, int | float):
        return value
    text = str(value)
    masked = _mask(redactors, text)
    return value if masked == text else masked


def _mask_record(record: logging.LogRecord, redactors: list[Redactor]) -> None:
    try:
        message: str | None = record.getMessage()
    except Exception:  # a broken format string: logging reports it, with the message and arguments
        message = None
    if message is None or _mask(redactors, message) != message:
        # Mask the pieces, keeping the arguments' shape; a secret split across them, or hidden
        # in a repr the pieces' text does not show, leaves only the whole message, masked.
        record.msg = _masked_arg(redactors, record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_masked_arg(redactors, a) for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: _masked_arg(redactors, v) for k, v in record.args.items()}
        if message is not None:
            try:
                masked_pieces = record.getMessage()
            except Exception:
                masked_pieces = message
            if _mask(redactors, masked_pieces) != masked_pieces:
                record.msg, record.args = _mask(redactors, message), ()
    if record.exc_info and record.exc_info[1] is not None:
        text = record.exc_text or logging.Formatter().formatException(record.exc_info)
        masked = _mask(redactors, text)
        if masked != text:
            # The exception itself still holds the secret: no handler may render it again.
            record.exc_text, record.exc_info = masked, None
    if record.stack_info:
        record.stack_info = _mask(redactors, record.stack_info)


def _masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    factory = _previous_factory or logging.LogRecord  # read once: the last server may be stopping
    record = factory(*args, **kwargs)
    redactors = [r for r in _active if not r.empty]
    if redactors:
        _mask_record(record, redactors)
    return record


@contextmanager
def redact_logs(redactor: Redactor) -> Iterator[None]:
    """While inside, every log record made in this process (any logger: the server's, the
    library's, httpx's, the SDKs', uvicorn's access log) has ``redactor``'s secrets masked.

    The masking happens as the record is made (a log record factory), so it holds for every
    handler and formatter, including ones configured later. A record whose message holds a
    secret keeps its arguments' shape with each argument's text masked (formatters such as
    uvicorn's read them); its traceback text is masked, and an exception that quotes a
    secret is dropped from the record (``exc_info``), leaving only the masked text, so no
    handler can render it again. Text added through ``extra=`` is not masked. Nests, and
    several servers in one process each add their own."""
    global _previous_factory
    with _active_lock:
        if not _active:
            _previous_factory = logging.getLogRecordFactory()
            logging.setLogRecordFactory(_masked_record)
        _active.append(redactor)
    try:
        yield
    finally:
        with _active_lock:
            _active.remove(redactor)
            if not _active and logging.getLogRecordFactory() is _masked_record:
                assert _previous_factory is not None
                logging.setLogRecordFactory(_previous_factory)
