"""Fixtures of the durable-run tests: a store on a temporary file, closed after the test."""

from tests.support.store_fixtures import path, store

__all__ = ["path", "store"]
