"""OpenTelemetry test helpers: a global tracer provider exporting to memory, and span look-ups.

Import only after ``pytest.importorskip("opentelemetry.sdk")``: this module needs the SDK.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from wingman_actors.integrations import otel


def reset_globals() -> None:
    """Forget the global tracer provider (OpenTelemetry lets a process set it once; this is
    what its own test utilities, opentelemetry-test-utils' reset_trace_globals, do)."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@contextlib.contextmanager
def memory_spans() -> Iterator[InMemorySpanExporter]:
    """A tracer provider exporting to memory, set globally as a user would, and unset after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reset_globals()
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        provider.shutdown()
        reset_globals()
        otel.capture_content(None)


def by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    """Finished spans grouped by name, in the order they ended."""
    out: dict[str, list[ReadableSpan]] = {}
    for s in finished:
        out.setdefault(s.name, []).append(s)
    return out


def parent_id(span: ReadableSpan) -> int | None:
    """The span id of ``span``'s parent (None for a root span)."""
    return span.parent.span_id if span.parent is not None else None


def span_id(span: Any) -> int:
    """The span id of a finished span or of a live one."""
    return int(span.context.span_id) if hasattr(span, "context") else int(span.get_span_context().span_id)
