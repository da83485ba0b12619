"""Record model calls to a JSONL cassette once, then replay them offline.

Record by wrapping a real provider and running once::

    from wingman_actors.providers import RecordingProvider, new_provider
    provider = RecordingProvider(new_provider("anthropic", {...}), "tests/cassettes/run.jsonl")

Replay later, with no network::

    provider = new_provider("replay", {"cassette": "tests/cassettes/run.jsonl"})

Each cassette line is one call::

    {"version": 1, "key": "<InferenceRequest.fingerprint()>", "request": {...}, "response": {...}}

Calls are looked up by the request's fingerprint (a stable hash of the whole request). When
the same request was recorded several times, the answers replay in recorded order and the
last one repeats.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from ..core import InferenceRequest, InferenceResponse, StreamEvent
from ..errors import AgentError, ErrorKind
from ._base import InferenceStream, Provider, ProviderOptions, events_for_response

if TYPE_CHECKING:
    from ._aio import AsyncInferenceStream

__all__ = ["CASSETTE_VERSION", "RecordingProvider", "ReplayOptions", "ReplayProvider", "build_replay"]

CASSETTE_VERSION = 1

_HOW_TO_RECORD = (
    "to record it, wrap the real provider and run once: "
    'RecordingProvider(new_provider("anthropic", {...}), "path.jsonl")'
)


def _invalid(message: str, provider: str = "replay") -> AgentError:
    return AgentError(message, kind=ErrorKind.INVALID, provider=provider)


def _parse_line(path: Path, lineno: int, line: str) -> tuple[str, InferenceResponse]:
    where = f"cassette {str(path)!r} line {lineno}"
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _invalid(f"{where} is not valid JSON: {exc.msg} (column {exc.colno})") from exc
    if not isinstance(entry, dict):
        raise _invalid(f"{where} must be a JSON object, got {type(entry).__name__}")
    version = entry.get("version", CASSETTE_VERSION)
    if version != CASSETTE_VERSION:
        raise _invalid(
            f"{where} has cassette version {version!r}; this library reads version {CASSETTE_VERSION}"
        )
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        raise _invalid(f"{where} has no 'key' (the request fingerprint)")
    if "response" not in entry:
        raise _invalid(f"{where} has no 'response'")
    try:
        response = InferenceResponse.model_validate(entry["response"])
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'response'}: {e['msg']}" for e in exc.errors()
        )
        raise _invalid(f"{where} has an invalid 'response': {problems}") from None
    return key, response


def _load(path: Path) -> tuple[dict[str, list[InferenceResponse]], int]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _invalid(f"replay cassette {str(path)!r} does not exist; {_HOW_TO_RECORD}") from None
    except OSError as exc:
        raise _invalid(f"cannot read replay cassette {str(path)!r}: {exc}") from exc
    entries: dict[str, list[InferenceResponse]] = {}
    count = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, response = _parse_line(path, lineno, line)
        entries.setdefault(key, []).append(response)
        count += 1
    return entries, count


def _describe(request: InferenceRequest) -> str:
    last = request.messages[-1].text if request.messages else ""
    last = " ".join(last.split())
    if len(last) > 60:
        last = last[:57] + "..."
    return f"{len(request.messages)} message(s), last: {last!r}"


class ReplayProvider:
    """Answers each request with the response recorded for it in a JSONL cassette.

    The cassette is read once, when the provider is built. A request that was never
    recorded is an ``AgentError(invalid)`` saying how to record it. Thread-safe.

    Args:
        cassette: path of the JSONL file written by :class:`RecordingProvider`.
        model: the model name this provider reports (responses keep their recorded model).
        stream_chunk: characters per ``text_delta`` when streaming.
    """

    id: ClassVar[str] = "replay"
    per_request_model: ClassVar[bool] = True
    """A request's ``model`` is part of its key: a call recorded with it replays with it."""
    _heeds_cancel: ClassVar[bool] = True  # answers at once, from memory

    def __init__(
        self, cassette: str | os.PathLike[str], *, model: str = "replay", stream_chunk: int = 8
    ) -> None:
        if stream_chunk < 1:
            raise ValueError(f"stream_chunk must be >= 1, got {stream_chunk}")
        self.path = Path(cassette)
        self.model = model
        self.stream_chunk = stream_chunk
        self._entries, self._count = _load(self.path)
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many recorded calls the cassette holds."""
        return self._count

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        """Return the recorded response for ``request``."""
        return self._lookup(request)

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        """Stream the recorded response for ``request`` as deltas."""
        return InferenceStream(self._events(request))

    def _events(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        response = self._lookup(request)
        yield from events_for_response(self.id, response, self.stream_chunk)

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        """Return the recorded response for ``request`` (on the running loop: no thread)."""
        return self._lookup(request)

    def astream_inference(self, request: InferenceRequest) -> AsyncInferenceStream:
        """Stream the recorded response for ``request`` as deltas, on the running loop."""
        from ._aio import AsyncInferenceStream  # the async plumbing, loaded by async callers only

        return AsyncInferenceStream(self._aevents(request))

    async def _aevents(self, request: InferenceRequest) -> AsyncIterator[StreamEvent]:
        for event in self._events(request):
            yield event

    def _lookup(self, request: InferenceRequest) -> InferenceResponse:
        key = request.fingerprint()
        with self._lock:
            answers = self._entries.get(key)
            if not answers:
                raise _invalid(
                    f"no recorded answer for request {key} ({_describe(request)}) in cassette "
                    f"{str(self.path)!r}, which has {self._count} entr{'y' if self._count == 1 else 'ies'}; "
                    f"the request differs from every recorded one, or was never recorded; {_HOW_TO_RECORD}"
                )
            index = self._next.get(key, 0)
            self._next[key] = index + 1
            return answers[min(index, len(answers) - 1)]

    def close(self) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"<ReplayProvider cassette={str(self.path)!r} entries={self._count}>"


class RecordingProvider:
    """Wraps any provider and appends every (request, response) it answers to a cassette.

    Failed calls are not recorded. A stream is recorded once it has been consumed to its
    end. Appends are serialised with a lock and each line is flushed as it is written, so
    many sessions may share one recorder. Parent directories are created as needed.

    Example:
        >>> rec = RecordingProvider(new_provider("anthropic", {}), "cassettes/a.jsonl")  # doctest: +SKIP
    """

    id: ClassVar[str] = "recording"

    def __init__(self, inner: Provider, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.model = inner.model
        self.per_request_model: bool = bool(getattr(inner, "per_request_model", False))
        self._heeds_cancel = getattr(inner, "_heeds_cancel", False) is True  # as its inner provider
        self.path = Path(path)
        self._lock = threading.Lock()
        self.recorded = 0

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        """Delegate to the inner provider and record the answer."""
        response = self.inner.run_inference(request)
        self.record(request, response)
        return response

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        """Delegate to the inner provider; record the answer when the stream ends."""
        inner = self.inner.stream_inference(request)

        def events() -> Iterator[StreamEvent]:
            yield from inner
            try:
                response = inner.response
            except RuntimeError:  # the inner stream ended without a final message
                return
            self.record(request, response)

        return InferenceStream(events(), close=inner.close)

    def record(self, request: InferenceRequest, response: InferenceResponse) -> None:
        """Append one call to the cassette."""
        entry: dict[str, Any] = {
            "version": CASSETTE_VERSION,
            "key": request.fingerprint(),
            "request": request.model_dump(mode="json", exclude_none=True),
            "response": response.model_dump(mode="json", exclude_none=True),
        }
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
            self.recorded += 1

    def close(self) -> None:
        """Close the inner provider, if it can be closed."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"<RecordingProvider inner={self.inner!r} cassette={str(self.path)!r}>"


class ReplayOptions(ProviderOptions):
    """Options of ``new_provider("replay", {...})``."""

    cassette: str


def build_replay(options: dict[str, Any]) -> ReplayProvider:
    """Factory for the registry: ``{"cassette": "path.jsonl"}``, optionally ``model``."""
    if not options.get("cassette"):
        raise _invalid(
            "the replay provider needs a 'cassette' option naming a JSONL file recorded with "
            'RecordingProvider, e.g. new_provider("replay", {"cassette": "path.jsonl"})'
        )
    opts = ReplayOptions.parse("replay", options)
    return ReplayProvider(opts.cassette, model=opts.model or "replay")
