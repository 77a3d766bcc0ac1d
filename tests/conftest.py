"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.support.httpserver import LocalServer


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 with scripted routes (tests/support/httpserver.py)."""
    with LocalServer() as srv:
        yield srv


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the selected tests share, prepared before any runs: under ``pytest -n`` any file may run first.

    - The sdist, when a selected module reads it (``READS_THE_SDIST``): unit tests start no pip.
    - The Debian roots a module needs (``DEBIAN_ROOTS``), made in the background: minutes of download
      and unpacking that overlap the tests before the ones that need them (tests/support/sid_root.py's
      ``prepare_in_background``). Only where a root can be made at all (root, mmdebstrap); elsewhere the
      tests that need one say why they cannot.
    """
    if session.config.option.collectonly:
        return
    modules = {getattr(item, "module", None) for item in session.items}
    if any(getattr(module, "READS_THE_SDIST", False) for module in modules):
        # Unit tests that read the real tree start no pip: under pytest -n no earlier file may have fetched it.
        from scripts.llama_sdist import e2e_cache_root, fetch_sdist

        try:
            fetch_sdist(e2e_cache_root())
        except AssertionError as exc:
            print(f"\nthe llama-cpp-python sdist could not be fetched; the tests that read it say so: {exc}")
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        return
    roots = [root for module in modules for root in getattr(module, "DEBIAN_ROOTS", ())]
    if roots:
        from tests.support.sid_root import prepare_in_background

        prepare_in_background(roots)
