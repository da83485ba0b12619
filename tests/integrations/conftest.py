"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.postgres import postgres_server, postgres_url
from tests.support.store_fixtures import location, path

__all__ = ["location", "path", "postgres_server", "postgres_url", "spans"]

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Spans exported to memory by a tracer provider set globally for the test."""
    pytest.importorskip("opentelemetry.sdk", reason='needs opentelemetry-sdk: pip install -e ".[dev]"')
    from tests.support.otel import memory_spans

    with memory_spans() as exporter:
        yield exporter
