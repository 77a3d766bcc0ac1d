"""Running the pipeline as a user does (``python -m pipeline`` in a subprocess) and building one leg."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def no_cuda_env(cache: Path) -> dict[str, str]:
    """A cuda leg's environment from the pinned wheels alone: no CUDA_* variable, nothing CUDA on PATH; the
    wheels and the installed toolkit in ``cache`` (the test cache), where every run finds them at one path."""
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if "cuda" not in p.lower())
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA")}
    env.update(PATH=path, PYTHONPATH=str(ROOT), COLUMNS="200",
               PIPELINE_DOWNLOAD_CACHE=str(cache / "downloads"), PIPELINE_TOOLCHAIN_DIR=str(cache / "toolchains"))  # fmt: skip
    return env


def run_pipeline(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = False,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline ARGS`` in a subprocess, as a user would run it."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"pipeline {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def build_leg(ws: Path, leg: str, cache: Path, *extra: str, env: dict[str, str] | None = None) -> dict:
    """Build ``leg`` of ``ws/matrix.toml`` from ``ws/project`` into ``ws/out``; return its record.

    The layout every leg test uses: the project and the output folder side by
    side in one workspace, the cache outside it. ``env`` adds to the test's environment.
    """
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            leg,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(cache),
            "--no-bundle",
            *extra,
        ],
        env=env,
        check=True,
    )
    assert f"{leg}: success" in proc.stdout
    return json.loads((ws / "out" / leg / "record.json").read_text())  # type: ignore[no-any-return]
