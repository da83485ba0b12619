"""Fixtures of the agent tests: ``store``, a SQLite run store on a temporary file (at
``path``), closed after the test."""

from tests.support.store_fixtures import path, store

__all__ = ["path", "store"]  # fixtures
