"""Fixtures for integration tests: real tools, isolated caches."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _isolated_caches(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """No test reads or fills the user's real caches or picks up their settings."""
    home = tmp_path_factory.mktemp("cache-home")
    monkeypatch.setenv("PIPELINE_CACHE_HOME", str(home))
    for var in (
        "CCACHE_DIR",
        "PIPELINE_MATRIX",
        "PIPELINE_RESOLVED",
        "PIPELINE_ROCM_VERSION",
        "PIPELINE_ROCM_INDEX_URL",
        "PIPELINE_NOW",
        "GITHUB_ACTIONS",
        "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY",
        "CCACHE_CONFIGPATH",
        "PIPELINE_DOWNLOAD_CACHE",
        "PIPELINE_TOOLCHAIN_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    yield
