"""Fixtures of the durable-run tests: a store on a temporary file, closed after the test,
and where a store lives on either backend (``location``: SQLite, PostgreSQL)."""

from tests.support.postgres import postgres_server, postgres_url
from tests.support.store_fixtures import location, path, store

__all__ = ["location", "path", "postgres_server", "postgres_url", "store"]
