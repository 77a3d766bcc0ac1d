"""Fixtures for integration tests: real tools, isolated caches."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads or fills the user's real caches or picks up their settings."""
    home = tmp_path_factory.mktemp("cache-home")
    monkeypatch.setenv("PIPELINE_CACHE_HOME", str(home))
    for var in ("CCACHE_DIR", "PIPELINE_MATRIX", "PIPELINE_RESOLVED", "PIPELINE_ROCM_VERSION",
                "PIPELINE_ROCM_INDEX_URL", "PIPELINE_NOW", "GITHUB_ACTIONS", "GITHUB_OUTPUT",
                "GITHUB_STEP_SUMMARY", "CCACHE_CONFIGPATH",
                "PIPELINE_DOWNLOAD_CACHE", "PIPELINE_TOOLCHAIN_DIR"):
        monkeypatch.delenv(var, raising=False)
    yield


def run_pipeline(
    args: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline ARGS`` in a subprocess, as a user would run it."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"pipeline {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def build_leg(ws: Path, leg: str, cache: Path, *extra: str) -> dict:
    """Build ``leg`` of ``ws/matrix.toml`` from ``ws/project`` into ``ws/out``; return its record.

    The layout every leg test uses: the project and the output folder side by
    side in one workspace, the cache outside it.
    """
    import json

    proc = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "build", leg, "--source", str(ws / "project"),
         "--out", str(ws / "out"), "--cache-dir", str(cache), "--no-bundle", *extra],
        check=True,
    )
    assert f"{leg}: success" in proc.stdout
    return json.loads((ws / "out" / leg / "record.json").read_text())  # type: ignore[no-any-return]
