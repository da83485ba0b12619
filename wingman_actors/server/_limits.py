"""The bounds the HTTP API puts on numbers in request bodies.

A value past its bound is a 400 naming the field and the bound, never a stored record
that later fails (a ``worker_count`` beyond 64 bits does not fit an SQLite integer; a
``concurrency`` of a million would start a million actor threads).
"""

from __future__ import annotations

__all__ = [
    "MAX_BACKOFF_S",
    "MAX_CONCURRENCY",
    "MAX_CONTEXT_BUDGET",
    "MAX_MCP_SERVERS",
    "MAX_NESTING",
    "MAX_RETRIES",
    "MAX_STEPS",
    "MAX_TASKS",
    "MAX_TIMEOUT_S",
    "MAX_VISITS",
    "MAX_WORKERS",
]

MAX_WORKERS = 100
"""Sessions at once in a fleet (``worker_count``) or a fleet node (``max_workers``); the
library's own automatic cap (``Fleet(max_workers=0)``) is the same."""

MAX_TASKS = 1000
"""Tasks in one fleet run."""

MAX_RETRIES = 100
"""A node's ``retries``."""

MAX_CONCURRENCY = 64
"""A node's ``concurrency`` (replicas, each an actor thread)."""

MAX_VISITS = 10_000
"""A node's ``max_visits`` (visits per run through a cycle)."""

MAX_TIMEOUT_S = 86_400.0
"""Any ``timeout`` in seconds (one day)."""

MAX_BACKOFF_S = 3_600.0
"""A node's ``backoff`` base in seconds (one hour)."""

MAX_NESTING = 32
"""How deep formations may nest formations (formation nodes and formation maps): a
formation that nests one that nests another is 2 deep. Far below the depth where a run's
nested calls would exhaust Python's recursion limit."""

MAX_STEPS = 1000
"""The most model calls with tools a stored agent's run may make (its ``max_steps``)."""

MAX_CONTEXT_BUDGET = 10_000_000
"""The largest ``context_budget`` (tokens) of a stored agent."""

MAX_MCP_SERVERS = 16
"""The most MCP servers one stored agent may list."""
