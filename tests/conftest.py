"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.httpserver import LocalServer


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 with scripted routes (tests/support/httpserver.py)."""
    with LocalServer() as srv:
        yield srv
